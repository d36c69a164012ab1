import { type CommonQueryMethods, type DatabaseTransactionConnection, sql } from 'slonik';
import { z } from 'zod';
import { unparsedRows } from '../platform/db.js';
import { appliedThroughOf } from '../sync/outbox.repository.js';

export const bulkJobRow = z.object({
  id: z.string(),
  account_id: z.number(),
  lang_key: z.number(),
  language_id: z.string(),
  client_id: z.string(),
  request_id: z.string().nullable(),
  /** `receiving` while the upload is being stored: no read shows such a job and no worker runs it. */
  status: z.enum(['receiving', 'queued', 'running', 'completed', 'failed']),
  /** The interface whose bodies the file's lines are. */
  api_version: z.enum(['v1', 'v2']),
  lines: z.number(),
  next_line: z.number(),
  saved: z.number(),
  failed: z.number(),
  error: z.string().nullable(),
  created_at: z.string(),
  started_at: z.string().nullable(),
  finished_at: z.string().nullable(),
});
export type BulkJobRow = z.infer<typeof bulkJobRow>;

const columns = sql.fragment`
  id, account_id, lang_key, language_id, client_id, request_id, status, api_version, lines, next_line, saved, failed, error,
  created_at, started_at, finished_at
`;

/**
 * Lines of each job whose effects (stubs, links, cascades, audit) are applied:
 * those up to the job's last mark below the language's oldest pending change.
 * A set-aside change does not hold a job back (it is counted in sync-status).
 */
export async function linesApplied(db: CommonQueryMethods, langKey: number, jobIds: readonly string[]): Promise<Map<string, number>> {
  if (jobIds.length === 0) return new Map();
  const rows = await db.any(sql.type(z.object({ job_id: z.string(), lines_applied: z.number() }))`
    WITH oldest AS (
      SELECT coalesce(
        (
          SELECT o.seq FROM outbox o
          WHERE o.lang_key = ${langKey} AND o.failed_at IS NULL
            -- From the applier's position: the entries of applied changes before it are not walked.
            AND o.seq > ${appliedThroughOf(langKey)}
          ORDER BY o.seq LIMIT 1
        ),
        9223372036854775807
      ) AS seq
    )
    SELECT j.id::text AS job_id,
      coalesce((
        SELECT max(m.lines_done) FROM bulk_marks m, oldest
        WHERE m.job_id = j.id AND m.seq_bound < oldest.seq
      ), 0) AS lines_applied
    FROM unnest(${sql.array(jobIds, 'uuid')}) AS j(id)
  `);
  return new Map(rows.map((row) => [row.job_id, row.lines_applied]));
}

/** A language's jobs, newest first, and how many there are. */
export async function listBulkJobs(
  db: CommonQueryMethods,
  accountId: number,
  langKey: number,
  page: { offset: number; limit: number },
): Promise<{ jobs: readonly BulkJobRow[]; total: number }> {
  const total = await db.oneFirst(sql.type(z.object({ total: z.number() }))`
    SELECT count(*)::int8 AS total FROM bulk_jobs WHERE lang_key = ${langKey} AND account_id = ${accountId} AND status <> 'receiving'
  `);
  const jobs = await db.any(sql.type(bulkJobRow)`
    SELECT ${columns} FROM bulk_jobs
    WHERE lang_key = ${langKey} AND account_id = ${accountId} AND status <> 'receiving'
    ORDER BY created_at DESC, id DESC
    OFFSET ${page.offset} LIMIT ${page.limit}
  `);
  return { jobs, total };
}

export async function findBulkJob(db: CommonQueryMethods, accountId: number, langKey: number, jobId: string): Promise<BulkJobRow | null> {
  return db.maybeOne(sql.type(bulkJobRow)`
    SELECT ${columns} FROM bulk_jobs
    WHERE id = ${jobId} AND account_id = ${accountId} AND lang_key = ${langKey} AND status <> 'receiving'
  `);
}

export interface NewBulkJob {
  id: string;
  accountId: number;
  langKey: number;
  languageId: string;
  clientId: string;
  requestId: string;
  apiVersion: 'v1' | 'v2';
}

/**
 * Creates a job in `receiving`, leased for `leaseSeconds`, unless the account
 * already has `maxUploads` uploads being received (by any API process).
 * @returns whether it was opened; when not, the seconds until the earliest
 * of the account's leases ends (its place frees then unless it is renewed).
 */
export async function openReceivingJob(
  db: CommonQueryMethods,
  job: NewBulkJob,
  limits: { maxUploads: number; leaseSeconds: number },
): Promise<{ opened: true } | { opened: false; retryAfterS: number }> {
  return db.transaction(async (tx) => {
    // Uploads of one account are counted one at a time (the account row's lock, which no foreign key check waits for).
    await tx.query(sql.unsafe`SELECT 1 FROM accounts WHERE id = ${job.accountId} FOR NO KEY UPDATE`);
    const { receiving, free_in_s } = await tx.one(sql.type(z.object({ receiving: z.number(), free_in_s: z.number() }))`
      SELECT count(*)::int8 AS receiving,
        coalesce(ceil(extract(epoch FROM min(receiving_until) - now())), 1)::int8 AS free_in_s
      FROM bulk_jobs
      WHERE account_id = ${job.accountId} AND status = 'receiving' AND receiving_until > now()
    `);
    if (receiving >= limits.maxUploads) return { opened: false, retryAfterS: Math.max(1, free_in_s) };
    await tx.query(sql.unsafe`
      INSERT INTO bulk_jobs (id, account_id, lang_key, language_id, client_id, request_id, status, api_version, receiving_until)
      VALUES (${job.id}, ${job.accountId}, ${job.langKey}, ${job.languageId}, ${job.clientId}, ${job.requestId}, 'receiving',
        ${job.apiVersion}, now() + make_interval(secs => ${limits.leaseSeconds}))
    `);
    return { opened: true };
  });
}

/** Extends the lease of a job still being received. */
export async function renewReceivingJob(db: CommonQueryMethods, jobId: string, leaseSeconds: number): Promise<void> {
  await db.query(sql.unsafe`
    UPDATE bulk_jobs SET receiving_until = now() + make_interval(secs => ${leaseSeconds})
    WHERE id = ${jobId} AND status = 'receiving'
  `);
}

/**
 * The whole file is stored: the job is queued with its line count.
 * @returns the job, or null when it was removed meanwhile (its lease ran out).
 */
export async function finishReceivingJob(db: CommonQueryMethods, jobId: string, lines: number): Promise<BulkJobRow | null> {
  return db.maybeOne(sql.type(bulkJobRow)`
    UPDATE bulk_jobs SET status = 'queued', lines = ${lines}, receiving_until = NULL
    WHERE id = ${jobId} AND status = 'receiving'
    RETURNING ${columns}
  `);
}

/** Removes a job whose upload broke, with the lines stored so far. */
export async function discardReceivingJob(db: CommonQueryMethods, jobId: string): Promise<void> {
  await db.query(sql.unsafe`DELETE FROM bulk_jobs WHERE id = ${jobId} AND status = 'receiving'`);
}

/**
 * How long after its lease ended an upload is taken for abandoned: its place
 * is free from the lease's end, but an upload whose API process only could
 * not renew for a while (Postgres restarting, a stalled process) is not
 * removed under it.
 */
const ABANDONED_AFTER_S = 20;

/** Removes jobs whose upload was abandoned (its API process died): their lease ran out ABANDONED_AFTER_S ago. */
export async function discardAbandonedUploads(db: CommonQueryMethods, limit: number): Promise<number> {
  const removed = await db.anyFirst(sql.type(z.object({ id: z.string() }))`
    DELETE FROM bulk_jobs WHERE id IN (
      SELECT id FROM bulk_jobs
      WHERE status = 'receiving' AND receiving_until < now() - make_interval(secs => ${ABANDONED_AFTER_S})
      ORDER BY receiving_until LIMIT ${limit}
    ) AND status = 'receiving' AND receiving_until < now() - make_interval(secs => ${ABANDONED_AFTER_S})
    RETURNING id
  `);
  return removed.length;
}

/** How far the worker is through a job's file, for the queue job's progress. */
export async function bulkJobProgress(db: CommonQueryMethods, jobId: string) {
  return db.maybeOne(sql.type(z.object({ lines: z.number(), lines_stored: z.number(), status: z.string() }))`
    SELECT lines, saved + failed AS lines_stored, status FROM bulk_jobs WHERE id = ${jobId}
  `);
}

const bulkJobTurnRow = z.object({ lang_key: z.number(), in_turn: z.boolean() });

/**
 * The language a bulk job writes to, and whether it is its account's turn:
 * an account's files are applied one at a time, oldest first, so accounts
 * take turns file against file (fair share). Null when there is no such job.
 */
export async function bulkJobTurn(db: CommonQueryMethods, jobId: string): Promise<z.infer<typeof bulkJobTurnRow> | null> {
  return db.maybeOne(sql.type(bulkJobTurnRow)`
    SELECT j.lang_key, NOT EXISTS (
      SELECT 1 FROM bulk_jobs o
      WHERE o.status IN ('queued', 'running') AND o.account_id = j.account_id AND (o.created_at, o.id) < (j.created_at, j.id)
    ) AS in_turn
    FROM bulk_jobs j WHERE j.id = ${jobId}
  `);
}

export async function lockBulkJob(tx: DatabaseTransactionConnection, jobId: string): Promise<BulkJobRow | null> {
  return tx.maybeOne(sql.type(bulkJobRow)`SELECT ${columns} FROM bulk_jobs WHERE id = ${jobId} FOR UPDATE`);
}

const bulkLine = z.object({ line_no: z.number(), line: z.string() });
/** A batch's lines (a thousand at a time): typed, not parsed (platform/db.ts, unparsedRows). */
const bulkLineRows = unparsedRows(bulkLine);

/**
 * The next lines after `after`, at most `limit`, and only as many as fit in
 * `maxBytes` (as stored; at least one line). Line numbers are the file's
 * (blank lines leave gaps), so the batch is read as a range of numbers: an
 * index range the planner cannot turn into a scan of the whole remaining file,
 * however stale the statistics of this fast-growing table are. Only when that
 * range is empty is the next line looked up beyond it. The sizes are read from
 * the index range first, without the lines themselves.
 */
export async function readBulkLines(tx: CommonQueryMethods, jobId: string, after: number, limit: number, maxBytes: number) {
  let last = await tx.maybeOneFirst(sql.type(z.object({ last: z.number().nullable() }))`
    SELECT max(line_no) AS last FROM (
      SELECT line_no, sum(pg_column_size(line)) OVER (ORDER BY line_no) - pg_column_size(line) AS bytes_before
      FROM bulk_lines
      WHERE job_id = ${jobId} AND line_no > ${after} AND line_no <= ${after + limit}
    ) sized
    WHERE bytes_before < ${maxBytes}
  `);
  if (last === null) {
    // A gap of blank lines wider than the range: the next line beyond it, alone.
    last = await tx.maybeOneFirst(sql.type(z.object({ line_no: z.number() }))`
      SELECT line_no FROM bulk_lines WHERE job_id = ${jobId} AND line_no > ${after} ORDER BY line_no LIMIT 1
    `);
    if (last === null) return [];
  }
  return tx.any(sql.type(bulkLineRows)`
    SELECT line_no, line FROM bulk_lines
    WHERE job_id = ${jobId} AND line_no > ${after} AND line_no <= ${last}
    ORDER BY line_no
  `);
}

/**
 * Counts a failed attempt at the job's next batch (one that no line's content
 * explains, with the database up). At `maxAttempts` the job ends `failed`,
 * saying where it stopped. Returns the attempt, or null when the job is gone.
 */
export async function recordBulkBatchFailure(db: CommonQueryMethods, jobId: string, maxAttempts: number): Promise<number | null> {
  return db.transaction(async (tx) => {
    const counted = await tx.maybeOne(sql.type(z.object({ attempts: z.number(), ended: z.boolean() }))`
      UPDATE bulk_jobs SET
        attempts = attempts + 1,
        status = CASE WHEN attempts + 1 >= ${maxAttempts} THEN 'failed' ELSE status END,
        finished_at = CASE WHEN attempts + 1 >= ${maxAttempts} THEN now() ELSE finished_at END,
        error = CASE WHEN attempts + 1 >= ${maxAttempts}
          THEN 'The service could not apply the lines after line ' || next_line || ' (' || (attempts + 1)
            || ' attempts); the lines up to it are applied. Upload the rest of the file again.'
          ELSE error END
      WHERE id = ${jobId} AND status IN ('queued', 'running')
      RETURNING attempts, status = 'failed' AS ended
    `);
    if (counted?.ended) await tx.query(sql.unsafe`DELETE FROM bulk_lines WHERE job_id = ${jobId}`);
    return counted?.attempts ?? null;
  });
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
  // The mark's bound is read after this batch took its write numbers, so it is at or above all of them.
  await tx.query(sql.unsafe`
    WITH job AS (
      UPDATE bulk_jobs SET
        status = 'running',
        started_at = coalesce(started_at, now()),
        next_line = ${progress.nextLine},
        saved = saved + ${progress.saved},
        failed = failed + ${progress.errors.length},
        attempts = 0
      WHERE id = ${jobId}
      RETURNING saved + failed AS lines_done
    )
    INSERT INTO bulk_marks (job_id, lines_done, seq_bound)
    SELECT ${jobId}, job.lines_done, (SELECT last_value FROM write_seq) FROM job
    ON CONFLICT DO NOTHING
  `);
}

/**
 * A file's first slice has begun: `running` from now, with the time it began
 * (the batch's own commit would stamp the time its transaction began, which
 * for a file taken in one long batch is its end as well).
 */
export async function markBulkJobStarted(db: CommonQueryMethods, jobId: string): Promise<void> {
  await db.query(sql.unsafe`
    UPDATE bulk_jobs SET status = 'running', started_at = clock_timestamp() WHERE id = ${jobId} AND status = 'queued'
  `);
}

/** Ends the job; its finish is stamped when it is written, not when its batch's transaction began. */
export async function finishBulkJob(
  tx: DatabaseTransactionConnection,
  jobId: string,
  status: 'completed' | 'failed',
  error: string | null,
) {
  await tx.query(sql.unsafe`
    UPDATE bulk_jobs SET status = ${status}, error = ${error}, finished_at = clock_timestamp() WHERE id = ${jobId}
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

/**
 * The unfinished files whose turn it is: each account's oldest (see
 * bulkJobTurn), oldest first. The sweeper queues a slice of each, so the
 * bulk queue holds one slice per account and serves accounts in turn.
 */
export async function bulkJobsInTurn(db: CommonQueryMethods, limit: number): Promise<readonly string[]> {
  return db.anyFirst(sql.type(z.object({ id: z.string() }))`
    SELECT id FROM (
      SELECT DISTINCT ON (account_id) id, created_at FROM bulk_jobs
      WHERE status IN ('queued', 'running')
      ORDER BY account_id, created_at, id
    ) oldest
    ORDER BY created_at, id
    LIMIT ${limit}
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
