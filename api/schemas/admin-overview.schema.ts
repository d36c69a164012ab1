import { z } from '../openapi/zod-openapi.js';
import { accountFilter, accountName, afterFilter, languageFilter, nextAfterOfLastPage, pageLimit } from './admin.schema.js';

/* The admin landing page's counts per account, and bulk files across accounts (interface §9.2). */

export const accountsQuerySchema = z.object({ account: accountFilter('the counts') }).strict();

export const accountOverviewSchema = z
  .object({
    account: accountName,
    languages: z.number().int().openapi({ description: 'Live languages' }),
    records: z.number().int().openapi({ description: 'Live records in its live languages, every kind' }),
    pending: z.number().int().openapi({ description: "The account's part of sync-status `pending`" }),
    set_aside: z.number().int().openapi({ description: 'Changes set aside (see /admin/api/set-aside)' }),
    bulk_files_queued: z.number().int().openapi({ description: 'Bulk files accepted and not started' }),
    bulk_files_running: z.number().int().openapi({ description: 'Bulk files being applied' }),
  })
  .openapi('AccountOverview');

export const accountsSchema = z.object({ data: z.array(accountOverviewSchema) }).openapi('AccountOverviews');

export const BULK_JOB_STATUSES = ['receiving', 'queued', 'running', 'completed', 'failed'] as const;

export const adminBulkJobsQuerySchema = z
  .object({
    account: accountFilter('files'),
    language_id: languageFilter('files'),
    status: z.enum(BULK_JOB_STATUSES).optional().openapi({ description: 'Only files in this state' }),
    before: z
      .string()
      .uuid()
      .optional()
      .openapi({ description: 'Only files listed after this one (the `next_before` of the previous page)' }),
    limit: pageLimit('Files'),
  })
  .strict();

const timestamp = (description: string) => z.string().nullable().openapi({ format: 'date-time', description });

export const adminBulkJobSchema = z
  .object({
    id: z.string().openapi({ format: 'uuid', description: "The file's id, as its shop sees it" }),
    account: accountName,
    language_id: z.string(),
    api_version: z.enum(['v1', 'v2']).openapi({ description: 'The interface whose bodies its lines are' }),
    client_id: z.string().openapi({ description: 'The client that uploaded it' }),
    status: z.enum(BULK_JOB_STATUSES).openapi({ description: '`receiving` while the upload is still arriving' }),
    lines: z.number().int().openapi({ description: 'Lines in the file' }),
    lines_stored: z.number().int().openapi({ description: 'Lines written or refused so far' }),
    lines_applied: z.number().int().openapi({ description: 'Lines whose effects are applied (a refused line has none to wait for)' }),
    saved: z.number().int().openapi({ description: 'Lines written' }),
    failed: z.number().int().openapi({ description: 'Lines refused (their errors: /admin/api/bulk-jobs/{id}/errors)' }),
    progress: z.number().int().min(0).max(100).openapi({ description: 'Per cent of the lines applied' }),
    error: z.string().nullable().openapi({ description: 'Why the file stopped, when it ended `failed`' }),
    created_at: z.string().openapi({ format: 'date-time', description: 'When it was uploaded' }),
    started_at: timestamp('When a worker started it'),
    finished_at: timestamp('When it ended'),
  })
  .openapi('AdminBulkJob');

export const adminBulkJobsPageSchema = z
  .object({
    data: z.array(adminBulkJobSchema),
    next_before: z.string().nullable().openapi({ description: 'Pass as `before` for the next page; null when this is the last' }),
  })
  .openapi('AdminBulkJobs');

export const bulkErrorsQuerySchema = z
  .object({
    after: afterFilter('Only errors of lines after this one (the `next_after` of the previous page)'),
    limit: pageLimit('Errors'),
  })
  .strict();

export const bulkErrorsPageSchema = z
  .object({
    data: z.array(
      z.object({
        line: z.number().int().openapi({ description: 'The line number in the file, as the shop error list gives it' }),
        error: z.unknown().openapi({ description: 'The error body the single request would have answered' }),
      }),
    ),
    next_after: nextAfterOfLastPage,
  })
  .openapi('AdminBulkJobErrors');
