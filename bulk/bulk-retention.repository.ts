import { type CommonQueryMethods, sql } from 'slonik';
import { z } from 'zod';

/** Rows one statement removes at most: short statements, so removal never holds much at once. */
export const RETENTION_BATCH = 10_000;
/** Finished jobs looked at per run. */
const JOBS_PER_RUN = 100;

export interface RemovedLines {
  lines: number;
  errors: number;
}

/**
 * Removes the stored lines and line errors of bulk jobs that finished more
 * than `retentionDays` ago, in batches along each job's primary key
 * (job_id, line_no), then marks the job so it is not looked at again. The
 * job row and its counts stay; its errors then list nothing (interface §23).
 * Takes no language lock: finished jobs' lines are read by nothing that writes.
 */
export async function removeOldBulkLines(db: CommonQueryMethods, retentionDays: number): Promise<RemovedLines> {
  const removed: RemovedLines = { lines: 0, errors: 0 };
  const jobs = await db.anyFirst(sql.type(z.object({ id: z.string() }))`
    SELECT id::text AS id FROM bulk_jobs
    WHERE lines_removed_at IS NULL AND status IN ('completed', 'failed')
      AND finished_at < now() - make_interval(days => ${retentionDays})
    ORDER BY finished_at
    LIMIT ${JOBS_PER_RUN}
  `);
  for (const jobId of jobs) {
    removed.lines += await removeInRanges(db, 'bulk_lines', jobId);
    removed.errors += await removeInRanges(db, 'bulk_errors', jobId);
    await db.query(sql.unsafe`UPDATE bulk_jobs SET lines_removed_at = now() WHERE id = ${jobId}`);
  }
  return removed;
}

/** Deletes a job's rows of `table` RETENTION_BATCH line numbers at a time, from its first line number to its last. */
async function removeInRanges(db: CommonQueryMethods, table: 'bulk_lines' | 'bulk_errors', jobId: string): Promise<number> {
  const name = sql.identifier([table]);
  const bounds = await db.one(sql.type(z.object({ first: z.number().nullable(), last: z.number().nullable() }))`
    SELECT (SELECT line_no FROM ${name} WHERE job_id = ${jobId} ORDER BY line_no LIMIT 1) AS first,
           (SELECT line_no FROM ${name} WHERE job_id = ${jobId} ORDER BY line_no DESC LIMIT 1) AS last
  `);
  if (bounds.first === null || bounds.last === null) return 0;
  let removed = 0;
  for (let from = bounds.first; from <= bounds.last; from += RETENTION_BATCH) {
    const result = await db.query(sql.unsafe`
      DELETE FROM ${name} WHERE job_id = ${jobId} AND line_no >= ${from} AND line_no < ${from + RETENTION_BATCH}
    `);
    removed += result.rowCount;
  }
  return removed;
}
