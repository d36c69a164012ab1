import { type CommonQueryMethods, type DatabaseTransactionConnection, sql } from 'slonik';
import { z } from 'zod';

export const bulkJobRow = z.object({
  id: z.string(),
  account_id: z.number(),
  lang_key: z.number(),
  language_id: z.string(),
  client_id: z.string(),
  request_id: z.string().nullable(),
  status: z.enum(['queued', 'running', 'completed', 'failed']),
  lines: z.number(),
  next_line: z.number(),
  saved: z.number(),
  failed: z.number(),
  error: z.string().nullable(),
  created_at: z.string(),
  finished_at: z.string().nullable(),
});
export type BulkJobRow = z.infer<typeof bulkJobRow>;

const columns = sql.fragment`
  id, account_id, lang_key, language_id, client_id, request_id, status, lines, next_line, saved, failed, error, created_at, finished_at
`;

export async function findBulkJob(db: CommonQueryMethods, accountId: number, langKey: number, jobId: string): Promise<BulkJobRow | null> {
  return db.maybeOne(sql.type(bulkJobRow)`
    SELECT ${columns} FROM bulk_jobs
    WHERE id = ${jobId} AND account_id = ${accountId} AND lang_key = ${langKey}
  `);
}

export async function lockBulkJob(tx: DatabaseTransactionConnection, jobId: string): Promise<BulkJobRow | null> {
  return tx.maybeOne(sql.type(bulkJobRow)`SELECT ${columns} FROM bulk_jobs WHERE id = ${jobId} FOR UPDATE`);
}

const bulkLine = z.object({ line_no: z.number(), line: z.string() });

/**
 * The next lines after `after`, at most `limit`. Line numbers are the file's
 * (blank lines leave gaps), so the batch is read as a range of numbers: an
 * index range the planner cannot turn into a scan of the whole remaining file,
 * however stale the statistics of this fast-growing table are. Only when that
 * range is empty is the next line looked up beyond it.
 */
export async function readBulkLines(tx: CommonQueryMethods, jobId: string, after: number, limit: number) {
  const lines = await tx.any(sql.type(bulkLine)`
    SELECT line_no, line FROM bulk_lines
    WHERE job_id = ${jobId} AND line_no > ${after} AND line_no <= ${after + limit}
    ORDER BY line_no
  `);
  if (lines.length > 0) return lines;
  return tx.any(sql.type(bulkLine)`
    SELECT line_no, line FROM bulk_lines
    WHERE job_id = ${jobId} AND line_no > ${after}
    ORDER BY line_no
    LIMIT ${limit}
  `);
}

export async function recordBulkProgress(
  tx: DatabaseTransactionConnection,
  jobId: string,
  progress: { nextLine: number; saved: number; errors: Array<{ line: number; error: unknown }> },
): Promise<void> {
  if (progress.errors.length > 0) {
    await tx.query(sql.unsafe`
      INSERT INTO bulk_errors (job_id, line_no, error)
      SELECT ${jobId}, line_no, error
      FROM unnest(
        ${sql.array(
          progress.errors.map((item) => item.line),
          'int8',
        )},
        ${sql.array(
          progress.errors.map((item) => JSON.stringify(item.error)),
          'jsonb',
        )}
      ) AS e(line_no, error)
      ON CONFLICT DO NOTHING
    `);
  }
  await tx.query(sql.unsafe`
    UPDATE bulk_jobs SET
      status = 'running',
      started_at = coalesce(started_at, now()),
      next_line = ${progress.nextLine},
      saved = saved + ${progress.saved},
      failed = failed + ${progress.errors.length}
    WHERE id = ${jobId}
  `);
}

export async function finishBulkJob(
  tx: DatabaseTransactionConnection,
  jobId: string,
  status: 'completed' | 'failed',
  error: string | null,
) {
  await tx.query(sql.unsafe`
    UPDATE bulk_jobs SET status = ${status}, error = ${error}, finished_at = now() WHERE id = ${jobId}
  `);
  await tx.query(sql.unsafe`DELETE FROM bulk_lines WHERE job_id = ${jobId}`);
}

export async function listBulkErrors(db: CommonQueryMethods, jobId: string, afterLine: number, limit: number) {
  return db.any(sql.type(z.object({ line_no: z.number(), error: z.unknown() }))`
    SELECT line_no, error FROM bulk_errors
    WHERE job_id = ${jobId} AND line_no > ${afterLine}
    ORDER BY line_no
    LIMIT ${limit}
  `);
}

export async function unfinishedBulkJobs(db: CommonQueryMethods, limit: number): Promise<readonly string[]> {
  return db.anyFirst(sql.type(z.object({ id: z.string() }))`
    SELECT id FROM bulk_jobs WHERE status IN ('queued', 'running') ORDER BY created_at LIMIT ${limit}
  `);
}

/**
 * Fresh planner statistics for the tables a bulk file grows. A new shop's
 * first catalogue takes a language from no rows to millions in minutes, far
 * faster than autovacuum's analyze follows, and with statistics that still
 * say "no rows here" the planner walks whole languages for batch lookups.
 */
export async function refreshPlannerStatistics(db: CommonQueryMethods): Promise<void> {
  await db.query(sql.unsafe`ANALYZE records, links`);
}
