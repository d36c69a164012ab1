import { type CommonQueryMethods, sql } from 'slonik';
import { z } from 'zod';
import { RecordNotFoundError } from '../platform/errors.js';
import { bulkJobRow, linesApplied, listBulkErrors } from './bulk.repository.js';
import { summariseBulkJob } from './bulk.service.js';

/*
 * Bulk files across accounts, for operators (GET /admin/api/bulk-jobs and the
 * page /admin/bulk-jobs): what a shop sees of its own files, plus the account
 * and language, newest first.
 */

const adminBulkJobRow = bulkJobRow.extend({ account: z.string() });

export interface AdminBulkJobFilter {
  /** The account's name. */
  account?: string;
  languageId?: string;
  status?: string;
  /** Only files listed after this one (the `next_before` of the previous page). */
  before?: string;
  limit: number;
}

export async function listBulkJobsForAdmin(db: CommonQueryMethods, filter: AdminBulkJobFilter) {
  const where = [sql.fragment`TRUE`];
  if (filter.account !== undefined) where.push(sql.fragment`j.account_id = (SELECT id FROM accounts WHERE name = ${filter.account})`);
  if (filter.languageId !== undefined) where.push(sql.fragment`j.language_id = ${filter.languageId}`);
  if (filter.status !== undefined) where.push(sql.fragment`j.status = ${filter.status}`);
  if (filter.before !== undefined)
    where.push(sql.fragment`(j.created_at, j.id) < (SELECT created_at, id FROM bulk_jobs WHERE id = ${filter.before})`);
  // One row more than asked tells whether another page follows.
  const rows = await db.any(sql.type(adminBulkJobRow)`
    SELECT j.id, j.account_id, a.name AS account, j.lang_key, j.language_id, j.client_id, j.request_id, j.status, j.api_version,
      j.lines, j.next_line, j.saved, j.failed, j.error, j.created_at, j.started_at, j.finished_at
    FROM bulk_jobs j JOIN accounts a ON a.id = j.account_id
    WHERE ${sql.join(where, sql.fragment` AND `)}
    ORDER BY j.created_at DESC, j.id DESC
    LIMIT ${filter.limit + 1}
  `);
  const jobs = rows.slice(0, filter.limit);
  // Lines applied are known per language (each language's applier position).
  const applied = new Map<string, number>();
  const byLanguage = new Map<number, string[]>();
  for (const job of jobs) byLanguage.set(job.lang_key, [...(byLanguage.get(job.lang_key) ?? []), job.id]);
  for (const [langKey, ids] of byLanguage) {
    const counts = await linesApplied(db, langKey, ids);
    for (const [id, count] of counts) applied.set(id, count);
  }
  return {
    data: jobs.map((job) => {
      const summary = summariseBulkJob(job, applied.get(job.id) ?? 0);
      return {
        ...summary,
        account: job.account,
        language_id: job.language_id,
        api_version: job.api_version,
        client_id: job.client_id,
        progress: job.lines === 0 ? (job.status === 'completed' ? 100 : 0) : Math.floor((100 * summary.lines_applied) / job.lines),
      };
    }),
    next_before: rows.length > filter.limit ? jobs[jobs.length - 1]!.id : null,
  };
}

/**
 * A page of a file's line errors, in line order.
 * @throws {RecordNotFoundError} ("Bulk job not found")
 */
export async function bulkJobErrorsForAdmin(db: CommonQueryMethods, jobId: string, page: { after: number; limit: number }) {
  const exists = await db.maybeOneFirst(sql.type(z.object({ id: z.string() }))`SELECT id::text AS id FROM bulk_jobs WHERE id = ${jobId}`);
  if (exists === null) throw new RecordNotFoundError('Bulk job');
  const rows = await listBulkErrors(db, jobId, page.after, page.limit + 1);
  const errors = rows.slice(0, page.limit);
  return {
    data: errors.map((item) => ({ line: item.line_no, error: item.error })),
    next_after: rows.length > page.limit ? errors[errors.length - 1]!.line_no : null,
  };
}
