import Router from '@koa/router';
import type { Redis } from 'ioredis';
import { sql } from 'slonik';
import type { Database } from '../../platform/db.js';
import type { AppContext, AppState } from '../context.js';

const withTimeout = <T>(promise: Promise<T>, ms: number) =>
  Promise.race([promise, new Promise<never>((_, reject) => setTimeout(() => reject(new Error('timeout')), ms).unref())]);

export function healthRouter(db: Database, redis: Redis) {
  const router = new Router<AppState>();
  router.get('/healthz', (ctx: AppContext) => {
    ctx.body = { status: 'ok' };
  });
  router.get('/readyz', async (ctx: AppContext) => {
    const [postgres, redisState] = await Promise.all([
      withTimeout(db.oneFirst(sql.unsafe`SELECT 1`), 2_000).then(
        () => 'ok',
        () => 'unavailable',
      ),
      withTimeout(redis.ping(), 2_000).then(
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
