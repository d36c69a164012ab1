import type { DatabaseTransactionConnection } from 'slonik';
import { KINDS, type ListRelation, type StoredKind } from '../catalogue/record-kinds.js';
import { markWrittenMany, serialLiveness } from './applier.repository.js';
import type { AuditEntry } from './audit.repository.js';
import { auditOf, SYSTEM } from './change.applier.js';
import { changeUnits, sentReference, type UpsertStep, upsertSteps, upsertUnits } from './change-plan.js';
import { existingLinks, insertLinkPairs, removeLinkPairs } from './links.repository.js';
import type { OutboxEntry } from './outbox.repository.js';
import { insertStubsMany, stubOutsideSerialView, targetKey } from './stubs.repository.js';

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
 * - no point-at lists (their children's references are rewritten one by one);
 * - at most `budget` units in all (see change.applier.ts): a change larger
 *   than that, or one already partly applied, is applied alone, in slices.
 *
 * A stub is created by the first change that names a missing record, and its
 * audit entry sits where that change's own applying would have put it.
 */

/** A change with its steps, computed once for splitting and applying. */
interface Planned {
  entry: OutboxEntry;
  steps: UpsertStep[];
  units: number;
}

/** Either a run for applyRun, or one change for the one-by-one applier; `units`: what it costs at least. */
export type Segment = { fast: true; run: Planned[]; units: number } | { fast: false; entry: OutboxEntry; units: number };

function plan(entry: OutboxEntry, budget: number): Planned | undefined {
  if (entry.action !== 'upsert' || !(entry.kind in KINDS) || entry.progress !== null) return undefined;
  // A fan-out (global unsubscribe) changes other records, found by the serial view as of its own number.
  if (KINDS[entry.kind as StoredKind].fansOut) return undefined;
  const steps = upsertSteps(entry.kind as StoredKind, entry.payload);
  const units = upsertUnits(steps);
  if (units > budget) return undefined;
  return steps.some((step) => step.list?.mode === 'point-at') ? undefined : { entry, steps, units };
}

/**
 * Splits a batch (in sequence order) into runs for applyRun and single
 * changes for the one-by-one applier. A run holds at most `budget` units.
 */
export function splitIntoSegments(entries: readonly OutboxEntry[], budget = Number.POSITIVE_INFINITY): Segment[] {
  const segments: Segment[] = [];
  let run: Planned[] = [];
  let units = 0;
  let own = new Set<string>();
  let named = new Set<string>();
  const close = () => {
    if (run.length === 1) segments.push({ fast: false, entry: run[0]!.entry, units });
    else if (run.length > 1) segments.push({ fast: true, run, units });
    run = [];
    units = 0;
    own = new Set();
    named = new Set();
  };
  for (const entry of entries) {
    const planned = plan(entry, budget);
    if (!planned) {
      close();
      segments.push({ fast: false, entry, units: changeUnits(entry) });
      continue;
    }
    const key = targetKey(entry.kind, entry.record_id);
    if (run.length > 0 && (run[0]!.entry.kind !== entry.kind || own.has(key) || named.has(key) || units + planned.units > budget)) close();
    run.push(planned);
    units += planned.units;
    own.add(key);
    for (const step of planned.steps) for (const id of step.ids) named.add(targetKey(step.kind, id));
  }
  close();
  return segments;
}

type ReplaceList = Extract<ListRelation, { mode: 'replace' }>;

/** The records a run names (stub and link targets), each with the first change that names it: where its stub's audit entry goes. */
type NamedTargets = Map<string, { entry: OutboxEntry; kind: StoredKind; id: string }>;

function namedTargets(run: readonly Planned[]): NamedTargets {
  const named: NamedTargets = new Map();
  for (const { entry, steps } of run) {
    for (const step of steps) {
      for (const id of step.ids) {
        const key = targetKey(step.kind, id);
        if (!named.has(key)) named.set(key, { entry, kind: step.kind, id });
      }
    }
  }
  return named;
}

/** A run's named records with their serial liveness, looked up before the run is applied (lookUpNamedAhead). */
export interface NamedAhead {
  run: readonly Planned[];
  named: NamedTargets;
  live: Promise<Map<string, boolean>>;
}

/**
 * Looks up the serial liveness of the records a run names while the run's
 * write is still in Postgres, so that the lookup runs right behind the write
 * instead of after the write's answer has reached the worker and the worker
 * has prepared the lookup (docs/consistency.md, "Bulk runs applied in
 * turn"). Only for a run that names no record of its own kind: writing and
 * applying the run changes its own kind's records alone, and nobody else
 * changes the serial view while this transaction holds the language's
 * applier lock, so the answer is the one applyRun's own lookup would get,
 * whichever of the write and the lookup Postgres runs first. (A row an API
 * write inserts meanwhile is caught by insertStubsMany's conflict, as it is
 * after applyRun's own lookup.) The caller passes it to applyRun for that
 * run, or waits for it before its transaction (or savepoint) ends.
 */
export function lookUpNamedAhead(tx: Tx, run: readonly Planned[]): NamedAhead | undefined {
  const kind = run[0]?.entry.kind;
  if (kind === undefined) return undefined;
  const named = namedTargets(run);
  for (const target of named.values()) if (target.kind === kind) return undefined;
  const live = serialLiveness(tx, run[0]!.entry.lang_key, [...named.values()]);
  // Marked as handled at once; applyRun still sees a failure when it waits for it.
  live.catch(() => undefined);
  return { run, named, live };
}

const NONE: ReadonlySet<string> = new Set();

/**
 * Applies a run formed by splitIntoSegments, in one transaction's worth of
 * set-based statements. Returns the audit entries in one-by-one order, the
 * units used (the run's own, and the links its writers had) and its link
 * statements, still in flight (`linksWritten`: wait for it before anything
 * that depends on its outcome), or undefined, having written nothing, when
 * its writers hold more than `linkBudget` links: replacing those is for the
 * one-by-one applier, in slices. `fresh`: ids of the run's records that its
 * write created with their serial view already written (writeRecords); they
 * are applied as records that did not exist, and not marked again.
 */
export async function applyRun(
  tx: Tx,
  run: readonly Planned[],
  linkBudget: number,
  fresh: ReadonlySet<string> = NONE,
  ahead?: NamedAhead,
): Promise<{ audits: AuditEntry[]; used: number; linksWritten: Promise<void> } | undefined> {
  const kind = run[0]!.entry.kind as StoredKind;
  const langKey = run[0]!.entry.lang_key;

  // Per list: every writer of the run that sent it, with its pairs (writers are distinct records), and the links they have.
  const byList = new Map<
    string,
    {
      list: ReplaceList;
      writers: string[];
      pairs: Array<{ writer: string; other: string; seq: number }>;
      existing: ReadonlyArray<{ writer: string; other: string }>;
    }
  >();
  for (const { entry, steps } of run) {
    for (const step of steps) {
      if (step.list?.mode !== 'replace') continue;
      const group = byList.get(step.list.field) ?? { list: step.list, writers: [], pairs: [], existing: [] };
      byList.set(step.list.field, group);
      group.writers.push(entry.record_id);
      for (const other of step.ids) group.pairs.push({ writer: entry.record_id, other, seq: entry.seq });
    }
  }
  let linksSeen = 0;
  for (const group of byList.values()) {
    const room = linkBudget - linksSeen;
    // A record the run's write created had no row, so it has no links: a link is only ever written with a row at
    // each end, and rows go only with their language (docs/consistency.md, "Bulk runs applied in turn").
    const known = fresh.size === 0 ? group.writers : group.writers.filter((writer) => !fresh.has(writer));
    if (known.length === 0) continue;
    group.existing = await existingLinks(tx, langKey, group.list.rel, group.list.side, known, Math.max(room, 0) + 1);
    linksSeen += group.existing.length;
    if (linksSeen > linkBudget) return undefined;
  }

  // Records the run's own write created with their serial view (`fresh`) did not exist before it and are marked already.
  const marked = run.filter(({ entry }) => !fresh.has(entry.record_id));
  const existed =
    marked.length === 0
      ? new Map<string, boolean>()
      : await markWrittenMany(
          tx,
          langKey,
          kind,
          marked.map(({ entry }) => ({ id: entry.record_id, sentRef: sentReference(kind, entry.payload) })),
        );

  const looked = ahead?.run === run ? ahead : undefined;
  const firstNamedBy = looked?.named ?? namedTargets(run);
  const live = await (looked?.live ?? serialLiveness(tx, langKey, [...firstNamedBy.values()]));
  const missing = [...firstNamedBy].filter(([key]) => live.get(key) !== true);
  const stubOf = ([, target]: (typeof missing)[number]) => ({
    kind: target.kind,
    id: target.id,
    seq: target.entry.seq,
    at: target.entry.accepted_at,
  });
  const inserted = await insertStubsMany(tx, langKey, missing.filter(([key]) => !live.has(key)).map(stubOf));
  // Rows that exist outside the serial view: tombstones, records the API created ahead of the queue.
  await stubOutsideSerialView(tx, langKey, missing.filter(([key]) => !inserted.has(key)).map(stubOf));
  const stubAudits = new Map<string, AuditEntry>();
  for (const [key, target] of missing) stubAudits.set(key, auditOf(target.entry, target.kind, target.id, 'stub', SYSTEM, {}));

  // Each writer's links become exactly its pairs: the ones it had and did not list go (in index order), the new ones come.
  const linkChanges = new Map<
    string,
    {
      list: ReplaceList;
      gone: ReadonlyArray<{ writer: string; other: string }>;
      removed: Map<string, string[]>;
      had: Set<string>;
      added: Array<{ writer: string; other: string; seq: number }>;
    }
  >();
  for (const [field, { list, pairs, existing }] of byList) {
    // Writers with no links before (new records): every pair is new, nothing goes.
    if (existing.length === 0) {
      linkChanges.set(field, { list, gone: [], removed: new Map(), had: new Set(), added: pairs });
      continue;
    }
    const wanted = new Set(pairs.map((pair) => targetKey(pair.writer, pair.other)));
    const gone = existing.filter((link) => !wanted.has(targetKey(link.writer, link.other)));
    const removed = new Map<string, string[]>();
    for (const link of gone) {
      const others = removed.get(link.writer) ?? [];
      others.push(link.other);
      removed.set(link.writer, others);
    }
    const had = new Set(existing.map((link) => targetKey(link.writer, link.other)));
    const added = pairs.filter((pair) => !had.has(targetKey(pair.writer, pair.other)));
    linkChanges.set(field, { list, gone, removed, had, added });
  }

  // The links are sent before the audit entries are computed, and not waited for here: computing the entries, and
  // what the caller does next (building their statement), overlap with them in Postgres. Statements on one
  // connection run in the order they are issued, and the first one is issued before this returns (no wait for a
  // statement with nothing to do comes before it). Neither the entries nor anything else here depends on their outcome.
  const linksWritten = (async () => {
    for (const { list, gone, added } of linkChanges.values()) {
      if (gone.length > 0) await removeLinkPairs(tx, langKey, list.rel, list.side, gone);
      if (added.length > 0) await insertLinkPairs(tx, langKey, list.rel, list.side, added);
    }
  })();
  // Marked as handled at once; whoever receives it still sees a failure when they wait for it.
  linksWritten.catch(() => undefined);

  const audits: AuditEntry[] = [];
  for (const { entry, steps } of run) {
    const { id: _id, ...changes } = entry.payload;
    audits.push(auditOf(entry, kind, entry.record_id, existed.get(entry.record_id) ? 'update' : 'create', entry.actor, changes));
    for (const step of steps) {
      for (const id of step.ids) {
        const key = targetKey(step.kind, id);
        const stubbed = stubAudits.get(key);
        if (stubbed && firstNamedBy.get(key)?.entry === entry) {
          audits.push(stubbed);
          stubAudits.delete(key);
        }
      }
      if (step.list === undefined) continue;
      const field = step.list.field;
      const change = linkChanges.get(field)!;
      for (const other of change.removed.get(entry.record_id) ?? [])
        audits.push(auditOf(entry, kind, entry.record_id, 'unlink', SYSTEM, { [field]: other }));
      // Every pair the writer did not have is inserted (insertLinkPairs adds them all).
      for (const other of step.ids)
        if (change.had.size === 0 || !change.had.has(targetKey(entry.record_id, other)))
          audits.push(auditOf(entry, kind, entry.record_id, 'link', SYSTEM, { [field]: other }));
    }
  }

  return { audits, used: run.reduce((sum, planned) => sum + planned.units, 0) + linksSeen, linksWritten };
}
