import type { Job } from 'bullmq';
import { UnrecoverableError } from 'bullmq';
import { BatchPrefetcher } from '../../bulk/batch.prefetcher.js';
import { bulkJobProgress, bulkJobTurn, markBulkJobStarted, refreshPlannerStatistics } from '../../bulk/bulk.repository.js';
import { applyBulkBatch } from '../../bulk/bulk-batch.service.js';
import type { Database } from '../../platform/db.js';
import { hasPendingChanges } from '../../sync/pending-changes.repository.js';
import { languageBacklog } from '../../sync/status.repository.js';
import type { Processor } from './processor.js';

const BATCH = 1_000;
/** A slice of work per job; the sweeper queues the next slice behind other accounts' files (one file per account at a time). */
const SLICE_MS = 2_000;

/** How often a file waiting for its language's applier looks again. */
const BACKLOG_POLL_MS = 50;

/** How long a batch waits for what its language has pending to be applied, to be in turn (effectsCaughtUp), and how often it looks meanwhile. */
const IN_TURN_WAIT_MS = 250;
const IN_TURN_POLL_MS = 10;

/** Statistics are refreshed as a file passes 5k, 20k, 80k, … lines: often while a language is new, rarely later. */
const crossesAnalyzeMark = (from: number, to: number) => {
  for (let mark = 5_000; mark <= to; mark *= 4) if (from < mark) return true;
  return false;
};

export const processBulkProcessor: Processor<'process-bulk'> = async (
  job,
  { db, notifier, logger, maxEffectsBacklog, drainOptions, metrics, positions },
) => {
  const { bulkJobId } = job.data;
  if (typeof bulkJobId !== 'string') throw new UnrecoverableError('process-bulk needs a bulkJobId');
  const deadline = Date.now() + SLICE_MS;
  let applied = 0;
  const turn = await bulkJobTurn(db, bulkJobId);
  // An earlier file of the same account goes first; the sweeper queues this one once that is done.
  if (turn && !turn.in_turn) return { bulkJobId, applied: 0, done: false, waiting: 'an earlier file of the account' };
  let langKey = turn?.lang_key;
  if (turn) await markBulkJobStarted(db, bulkJobId);
  // Nothing is read ahead for a batch that would start after the slice's end.
  const prefetcher = new BatchPrefetcher(db, deadline);
  while (Date.now() < deadline) {
    if (langKey !== undefined && !(await effectsCaughtUp(db, langKey, maxEffectsBacklog, deadline))) break;
    const result = await applyBulkBatch(db, bulkJobId, { batchSize: BATCH, logger, sliceSize: drainOptions.sliceSize, prefetcher });
    applied += result.applied;
    if (positions && result.applied > 0 && result.langKey !== undefined) await positions.wroteIn(result.langKey);
    if (result.appliedInTurn) metrics.changesApplied.inc({ by: 'bulk_in_turn' }, result.appliedInTurn);
    if (result.lineByLine) metrics.bulkBatchesLineByLine.inc();
    if (result.lastLine !== undefined && crossesAnalyzeMark(result.lastLine - result.applied, result.lastLine)) {
      // Best effort: a role that may not ANALYZE (not the tables' owner) only loses speed.
      await refreshPlannerStatistics(db).catch((error: Error) =>
        logger.warn({ err: error.message }, 'could not refresh planner statistics'),
      );
    }
    langKey = result.langKey;
    // A batch in turn applied its own changes: the applier is woken only for what a batch left it.
    if (langKey !== undefined && result.queued) notifier.notify(langKey, job.data.requestId, true);
    await reportProgress(job, db, bulkJobId);
    if (result.done) return { bulkJobId, applied, done: true };
    if (langKey !== undefined && result.waitForRequest !== undefined) {
      if (!(await fileEffectsApplied(db, langKey, result.waitForRequest, deadline))) break;
    }
  }
  return { bulkJobId, applied, done: false };
};

/**
 * Backpressure: a file stops storing lines while its language has
 * `maxBacklog` changes whose effects are not applied yet, and goes on once
 * the applier has brought that under half. Lines stored faster than their
 * effects can be applied only add lag (effects land long after the file says
 * it is stored) and take Postgres time from the applier; this keeps the two
 * in step.
 *
 * Below that, a batch first waits a moment (IN_TURN_WAIT_MS) for the
 * applier to apply what is pending, so that it is in turn and applies its
 * own effects as it stores its lines (sync/in-turn.applier.ts): a batch that
 * queued its changes behind a pending one would leave the next batch behind
 * them too, and so on to the end of the file. A language that single writes
 * keep busy is not waited for longer: its file goes on queueing.
 * Waits until the slice's deadline at most.
 * @returns false when the slice ran out of time waiting (the next slice goes on).
 */
async function effectsCaughtUp(db: Database, langKey: number, maxBacklog: number, deadline: number): Promise<boolean> {
  const first = await languageBacklog(db, langKey);
  if (first === 0) return true;
  // Over the limit, the file waits until the applier has brought it under half.
  const limit = first >= maxBacklog ? maxBacklog / 2 : maxBacklog;
  const turnGivenUp = Math.min(Date.now() + IN_TURN_WAIT_MS, deadline);
  let backlog = first;
  for (;;) {
    if (backlog === 0 || (backlog < limit && Date.now() >= turnGivenUp)) return true;
    const poll = Date.now() < turnGivenUp ? IN_TURN_POLL_MS : BACKLOG_POLL_MS;
    if (Date.now() + poll >= deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, poll));
    backlog = await languageBacklog(db, langKey);
  }
}

/**
 * A batch stopped before a line that looks up a record the file's queued
 * changes may stub or cascade to (bulk/earlier-effects.ts): the next batch
 * starts at that line once the applier has applied every change of the file.
 * @returns false when the slice ran out of time waiting (the next slice goes on).
 */
async function fileEffectsApplied(db: Database, langKey: number, requestId: string, deadline: number): Promise<boolean> {
  for (;;) {
    if (!(await hasPendingChanges(db, langKey, requestId))) return true;
    if (Date.now() + IN_TURN_POLL_MS >= deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, IN_TURN_POLL_MS));
  }
}

/**
 * The file's progress on the queue job, for the dashboard: bull-board draws
 * `progress` (a percentage of lines stored) and shows the rest in the job's
 * Progress tab.
 */
async function reportProgress(job: Job, db: Database, bulkJobId: string): Promise<void> {
  const progress = await bulkJobProgress(db, bulkJobId);
  if (!progress) return;
  const percent = progress.lines === 0 ? 100 : Math.floor((100 * progress.lines_stored) / progress.lines);
  await job.updateProgress({ progress: percent, bulk_job: bulkJobId, ...progress });
}
