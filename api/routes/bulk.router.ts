import { Readable } from 'node:stream';
import type Router from '@koa/router';
import type pg from 'pg';
import {
  bulkErrorLines,
  listBulkJobsPage,
  presentBulkJob,
  receiveBulk,
  requireBulkJob,
  type UploadLimits,
} from '../../bulk/bulk.service.js';
import { contentCodingOf, tooLargeError } from '../../bulk/upload-body.reader.js';
import { bulkListQuerySchema } from '../../catalogue/list-query.schema.js';
import { parseOrThrow } from '../../catalogue/validation.js';
import type { Database } from '../../platform/db.js';
import { HttpStatusError } from '../../platform/errors.js';
import type { Generation } from '../../records/record.service.js';
import type { OutboxNotifier } from '../../sync/outbox.notifier.js';
import { type AppContext, type AppState, principalOf } from '../context.js';

export interface BulkDependencies {
  db: Database;
  copyPool: pg.Pool;
  notifier: OutboxNotifier;
  uploads: UploadLimits;
}

export const BULK_TYPES = ['application/x-ndjson', 'application/jsonl', 'application/ndjson'];

/**
 * The bulk upload and its job reads on the router of one interface (mounted
 * at /api/v1 or /api/v2): the file's lines are that interface's bodies. v1
 * wraps a job as `{"bulk_job": {...}}`, v2 answers the bare job, as each
 * interface shows its records.
 */
export function addBulkRoutes(router: Router<AppState>, { db, copyPool, notifier, uploads }: BulkDependencies, generation: Generation) {
  const present = (job: unknown) => (generation === 'v1' ? { bulk_job: job } : job);

  router.post('/languages/:language_id/bulk', async (ctx: AppContext) => {
    if (!ctx.is(BULK_TYPES)) throw new HttpStatusError(415, 'Unsupported content type: send application/x-ndjson');
    const coding = contentCodingOf(ctx.get('Content-Encoding') || undefined);
    // A plain body that says it is too large is refused before a byte of it is read.
    if (coding === 'identity' && (ctx.request.length ?? 0) > uploads.maxBytes) throw tooLargeError(uploads.maxBytes);
    const principal = principalOf(ctx);
    const languageId = ctx.params['language_id']!;
    const job = await receiveBulk(
      {
        db,
        copyPool,
        accountId: principal.accountId,
        clientId: principal.clientId,
        requestId: ctx.state.requestId,
        logger: ctx.state.logger,
      },
      languageId,
      ctx.req,
      { ...uploads, coding },
      generation,
    );
    notifier.notifyBulk(job.id, ctx.state.requestId);
    ctx.status = 202;
    ctx.set('Location', `/api/${generation}/languages/${encodeURIComponent(languageId)}/bulk/${job.id}`);
    ctx.body = present(await presentBulkJob(db, job));
  });

  router.get('/languages/:language_id/bulk', async (ctx: AppContext) => {
    const query = parseOrThrow(bulkListQuerySchema, { ...ctx.query });
    ctx.body = await listBulkJobsPage(db, principalOf(ctx).accountId, ctx.params['language_id']!, query.page, query.per_page);
  });

  router.get('/languages/:language_id/bulk/:job_id', async (ctx: AppContext) => {
    const job = await requireBulkJob(db, principalOf(ctx).accountId, ctx.params['language_id']!, ctx.params['job_id']!);
    ctx.body = present(await presentBulkJob(db, job));
  });

  router.get('/languages/:language_id/bulk/:job_id/errors', async (ctx: AppContext) => {
    const job = await requireBulkJob(db, principalOf(ctx).accountId, ctx.params['language_id']!, ctx.params['job_id']!);
    ctx.type = 'application/x-ndjson';
    ctx.body = Readable.from(bulkErrorLines(db, job.id));
  });
}
