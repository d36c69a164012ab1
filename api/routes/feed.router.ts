import type Router from '@koa/router';
import { readChanges } from '../../feed/feed.service.js';
import type { FeedWaiter } from '../../feed/feed.waiter.js';
import type { Database } from '../../platform/db.js';
import { type AppContext, type AppState, principalOf } from '../context.js';

export interface FeedRouteDependencies {
  db: Database;
  waiter: FeedWaiter;
}

/** GET /api/v2/languages/{language_id}/changes: the language's change feed (interface §22). */
export function addFeedRoutes(router: Router<AppState>, { db, waiter }: FeedRouteDependencies): void {
  router.get('/languages/:language_id/changes', async (ctx: AppContext) => {
    const context = { db, waiter, accountId: principalOf(ctx).accountId };
    const page = await readChanges(context, ctx.params['language_id']!, { ...ctx.query });
    ctx.type = 'application/json';
    ctx.body = page;
  });
}
