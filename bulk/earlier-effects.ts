import { kindsCascadedFrom, kindsStubbedBy, namedFields } from '../catalogue/liveness.js';
import { isStoredKind, KINDS, type StoredKind } from '../catalogue/record-kinds.js';
import type { OutboxAction } from '../sync/write.repository.js';
import type { BulkLine } from './bulk-line.parser.js';

/*
 * A bulk line that looks a record up (a delete, a link or line writer, a
 * purchase event's order) must find the stubs and cascades of the file's
 * earlier lines applied, as it would had the lines been sent one by one,
 * each after the one before had taken effect, whatever else writes to the
 * language meanwhile (docs/consistency.md, "A file's lines see the effects of
 * the lines before them"). This tells the batch when such a line comes after
 * a change of the file whose effects are queued for the applier and may make
 * a record of a kind the line looks up live (a stub) or not live (a cascade).
 */

/** A change left to the applier: `named`, the payload fields that carry a value; unknown, every field it could name. */
type PendingChange = { kind: string; action: OutboxAction; named?: ReadonlySet<string> | readonly string[] };

/** The kinds of record whose liveness a change's effects may change. */
function kindsAffectedBy(change: PendingChange): ReadonlySet<StoredKind> {
  if (!isStoredKind(change.kind)) return new Set();
  const named = change.named && (change.named instanceof Set ? change.named : new Set(change.named));
  if (change.action === 'upsert') return kindsStubbedBy(change.kind, named);
  if (change.action === 'delete') return kindsCascadedFrom(change.kind);
  // An assignment links two live records and stubs nothing.
  return new Set();
}

/** The kinds of record a line looks up before it is taken (a 404 when not live). */
function kindsLookedUpBy(line: BulkLine): readonly StoredKind[] {
  switch (line.type) {
    case 'delete':
      return [line.kind];
    case 'link':
      return ['product', line.link.kind];
    case 'line':
      return [line.parent];
    case 'write': {
      const required = KINDS[line.kind].requires;
      return required ? [required.kind] : [];
    }
  }
}

export class EarlierEffects {
  /** Kinds the batch's own queued changes may still stub or cascade to. */
  private readonly queued = new Set<StoredKind>();
  /** The same for the file's earlier batches' changes still pending, read once a batch needs it. */
  private earlier: Set<StoredKind> | undefined;

  /** @param loadPending the file's changes not applied yet (its earlier batches', and this one's). */
  constructor(private readonly loadPending: () => Promise<readonly PendingChange[]>) {}

  /** A change of this batch was left to the applier, with its payload when the batch has it. */
  queuedChange(kind: StoredKind, action: OutboxAction, payload?: Record<string, unknown>): void {
    const named = payload ? namedFields(payload) : undefined;
    for (const affected of kindsAffectedBy({ kind, action, named })) this.queued.add(affected);
  }

  /** Whether the line must wait until the file's queued changes are applied. */
  async mustWait(line: BulkLine): Promise<boolean> {
    const looked = kindsLookedUpBy(line);
    if (looked.length === 0) return false;
    if (looked.some((kind) => this.queued.has(kind))) return true;
    if (!this.earlier) {
      this.earlier = new Set();
      for (const change of await this.loadPending()) for (const kind of kindsAffectedBy(change)) this.earlier.add(kind);
    }
    const earlier = this.earlier;
    return looked.some((kind) => earlier.has(kind));
  }
}
