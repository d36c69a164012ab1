import Router from '@koa/router';
import type { Queue } from 'bullmq';
import { z } from 'zod';
import { bulkJobErrorsForAdmin, listBulkJobsForAdmin } from '../../bulk/bulk-admin.service.js';
import { parseOrThrow } from '../../catalogue/validation.js';
import type { Config } from '../../platform/config.js';
import type { Database } from '../../platform/db.js';
import { HttpStatusError, RecordNotFoundError, RetryShortlyError, ValidationError } from '../../platform/errors.js';
import { accountOverview } from '../../sync/account-overview.repository.js';
import { AuditHorizonTimeoutError, listAuditEntries } from '../../sync/audit.repository.js';
import type { OutboxNotifier } from '../../sync/outbox.notifier.js';
import { discardSetAside, listSetAsideChanges, retrySetAside } from '../../sync/set-aside.service.js';
import { syncStatus } from '../../sync/status.repository.js';
import type { AppContext, AppState } from '../context.js';
import { adminAuthMiddleware, adminUserOf } from '../middleware/admin-auth.middleware.js';
import { bodyMiddleware } from '../middleware/body.middleware.js';
import { ADMIN_HOME_PAGE } from '../pages/admin-home.page.js';
import { BULK_JOBS_PAGE } from '../pages/bulk-jobs.page.js';
import type { AdminPage } from '../pages/page-kit.js';
import { SET_ASIDE_PAGE } from '../pages/set-aside.page.js';
import { AUDIT_DEFAULT_LIMIT, auditQuerySchema, setAsideQuerySchema, setAsideRetryAllSchema } from '../schemas/admin.schema.js';
import { accountsQuerySchema, adminBulkJobsQuerySchema, bulkErrorsQuerySchema } from '../schemas/admin-overview.schema.js';

export interface AdminDependencies {
  config: Config;
  db: Database;
  queues: Queue[];
  /** Wakes the applier of a language whose set-aside changes were put back in line. */
  notifier: OutboxNotifier;
}

/**
 * State-changing admin calls must say they send JSON: a page on another site
 * can make a browser send the cached Basic credentials with a form POST, but
 * not with this content type (that needs a CORS preflight, never granted).
 */
function requireJson(ctx: AppContext) {
  if (ctx.request.type !== 'application/json') throw new HttpStatusError(415, 'Unsupported content type: send application/json');
}

/** A change's `seq` from the path; anything but a whole number is the caller's mistake (interface §9.3). */
function seqParam(ctx: AppContext): number {
  const value = ctx.params['seq'] ?? '';
  if (!/^\d{1,18}$/.test(value) || !Number.isSafeInteger(Number(value))) throw new ValidationError('invalid_parameters', ['seq']);
  return Number(value);
}

/** The filters and page size every admin list takes, from its query. */
const listFilterOf = (query: { account?: string | undefined; language_id?: string | undefined; limit?: number | undefined }) => ({
  account: query.account,
  languageId: query.language_id,
  limit: query.limit ?? AUDIT_DEFAULT_LIMIT,
});

function servePage(ctx: AppContext, page: AdminPage) {
  ctx.set('Content-Security-Policy', page.csp);
  ctx.set('Cache-Control', 'no-store');
  ctx.type = 'html';
  ctx.body = page.html;
}

/** A bulk file's id from the path: a uuid, or the caller's mistake (interface §9.3). */
function bulkJobParam(ctx: AppContext): string {
  const value = ctx.params['id'] ?? '';
  if (!z.string().uuid().safeParse(value).success) throw new ValidationError('invalid_parameters', ['id']);
  return value;
}

export function adminRouter({ config, db, notifier }: AdminDependencies) {
  const router = new Router<AppState>({ prefix: '/admin' });
  // The app guards all of /admin already (adminAreaMiddleware); this keeps the router safe when mounted on its own.
  router.use(adminAuthMiddleware(config.ADMIN_USER, config.ADMIN_PASSWORD));
  const body = bodyMiddleware({ timeoutMs: config.BODY_TIMEOUT_MS });

  /** What counts is defined in sync/status.repository.ts. */
  router.get('/api/sync-status', async (ctx: AppContext) => {
    ctx.body = await syncStatus(db);
  });

  router.get('/api/audit', async (ctx: AppContext) => {
    const query = parseOrThrow(auditQuerySchema, { ...ctx.query });
    try {
      const page = await listAuditEntries(db, {
        ...listFilterOf(query),
        kind: query.kind,
        recordId: query.record_id,
        after: query.after ?? 0,
      });
      ctx.body = { data: page.entries, next_after: page.nextAfter };
    } catch (error) {
      if (error instanceof AuditHorizonTimeoutError) throw new RetryShortlyError('The audit log is being written; retry shortly');
      throw error;
    }
  });

  router.get('/api/set-aside', async (ctx: AppContext) => {
    const query = parseOrThrow(setAsideQuerySchema, { ...ctx.query });
    ctx.body = await listSetAsideChanges(db, { ...listFilterOf(query), kind: query.kind, after: query.after ?? 0 });
  });

  const retried = (ctx: AppContext, result: { seqs: number[]; langKeys: number[] }) => {
    for (const langKey of result.langKeys) notifier.notify(langKey, ctx.state.requestId);
    ctx.state.logger.info({ admin: adminUserOf(ctx), retried: result.seqs.length }, 'set-aside changes put back in line');
    ctx.body = { retried: result.seqs };
  };

  router.post('/api/set-aside/retry', body, async (ctx: AppContext) => {
    requireJson(ctx);
    const filter = parseOrThrow(setAsideRetryAllSchema, ctx.request.body ?? {});
    retried(ctx, await retrySetAside(db, { account: filter.account, languageId: filter.language_id, kind: filter.kind }));
  });

  router.post('/api/set-aside/:seq/retry', body, async (ctx: AppContext) => {
    requireJson(ctx);
    const result = await retrySetAside(db, { seq: seqParam(ctx) });
    if (result.seqs.length === 0) throw new RecordNotFoundError('Set-aside change');
    retried(ctx, result);
  });

  router.delete('/api/set-aside/:seq', async (ctx: AppContext) => {
    const discarded = await discardSetAside(db, seqParam(ctx), { user: adminUserOf(ctx), requestId: ctx.state.requestId });
    if (!discarded) throw new RecordNotFoundError('Set-aside change');
    ctx.state.logger.info({ admin: adminUserOf(ctx), seq: discarded.seq }, 'set-aside change discarded');
    ctx.body = { discarded };
  });

  router.get('/api/accounts', async (ctx: AppContext) => {
    const query = parseOrThrow(accountsQuerySchema, { ...ctx.query });
    ctx.body = { data: await accountOverview(db, { account: query.account }) };
  });

  router.get('/api/bulk-jobs', async (ctx: AppContext) => {
    const query = parseOrThrow(adminBulkJobsQuerySchema, { ...ctx.query });
    ctx.body = await listBulkJobsForAdmin(db, { ...listFilterOf(query), status: query.status, before: query.before });
  });

  router.get('/api/bulk-jobs/:id/errors', async (ctx: AppContext) => {
    const id = bulkJobParam(ctx);
    const query = parseOrThrow(bulkErrorsQuerySchema, { ...ctx.query });
    ctx.body = await bulkJobErrorsForAdmin(db, id, { after: query.after ?? 0, limit: query.limit ?? AUDIT_DEFAULT_LIMIT });
  });

  router.get('/', (ctx: AppContext) => {
    servePage(ctx, ADMIN_HOME_PAGE);
  });

  router.get('/bulk-jobs', (ctx: AppContext) => {
    servePage(ctx, BULK_JOBS_PAGE);
  });

  router.get('/set-aside', (ctx: AppContext) => {
    servePage(ctx, SET_ASIDE_PAGE);
  });

  return router;
}
