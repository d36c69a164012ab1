import Router from '@koa/router';
import type { Queue } from 'bullmq';
import { parseOrThrow } from '../../catalogue/validation.js';
import type { Config } from '../../platform/config.js';
import type { Database } from '../../platform/db.js';
import { HttpStatusError } from '../../platform/errors.js';
import { AuditHorizonTimeoutError, listAuditEntries } from '../../sync/audit.repository.js';
import { syncStatus } from '../../sync/status.repository.js';
import type { AppContext, AppState } from '../context.js';
import { adminAuthMiddleware } from '../middleware/admin-auth.middleware.js';
import { AUDIT_DEFAULT_LIMIT, auditQuerySchema } from '../schemas/admin.schema.js';

export interface AdminDependencies {
  config: Config;
  db: Database;
  queues: Queue[];
}

export function adminRouter({ config, db }: AdminDependencies) {
  const router = new Router<AppState>({ prefix: '/admin' });
  // The app guards all of /admin already (adminAreaMiddleware); this keeps the router safe when mounted on its own.
  router.use(adminAuthMiddleware(config.ADMIN_USER, config.ADMIN_PASSWORD));

  /** What counts is defined in sync/status.repository.ts. */
  router.get('/api/sync-status', async (ctx: AppContext) => {
    ctx.body = await syncStatus(db);
  });

  router.get('/api/audit', async (ctx: AppContext) => {
    const query = parseOrThrow(auditQuerySchema, { ...ctx.query });
    try {
      const page = await listAuditEntries(db, {
        languageId: query.language_id,
        kind: query.kind,
        recordId: query.record_id,
        after: query.after ?? 0,
        limit: query.limit ?? AUDIT_DEFAULT_LIMIT,
      });
      ctx.body = { data: page.entries, next_after: page.nextAfter };
    } catch (error) {
      if (error instanceof AuditHorizonTimeoutError)
        throw new HttpStatusError(503, 'The audit log is being written; retry shortly', { 'Retry-After': '1' });
      throw error;
    }
  });

  return router;
}
