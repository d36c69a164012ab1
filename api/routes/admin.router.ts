import Router from '@koa/router';
import type { Queue } from 'bullmq';
import type { Config } from '../../shared/config.js';
import type { Database } from '../../shared/db.js';
import { outboxCounts } from '../../shared/repositories/status.repository.js';
import type { AppContext, AppState } from '../context.js';
import { adminAuthMiddleware } from '../middleware/admin-auth.middleware.js';

export interface AdminDependencies {
  config: Config;
  db: Database;
  queues: Queue[];
}

export function adminRouter({ config, db, queues }: AdminDependencies) {
  const router = new Router<AppState>({ prefix: '/admin' });
  router.use(adminAuthMiddleware(config.ADMIN_USER, config.ADMIN_PASSWORD));

  /** pending: accepted changes whose effects are not applied yet; failed: set-aside changes plus failed jobs. */
  router.get('/api/sync-status', async (ctx: AppContext) => {
    const counts = await outboxCounts(db);
    const failedJobs = await Promise.all(queues.map((queue) => queue.getFailedCount().catch(() => 0)));
    ctx.body = { pending: counts.pending, failed: counts.failed + failedJobs.reduce((sum, count) => sum + count, 0) };
  });

  return router;
}
