import type { Job } from 'bullmq';
import { UnrecoverableError } from 'bullmq';
import { bulkJobProgress, refreshPlannerStatistics } from '../../bulk/bulk.repository.js';
import { applyBulkBatch } from '../../bulk/bulk.service.js';
import type { Database } from '../../platform/db.js';
import type { Processor } from './processor.js';

const BATCH = 1_000;
/** A slice of work per job; the sweeper queues the next slice behind other shops' files. */
const SLICE_MS = 2_000;

/** Statistics are refreshed as a file passes 5k, 20k, 80k, … lines: often while a language is new, rarely later. */
const crossesAnalyzeMark = (from: number, to: number) => {
  for (let mark = 5_000; mark <= to; mark *= 4) if (from < mark) return true;
  return false;
};

export const processBulkProcessor: Processor<'process-bulk'> = async (job, { db, notifier, logger }) => {
  const { bulkJobId } = job.data;
  if (typeof bulkJobId !== 'string') throw new UnrecoverableError('process-bulk needs a bulkJobId');
  const deadline = Date.now() + SLICE_MS;
  let applied = 0;
  while (Date.now() < deadline) {
    const result = await applyBulkBatch(db, bulkJobId, BATCH, logger);
    applied += result.applied;
    if (result.lastLine !== undefined && crossesAnalyzeMark(result.lastLine - result.applied, result.lastLine)) {
      // Best effort: a role that may not ANALYZE (not the tables' owner) only loses speed.
      await refreshPlannerStatistics(db).catch((error: Error) =>
        logger.warn({ err: error.message }, 'could not refresh planner statistics'),
      );
    }
    if (result.langKey !== undefined) notifier.notify(result.langKey, job.data.requestId);
    await reportProgress(job, db, bulkJobId);
    if (result.done) return { bulkJobId, applied, done: true };
  }
  return { bulkJobId, applied, done: false };
};

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
