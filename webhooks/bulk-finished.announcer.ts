import { randomUUID } from 'node:crypto';
import { type CommonQueryMethods, sql } from 'slonik';
import { z } from 'zod';
import { findBulkJob, linesApplied } from '../bulk/bulk.repository.js';
import { summariseBulkJob } from '../bulk/bulk.service.js';
import type { Database } from '../platform/db.js';

/** Bulk jobs announced per sweep at most; the rest on the next. */
const ANNOUNCED_PER_SWEEP = 100;

const unannounced = z.object({
  account_id: z.number(),
  webhook_id: z.string(),
  bulk_job_id: z.string(),
  lang_key: z.number(),
  language_id: z.string(),
});

/**
 * `bulk_job.finished` (interface §23.2): for every active webhook taking it,
 * each bulk job of a language it covers that ended (completed or failed)
 * since the webhook was created becomes one delivery of that language, in
 * line behind the language's earlier deliveries. Found by the sweep rather
 * than told by the bulk code, so every way a job ends is announced, once
 * (a unique index), also after a webhook is enabled again. Only jobs that
 * finished within `withinDays` (the delivered deliveries' retention): an
 * older job's delivery may have been removed, and must not be made again.
 */
export async function announceFinishedBulkJobs(db: Database, withinDays: number): Promise<number> {
  const found = await db.any(sql.type(unannounced)`
    SELECT w.account_id, w.id AS webhook_id, b.id::text AS bulk_job_id, b.lang_key, l.id AS language_id
    FROM webhooks w
    JOIN bulk_jobs b ON b.account_id = w.account_id AND b.finished_at >= w.created_at AND b.status IN ('completed', 'failed')
      AND b.finished_at >= now() - make_interval(days => ${withinDays})
    JOIN languages l ON l.lang_key = b.lang_key AND l.deleted_at IS NULL AND (w.languages IS NULL OR l.id = ANY(w.languages))
    WHERE w.active AND 'bulk_job.finished' = ANY(w.events)
      AND NOT EXISTS (
        SELECT 1 FROM webhook_deliveries d
        WHERE d.account_id = w.account_id AND d.webhook_id = w.id AND d.bulk_job_id = b.id
      )
    ORDER BY b.finished_at
    LIMIT ${ANNOUNCED_PER_SWEEP}
  `);
  for (const row of found) {
    const job = await findBulkJob(db, row.account_id, row.lang_key, row.bulk_job_id);
    if (!job) continue;
    const applied = (await linesApplied(db, row.lang_key, [job.id])).get(job.id) ?? 0;
    const body = JSON.stringify({
      type: 'bulk_job.finished',
      webhook_id: row.webhook_id,
      language_id: row.language_id,
      data: summariseBulkJob(job, applied),
    });
    await insertAnnouncement(db, row, body);
  }
  return found.length;
}

async function insertAnnouncement(db: CommonQueryMethods, row: z.infer<typeof unannounced>, body: string): Promise<void> {
  await db.query(sql.unsafe`
    INSERT INTO webhook_deliveries
      (id, account_id, webhook_id, lang_key, language_id, type, entries, bulk_job_id, body, next_attempt_at, created_at)
    VALUES (${randomUUID()}, ${row.account_id}, ${row.webhook_id}, ${row.lang_key}, ${row.language_id}, 'bulk_job.finished',
            0, ${row.bulk_job_id}, ${body}, now(), clock_timestamp())
    ON CONFLICT DO NOTHING
  `);
}
