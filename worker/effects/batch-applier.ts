import type { DatabaseTransactionConnection } from 'slonik';
import { KINDS, TRACKED_FIELD, type RecordKind } from '../../shared/schemas/record-kinds.js';
import { auditOf, EntryApplier, SYSTEM, unique } from './applier.js';
import {
  insertStubsMany,
  serialLiveness,
  markWrittenMany,
  replaceLinksMany,
  targetKey,
  type AuditEntry,
  type OutboxEntry,
} from './effects.repository.js';

type Tx = DatabaseTransactionConnection;

/*
 * Runs of upserts applied set-based: a few statements for a whole run instead
 * of a few per change. A run is only formed where applying it phase by phase
 * (every record marked written, then every stub, then every link set) ends in
 * exactly the state and audit entries of applying its changes one by one:
 *
 * - one kind, so each relation side is written by one kind only and writers
 *   are distinct records (no record twice in a run);
 * - no change names (as stub or link target) a record that a later change of
 *   the run writes: one by one, that target would be stubbed first and then
 *   updated, while phase by phase it would already exist;
 * - no point-at lists (their children's references are rewritten one by one).
 *
 * A stub is created by the first change that names a missing record, and its
 * audit entry sits where that change's own applying would have put it.
 */

interface RunPlan {
  kind: RecordKind;
  entries: OutboxEntry[];
}

interface Segment {
  fast: boolean;
  entries: OutboxEntry[];
}

/** Targets a change names, in the order one-by-one applying visits them. */
function targetsOf(entry: OutboxEntry): Array<{ kind: RecordKind; ids: string[]; list?: string }> {
  const definition = KINDS[entry.kind as RecordKind];
  const payload = entry.payload;
  const steps: Array<{ kind: RecordKind; ids: string[]; list?: string }> = [];
  for (const ref of definition.refs) {
    const target = payload[ref.field];
    if (ref.stub && typeof target === 'string') steps.push({ kind: ref.kind, ids: [target] });
  }
  for (const list of definition.stubLists) {
    const value = payload[list.field] as Array<string | { id: string }> | null | undefined;
    steps.push({ kind: list.kind, ids: unique((value ?? []).map((item) => (typeof item === 'string' ? item : item.id))) });
  }
  for (const list of definition.lists) {
    if (payload[list.field] === undefined || list.mode !== 'replace') continue;
    steps.push({ kind: list.kind, ids: unique((payload[list.field] as string[] | null) ?? []), list: list.field });
  }
  return steps;
}

function eligible(entry: OutboxEntry): boolean {
  if (entry.action !== 'upsert' || !(entry.kind in KINDS)) return false;
  return KINDS[entry.kind as RecordKind].lists.every((list) => list.mode === 'replace' || entry.payload[list.field] === undefined);
}

/** Splits a batch (in sequence order) into runs for applyRun and single changes for the one-by-one applier. */
export function splitIntoSegments(entries: readonly OutboxEntry[]): Segment[] {
  const segments: Segment[] = [];
  let run: RunPlan | undefined;
  let own = new Set<string>();
  let named = new Set<string>();
  const close = () => {
    if (run) segments.push({ fast: run.entries.length > 1, entries: run.entries });
    run = undefined;
    own = new Set();
    named = new Set();
  };
  for (const entry of entries) {
    if (!eligible(entry)) {
      close();
      segments.push({ fast: false, entries: [entry] });
      continue;
    }
    const key = targetKey(entry.kind, entry.record_id);
    if (run && (run.kind !== entry.kind || own.has(key) || named.has(key))) close();
    run ??= { kind: entry.kind as RecordKind, entries: [] };
    run.entries.push(entry);
    own.add(key);
    for (const step of targetsOf(entry)) for (const id of step.ids) named.add(targetKey(step.kind, id));
  }
  close();
  return segments;
}

/**
 * Applies a run formed by splitIntoSegments, in one transaction's worth of
 * set-based statements. Returns the audit entries in one-by-one order.
 */
export async function applyRun(tx: Tx, entries: readonly OutboxEntry[]): Promise<AuditEntry[]> {
  const kind = entries[0]!.kind as RecordKind;
  const langKey = entries[0]!.lang_key;
  const definition = KINDS[kind];
  const tracked = TRACKED_FIELD[kind];

  const existed = await markWrittenMany(
    tx,
    langKey,
    kind,
    entries.map((entry) => ({
      id: entry.record_id,
      sentRef: tracked !== undefined && entry.payload[tracked] !== undefined ? { value: (entry.payload[tracked] as string | null) ?? null } : undefined,
    })),
  );

  const plans = entries.map((entry) => ({ entry, steps: targetsOf(entry) }));
  const firstNamedBy = new Map<string, { entry: OutboxEntry; kind: RecordKind; id: string }>();
  for (const { entry, steps } of plans) {
    for (const step of steps) {
      for (const id of step.ids) {
        const key = targetKey(step.kind, id);
        if (!firstNamedBy.has(key)) firstNamedBy.set(key, { entry, kind: step.kind, id });
      }
    }
  }
  const live = await serialLiveness(tx, langKey, [...firstNamedBy.values()]);
  const missing = [...firstNamedBy].filter(([key]) => live.get(key) !== true);
  const inserted = await insertStubsMany(
    tx,
    langKey,
    missing
      .filter(([key]) => !live.has(key))
      .map(([, target]) => ({ kind: target.kind, id: target.id, seq: target.entry.seq, at: target.entry.accepted_at })),
  );
  // Rows that exist outside the serial view (tombstones, records the API created ahead of the queue) take the careful path.
  const stubAudits = new Map<string, AuditEntry[]>();
  for (const [key, target] of missing) {
    if (inserted.has(key)) {
      stubAudits.set(key, [auditOf(target.entry, target.kind, target.id, 'stub', SYSTEM, {})]);
      continue;
    }
    const applier = new EntryApplier(tx, target.entry);
    await applier.ensureStub(target.kind, target.id, {});
    stubAudits.set(key, applier.audits);
  }

  const linkChanges = new Map<string, Awaited<ReturnType<typeof replaceLinksMany>>>();
  for (const list of definition.lists) {
    if (list.mode !== 'replace') continue;
    const writers = entries.filter((entry) => entry.payload[list.field] !== undefined);
    if (writers.length === 0) continue;
    const pairs = writers.flatMap((entry) =>
      unique((entry.payload[list.field] as string[] | null) ?? []).map((other) => ({ writer: entry.record_id, other, seq: entry.seq })),
    );
    linkChanges.set(list.field, await replaceLinksMany(tx, langKey, list.rel, list.side, writers.map((entry) => entry.record_id), pairs));
  }

  const audits: AuditEntry[] = [];
  for (const { entry, steps } of plans) {
    const { id: _id, ...changes } = entry.payload;
    audits.push(auditOf(entry, kind, entry.record_id, existed.get(entry.record_id) ? 'update' : 'create', entry.actor, changes));
    for (const step of steps) {
      for (const id of step.ids) {
        const key = targetKey(step.kind, id);
        const stubbed = stubAudits.get(key);
        if (stubbed && firstNamedBy.get(key)?.entry === entry) {
          audits.push(...stubbed);
          stubAudits.delete(key);
        }
      }
      if (step.list === undefined) continue;
      const change = linkChanges.get(step.list)!;
      for (const other of change.removed.get(entry.record_id) ?? []) audits.push(auditOf(entry, kind, entry.record_id, 'unlink', SYSTEM, { [step.list]: other }));
      const added = change.added.get(entry.record_id);
      for (const other of step.ids) if (added?.has(other)) audits.push(auditOf(entry, kind, entry.record_id, 'link', SYSTEM, { [step.list]: other }));
    }
  }
  return audits;
}
