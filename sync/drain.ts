import type { Logger } from 'pino';
import { StatementTimeoutError } from 'slonik';
import { type Database, isDatabaseUnavailable } from '../platform/db.js';
import { type AuditEntry, insertAuditEntries } from './audit.repository.js';
import { type ChangeOutcome, EntryApplier } from './change.applier.js';
import { changeUnits } from './change-plan.js';
import { tryLockApplier } from './locks.js';
import {
  advanceAppliedThrough,
  appliedThrough,
  type ChangeProgress,
  deleteOutboxEntries,
  markOutboxEntryFailed,
  type OutboxEntry,
  readHorizon,
  readOutboxBatch,
  saveChangeProgress,
} from './outbox.repository.js';
import { applyRun, type NamedAhead, type Segment, splitIntoSegments } from './run.applier.js';

export interface DrainOptions {
  batchSize?: number;
  /**
   * Units (ids stubbed, linked, unlinked, cascaded or detached, see
   * change.applier.ts) one batch transaction applies at most. It bounds how
   * long a transaction holds the rows it writes (an API write of one of them
   * waits for it) and how much memory it takes; a change larger than this is
   * applied in slices, one transaction each.
   */
  sliceSize?: number;
  /**
   * Stop after this long (APPLIER_RUN_MS); whatever is left is picked up by
   * the next job, queued behind other languages' waiting work (fair share,
   * docs/consistency.md).
   */
  budgetMs?: number;
  /** An entry that fails this many times is set aside as failed (sync-status `failed`). */
  maxEntryAttempts?: number;
  /** Told how many changes each batch applied completely, once it has committed (the worker's metrics). */
  onApplied?: (changes: number) => void;
}

/**
 * A round of a run (a horizon, then batches) that applied fewer changes than
 * this waits LINGER_MS before the next. Under a steady
 * stream of single writes a run otherwise went round as fast as it could,
 * each round taking the few changes that came during the last: about 16 per
 * round at 950 writes a second, each round paying the horizon's exclusive
 * lock (a moment every writer of the language waits), a transaction, a dozen
 * statements and their round trips for those 16. Waiting lets a round take
 * what a few tens of milliseconds bring; the effects of a change come at most
 * that much later. The first round of a run never waits, nor one after a
 * round that found a full batch.
 */
const LINGER_BELOW = 200;
const LINGER_MS = 40;

export const DEFAULT_SLICE_SIZE = 5_000;

/** The payloads one batch reads at most (as stored; a batch holds at least one change), so batches of huge changes fit in memory. */
const BATCH_PAYLOAD_BYTES = 8 * 1024 * 1024;

/** How many more changes than the last batch applied the next one reads, after the slice budget stopped the last. */
const READ_MARGIN = 1.25;

/**
 * How many changes the next batch reads. A batch applies changes until its
 * slice budget is spent, and the next batch reads again whatever it read
 * beyond that: with changes of 7 units each (a product with three
 * categories), a batch reading 2,000 applies 714, so each change would be read
 * and parsed almost three times. After a batch the budget stopped, the next
 * reads about as many as it applied; after one that applied all it read, the
 * full batch size again. Only how many are read changes, never which or in
 * what order, so a batch still applies the changes it would have applied.
 */
export function nextReadLimit(batchSize: number, applied: number, stoppedByBudget: boolean): number {
  if (!stoppedByBudget) return batchSize;
  return Math.min(batchSize, Math.ceil(applied * READ_MARGIN) + 1);
}

export interface DrainResult {
  applied: number;
  busy: boolean;
  /** The run's budget ran out with changes left: the language needs another turn. */
  more: boolean;
}

export const DEFAULT_RUN_MS = 1_000;

export class EntryFailedError extends Error {}

/**
 * Applies the pending changes of one language in sequence order, in batches,
 * each batch one transaction that also writes the audit entries and removes
 * the applied outbox rows: a crash anywhere leaves either all or none of a
 * batch applied. A change too large for one batch is applied in slices, each
 * a batch of its own that also records how far the change got; the changes
 * after it wait until its last slice has committed.
 * @throws {EntryFailedError} when an entry fails and has attempts left (the job is retried with backoff).
 */
export async function drainLanguage(db: Database, langKey: number, logger: Logger, options: DrainOptions = {}): Promise<DrainResult> {
  const batchSize = options.batchSize ?? 2_000;
  const drain: Drain = {
    db,
    langKey,
    logger,
    batchSize,
    sliceSize: options.sliceSize ?? DEFAULT_SLICE_SIZE,
    maxAttempts: options.maxEntryAttempts ?? 3,
    readLimit: batchSize,
    // Changes at or below it are applied or set aside: the drain reads past their deleted index entries.
    after: await appliedThrough(db, langKey),
    onApplied: options.onApplied,
  };
  const deadline = Date.now() + (options.budgetMs ?? DEFAULT_RUN_MS);
  let applied = 0;
  let more = false;
  let lastRound: number | undefined;
  while (Date.now() < deadline) {
    if (lastRound !== undefined && lastRound < LINGER_BELOW) {
      await new Promise((resolve) => setTimeout(resolve, Math.min(LINGER_MS, Math.max(deadline - Date.now(), 0))));
    }
    const before = applied;
    const horizon = await readHorizon(db, langKey);
    let progressed = false;
    for (;;) {
      const outcome = await applyBatch(drain, horizon);
      if (outcome === 'busy') return { applied, busy: true, more: false };
      applied += outcome.completed;
      more = outcome.more;
      if (!outcome.progressed) break;
      progressed = true;
      if (!outcome.more || Date.now() >= deadline) break;
    }
    if (!progressed) break;
    lastRound = applied - before;
  }
  return { applied, busy: false, more: more && Date.now() >= deadline };
}

/** One drain of one language. */
interface Drain {
  db: Database;
  langKey: number;
  logger: Logger;
  batchSize: number;
  sliceSize: number;
  maxAttempts: number;
  /** How many changes the next batch reads (nextReadLimit). */
  readLimit: number;
  /** Where this drain got to: every change at or before it is applied or set aside. */
  after: number;
  onApplied: ((changes: number) => void) | undefined;
}

interface BatchOutcome {
  /** Changes applied completely (their outbox rows deleted). */
  completed: number;
  /** Anything applied at all, completely or a slice of a change. */
  progressed: boolean;
  /** The batch stopped before the end of what it read, or read a full batch: more may be waiting below the horizon. */
  more: boolean;
}

async function applyBatch(drain: Drain, horizon: number): Promise<BatchOutcome | 'busy'> {
  try {
    return await runBatch(drain, horizon, false);
  } catch (error) {
    if (isConnectionError(error) || error instanceof EntryFailedError) throw error;
    drain.logger.warn({ err: (error as Error).message, lang_key: drain.langKey }, 'batch failed; isolating the failing change');
    return runBatch(drain, horizon, true);
  }
}

type Tx = Parameters<Parameters<Database['transaction']>[0]>[0];

export interface Applied {
  audits: AuditEntry[];
  seqs: number[];
  /** A change applied up to here in this batch; the rest follows in the next. */
  partial?: { seq: number; progress: ChangeProgress };
  /** The batch stopped before the end of what it read (its budget was spent). */
  stopped: boolean;
  failure?: { entry: OutboxEntry; error: Error };
}

/** Appends without spreading into a call (which has a maximum number of arguments). */
function append<T>(target: T[], items: readonly T[]): void {
  for (const item of items) target.push(item);
}

/** Records what one change did in this batch; false when the batch must stop there. */
function record(result: Applied, entry: OutboxEntry, audits: readonly AuditEntry[], outcome: ChangeOutcome): boolean {
  append(result.audits, audits);
  if (!outcome.done) {
    result.partial = { seq: entry.seq, progress: outcome.progress };
    return false;
  }
  result.seqs.push(entry.seq);
  return true;
}

/**
 * A batch's changes split beforehand (splitIntoSegments, with the same
 * budget), and the ids of records whose write created them with their serial
 * view already written (writeRecords' `fresh`). With any such record, the
 * changes must be one set-based run, applied whole by an applier that knows
 * those records did not exist: the one-by-one applier, or a run cut short,
 * would take them for records that did.
 */
export interface PlannedChanges {
  segments: Segment[];
  fresh: ReadonlySet<string>;
  /** What the first run names, looked up already (run.applier.ts, lookUpNamedAhead). */
  ahead?: NamedAhead;
}

/** Changes with fresh records (PlannedChanges) that cannot be applied whole as one set-based run. Nothing was written: the caller undoes their write. */
export class RunNotWholeError extends Error {}

/**
 * applyChanges, then their audit entries. The entries' statement is built
 * while the last run's link statements are still in Postgres (a bulk batch's
 * 4,000 entries take the worker a few milliseconds to turn into text), and
 * runs right after them.
 * @throws {RunNotWholeError} when `planned` has fresh records and cannot be applied whole.
 */
export async function applyAndAudit(tx: Tx, entries: readonly OutboxEntry[], budget: number, planned?: PlannedChanges): Promise<Applied> {
  const segments = planned?.segments ?? splitIntoSegments(entries, budget);
  const { result, inFlight } =
    planned && planned.fresh.size > 0
      ? await applyWhole(tx, entries, segments, budget, planned.fresh, planned.ahead)
      : await applyChanges(tx, segments, budget, planned?.ahead);
  await allInOrder([inFlight, insertAuditEntries(tx, result.audits)]);
  return result;
}

/** All of `entries` as the one set-based run `segments` must be, with the records its write created (`fresh`). */
async function applyWhole(
  tx: Tx,
  entries: readonly OutboxEntry[],
  segments: readonly Segment[],
  budget: number,
  fresh: ReadonlySet<string>,
  ahead: NamedAhead | undefined,
): Promise<{ result: Applied; inFlight: Promise<void> | undefined }> {
  const [segment, ...others] = segments;
  if (!segment?.fast || others.length > 0 || segment.run.length !== entries.length || segment.units > budget)
    throw new RunNotWholeError('the run is not one set-based run within its budget');
  const run = await applyRun(tx, segment.run, budget - segment.units, fresh, ahead);
  if (!run) throw new RunNotWholeError("the run's writers have more links than its budget");
  return { result: { audits: run.audits, seqs: segment.run.map(({ entry }) => entry.seq), stopped: false }, inFlight: run.linksWritten };
}

/**
 * Waits for every statement given, and throws the first failure in the order
 * they were issued: a statement queued behind a failed one fails too, only
 * saying that the transaction is aborted.
 */
async function allInOrder(statements: ReadonlyArray<Promise<unknown> | undefined>): Promise<void> {
  for (const outcome of await Promise.allSettled(statements)) if (outcome.status === 'rejected') throw outcome.reason;
}

/**
 * A batch's changes, split into segments (splitIntoSegments, with `budget`):
 * runs of independent upserts set-based (run.applier.ts), everything else one
 * change at a time, until `budget` units are spent. A change that does not
 * fit in what is left waits for the next batch, unless it is the first: then
 * it is applied as far as the budget goes. What it applied is a prefix of
 * the changes. The last run's link statements may still be running when it
 * returns (`inFlight`); applyAndAudit waits for them.
 */
async function applyChanges(
  tx: Tx,
  segments: readonly Segment[],
  budget: number,
  ahead?: NamedAhead,
): Promise<{ result: Applied; inFlight: Promise<void> | undefined }> {
  const result: Applied = { audits: [], seqs: [], stopped: false };
  let left = budget;
  let inFlight: Promise<void> | undefined;
  /** One change by the one-by-one applier; false when the batch ends with it. */
  const applyOne = async (entry: OutboxEntry): Promise<boolean> => {
    if (result.seqs.length > 0 && changeUnits(entry) > left) {
      result.stopped = true;
      return false;
    }
    const applier = new EntryApplier(tx, entry);
    const outcome = await applier.apply(Math.max(left, 1));
    left -= outcome.used;
    return record(result, entry, applier.audits, outcome);
  };
  for (const segment of segments) {
    // What follows a run reads what its links are.
    await inFlight;
    inFlight = undefined;
    if (!segment.fast) {
      if (!(await applyOne(segment.entry))) break;
      continue;
    }
    if (result.seqs.length > 0 && segment.units > left) {
      result.stopped = true;
      break;
    }
    const run = await applyRun(tx, segment.run, left - segment.units, undefined, ahead);
    if (run) {
      inFlight = run.linksWritten;
      append(result.audits, run.audits);
      for (const { entry } of segment.run) result.seqs.push(entry.seq);
      left -= run.used;
      continue;
    }
    // Its writers have more links than this batch may replace: one change at a time, in slices.
    let going = true;
    for (const { entry } of segment.run) {
      going = await applyOne(entry);
      if (!going) break;
    }
    if (!going) break;
  }
  return { result, inFlight };
}

/** One change at a time, each in a savepoint, up to the first failure, which is recorded. */
async function applyCarefully(tx: Tx, entries: readonly OutboxEntry[], budget: number, maxAttempts: number): Promise<Applied> {
  const result: Applied = { audits: [], seqs: [], stopped: false };
  let left = budget;
  for (const entry of entries) {
    if (result.seqs.length > 0 && changeUnits(entry) > left) {
      result.stopped = true;
      break;
    }
    let applied: { audits: AuditEntry[]; outcome: ChangeOutcome };
    try {
      applied = await tx.transaction(async (savepoint) => {
        const applier = new EntryApplier(savepoint, entry);
        const outcome = await applier.apply(Math.max(left, 1));
        return { audits: applier.audits, outcome };
      });
    } catch (error) {
      if (isConnectionError(error)) throw error;
      result.failure = { entry, error: error as Error };
      await markOutboxEntryFailed(tx, entry.seq, failureText(error as Error), maxAttempts);
      break;
    }
    if (!record(result, entry, applied.audits, applied.outcome)) break;
    left -= applied.outcome.used;
  }
  return result;
}

/**
 * One batch in one transaction. `careful` applies one change at a time and
 * stops at the first failure, so order is kept and the failure is recorded.
 */
async function runBatch(drain: Drain, horizon: number, careful: boolean): Promise<BatchOutcome | 'busy'> {
  const outcome = await drain.db.transaction(async (tx) => {
    if (!(await tryLockApplier(tx, drain.langKey))) return 'busy' as const;
    const entries = await readOutboxBatch(tx, drain.langKey, drain.after, horizon, drain.readLimit, BATCH_PAYLOAD_BYTES);
    let result: Applied;
    if (careful) {
      result = await applyCarefully(tx, entries, drain.sliceSize, drain.maxAttempts);
      await insertAuditEntries(tx, result.audits);
    } else result = await applyAndAudit(tx, entries, drain.sliceSize);
    await deleteOutboxEntries(tx, result.seqs);
    const last = result.seqs.at(-1);
    if (last !== undefined) await advanceAppliedThrough(tx, drain.langKey, last);
    if (result.partial) await saveChangeProgress(tx, result.partial.seq, result.partial.progress);
    return { result, read: entries.length, limit: drain.readLimit };
  });
  if (outcome === 'busy') return outcome;
  const { result, read, limit } = outcome;
  if (result.seqs.length > 0) drain.onApplied?.(result.seqs.length);
  drain.after = result.seqs.at(-1) ?? drain.after;
  drain.readLimit = nextReadLimit(drain.batchSize, result.seqs.length, result.stopped);
  const { failure } = result;
  if (failure) {
    drain.logger.error({ err: failure.error, seq: failure.entry.seq, kind: failure.entry.kind }, 'change could not be applied');
    if (result.seqs.length === 0) throw new EntryFailedError(`change ${failure.entry.seq} failed: ${failure.error.message}`);
  }
  if (result.partial) {
    drain.logger.debug({ seq: result.partial.seq, lang_key: drain.langKey, progress: result.partial.progress }, 'change applied in part');
  }
  return {
    completed: result.seqs.length,
    progressed: result.seqs.length > 0 || result.partial !== undefined,
    more: result.partial !== undefined || result.stopped || read === limit,
  };
}

/** Failures of the database rather than of a change: the job retries later instead of setting the change aside. */
export function isConnectionError(error: unknown): boolean {
  return isDatabaseUnavailable(error) || error instanceof StatementTimeoutError;
}

/** What an operator reads about a failure: slonik's summary and the database's own words (which constraint, which table). */
function failureText(error: Error): string {
  const cause = (error as { cause?: unknown }).cause;
  return cause instanceof Error && cause.message !== error.message ? `${error.message}: ${cause.message}` : error.message;
}
