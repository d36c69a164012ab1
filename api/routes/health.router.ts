import Router from '@koa/router';
import { sql } from 'slonik';
import type { Database } from '../../platform/db.js';
import { type RedisClient, withinMs } from '../../platform/redis.js';
import type { AppContext, AppState } from '../context.js';

export function healthRouter(db: Database, redis: RedisClient) {
  const router = new Router<AppState>();
  router.get('/healthz', (ctx: AppContext) => {
    ctx.body = { status: 'ok' };
  });
  router.get('/readyz', async (ctx: AppContext) => {
    const [postgres, redisState] = await Promise.all([
      withinMs(db.oneFirst(sql.unsafe`SELECT 1`), 2_000).then(
        () => 'ok',
        () => 'unavailable',
      ),
      withinMs(redis.ping(), 2_000).then(
        () => 'ok',
        () => 'unavailable',
      ),
    ]);
    const ready = postgres === 'ok' && redisState === 'ok';
    ctx.status = ready ? 200 : 503;
    ctx.body = { status: ready ? 'ok' : 'unavailable', postgres, redis: redisState };
  });
  return router;
}
