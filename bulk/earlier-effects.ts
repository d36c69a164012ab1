import { kindsCascadedFrom, kindsStubbedBy, type RecordRef, recordsStubbedBy } from '../catalogue/liveness.js';
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
 * the record it looks up live (a stub) or not live (a cascade).
 */

/** A pending change of the file's earlier batches: its kind, action and the payload fields that carry a value. */
export interface PendingChange {
  kind: string;
  action: OutboxAction;
  named: readonly string[];
}

/** The records a line looks up before it is taken (a 404 when not live). */
function recordsLookedUpBy(line: BulkLine): RecordRef[] {
  switch (line.type) {
    case 'delete':
      return [{ kind: line.kind, id: line.id }];
    case 'link':
      return [
        { kind: 'product', id: line.productId },
        { kind: line.link.kind, id: line.otherId },
      ];
    case 'line':
      return [{ kind: line.parent, id: line.parentId }];
    case 'write': {
      const required = KINDS[line.kind].requires;
      const id = required && (line.body as Record<string, unknown> | null)?.[required.field];
      return required && typeof id === 'string' ? [{ kind: required.kind, id }] : [];
    }
  }
}

const keyOf = (record: RecordRef) => `${record.kind}\u0000${record.id}`;

export class EarlierEffects {
  /** Records the batch's own queued writes stub if they do not exist. */
  private readonly stubbed = new Set<string>();
  /** Kinds the batch's own queued deletes may cascade to. */
  private readonly cascaded = new Set<StoredKind>();
  /** The kinds the file's earlier batches' pending changes may stub or cascade to, read once a batch needs them. */
  private earlier: { stubbed: Set<StoredKind>; cascaded: Set<StoredKind> } | undefined;

  /**
   * @param loadPending the file's changes not applied yet (its earlier batches', and this one's).
   * @param isLive whether the record is live now.
   */
  constructor(
    private readonly loadPending: () => Promise<readonly PendingChange[]>,
    private readonly isLive: (record: RecordRef) => Promise<boolean>,
  ) {}

  /** A write of this batch was left to the applier. */
  queuedWrite(kind: StoredKind, payload: Record<string, unknown>): void {
    for (const record of recordsStubbedBy(kind, payload)) this.stubbed.add(keyOf(record));
  }

  /** A delete of this batch was left to the applier. */
  queuedDelete(kind: StoredKind): void {
    for (const cascaded of kindsCascadedFrom(kind)) this.cascaded.add(cascaded);
  }

  /** Whether the line must wait until the file's queued changes are applied. */
  async mustWait(line: BulkLine): Promise<boolean> {
    const looked = recordsLookedUpBy(line);
    if (looked.length === 0) return false;
    if (looked.some((record) => this.cascaded.has(record.kind) || this.stubbed.has(keyOf(record)))) return true;
    const earlier = await this.earlierEffects();
    for (const record of looked) {
      if (earlier.cascaded.has(record.kind)) return true;
      // A stub only ever makes a record live: one that is live already is found either way.
      if (earlier.stubbed.has(record.kind) && !(await this.isLive(record))) return true;
    }
    return false;
  }

  private async earlierEffects() {
    if (this.earlier) return this.earlier;
    const earlier = { stubbed: new Set<StoredKind>(), cascaded: new Set<StoredKind>() };
    for (const change of await this.loadPending()) {
      if (!isStoredKind(change.kind)) continue;
      if (change.action === 'upsert') for (const kind of kindsStubbedBy(change.kind, new Set(change.named))) earlier.stubbed.add(kind);
      if (change.action === 'delete') for (const kind of kindsCascadedFrom(change.kind)) earlier.cascaded.add(kind);
    }
    this.earlier = earlier;
    return earlier;
  }
}
