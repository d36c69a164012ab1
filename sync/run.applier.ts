import type { DatabaseTransactionConnection } from 'slonik';
import { KINDS, type ListRelation, type StoredKind } from '../catalogue/record-kinds.js';
import {
  type AuditEntry,
  insertStubsMany,
  markWrittenMany,
  type OutboxEntry,
  replaceLinksMany,
  serialLiveness,
  targetKey,
} from './applier.repository.js';
import { auditOf, EntryApplier, SYSTEM, sentReference, type UpsertStep, upsertSteps } from './change.applier.js';

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

/** A change with its steps, computed once for splitting and applying. */
interface Planned {
  entry: OutboxEntry;
  steps: UpsertStep[];
}

/** Either a run for applyRun, or one change for the one-by-one applier. */
export type Segment = { fast: true; run: Planned[] } | { fast: false; entry: OutboxEntry };

function plan(entry: OutboxEntry): Planned | undefined {
  if (entry.action !== 'upsert' || !(entry.kind in KINDS)) return undefined;
  // A fan-out (global unsubscribe) changes other records one by one.
  if (KINDS[entry.kind as StoredKind].fansOut) return undefined;
  const steps = upsertSteps(entry.kind as StoredKind, entry.payload);
  return steps.some((step) => step.list?.mode === 'point-at') ? undefined : { entry, steps };
}

/** Splits a batch (in sequence order) into runs for applyRun and single changes for the one-by-one applier. */
export function splitIntoSegments(entries: readonly OutboxEntry[]): Segment[] {
  const segments: Segment[] = [];
  let run: Planned[] = [];
  let own = new Set<string>();
  let named = new Set<string>();
  const close = () => {
    if (run.length === 1) segments.push({ fast: false, entry: run[0]!.entry });
    else if (run.length > 1) segments.push({ fast: true, run });
    run = [];
    own = new Set();
    named = new Set();
  };
  for (const entry of entries) {
    const planned = plan(entry);
    if (!planned) {
      close();
      segments.push({ fast: false, entry });
      continue;
    }
    const key = targetKey(entry.kind, entry.record_id);
    if (run.length > 0 && (run[0]!.entry.kind !== entry.kind || own.has(key) || named.has(key))) close();
    run.push(planned);
    own.add(key);
    for (const step of planned.steps) for (const id of step.ids) named.add(targetKey(step.kind, id));
  }
  close();
  return segments;
}

/**
 * Applies a run formed by splitIntoSegments, in one transaction's worth of
 * set-based statements. Returns the audit entries in one-by-one order.
 */
export async function applyRun(tx: Tx, run: readonly Planned[]): Promise<AuditEntry[]> {
  const kind = run[0]!.entry.kind as StoredKind;
  const langKey = run[0]!.entry.lang_key;

  const existed = await markWrittenMany(
    tx,
    langKey,
    kind,
    run.map(({ entry }) => ({ id: entry.record_id, sentRef: sentReference(kind, entry.payload) })),
  );

  const firstNamedBy = new Map<string, { entry: OutboxEntry; kind: StoredKind; id: string }>();
  for (const { entry, steps } of run) {
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

  // Per list: every writer of the run that sent it, with its pairs (writers are distinct records).
  const byList = new Map<
    string,
    { list: Extract<ListRelation, { mode: 'replace' }>; writers: string[]; pairs: Array<{ writer: string; other: string; seq: number }> }
  >();
  for (const { entry, steps } of run) {
    for (const step of steps) {
      if (step.list?.mode !== 'replace') continue;
      const group = byList.get(step.list.field) ?? { list: step.list, writers: [], pairs: [] };
      byList.set(step.list.field, group);
      group.writers.push(entry.record_id);
      for (const other of step.ids) group.pairs.push({ writer: entry.record_id, other, seq: entry.seq });
    }
  }
  const linkChanges = new Map<string, Awaited<ReturnType<typeof replaceLinksMany>>>();
  for (const [field, { list, writers, pairs }] of byList) {
    linkChanges.set(field, await replaceLinksMany(tx, langKey, list.rel, list.side, writers, pairs));
  }

  const audits: AuditEntry[] = [];
  for (const { entry, steps } of run) {
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
      const field = step.list.field;
      const change = linkChanges.get(field)!;
      for (const other of change.removed.get(entry.record_id) ?? [])
        audits.push(auditOf(entry, kind, entry.record_id, 'unlink', SYSTEM, { [field]: other }));
      const added = change.added.get(entry.record_id);
      for (const other of step.ids)
        if (added?.has(other)) audits.push(auditOf(entry, kind, entry.record_id, 'link', SYSTEM, { [field]: other }));
    }
  }
  return audits;
}
