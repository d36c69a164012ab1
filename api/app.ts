import { randomUUID } from 'node:crypto';
import Koa from 'koa';
import type pg from 'pg';
import type Router from '@koa/router';
import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { TokenVerifier } from '../shared/auth.service.js';
import type { Config } from '../shared/config.js';
import type { Database } from '../shared/db.js';
import type { OutboxNotifier } from '../shared/outbox-notifier.js';
import type { AppContext, AppState } from './context.js';
import { errorMiddleware } from './middleware/error.middleware.js';
import { adminRouter } from './routes/admin.router.js';
import { healthRouter } from './routes/health.router.js';
import { oauthRouter } from './routes/oauth.router.js';
import { v1Router } from './routes/v1.router.js';

export interface AppDependencies {
  config: Config;
  db: Database;
  copyPool: pg.Pool;
  redis: Redis;
  logger: Logger;
  verifier: TokenVerifier;
  notifier: OutboxNotifier;
  queues: Queue[];
}

const REQUEST_ID = /^[A-Za-z0-9._:\-]{1,128}$/;

export function createApp(deps: AppDependencies): Koa<AppState> {
  const app = new Koa<AppState>({ proxy: false });
  // Errors are answered by errorMiddleware; Koa's own handler would only log them twice.
  app.silent = true;

  app.use(async (ctx: AppContext, next) => {
    const incoming = ctx.get('x-request-id');
    const requestId = REQUEST_ID.test(incoming) ? incoming : randomUUID();
    ctx.state.requestId = requestId;
    ctx.state.logger = deps.logger.child({ request_id: requestId });
    ctx.set('X-Request-Id', requestId);
    const started = process.hrtime.bigint();
    try {
      await next();
    } finally {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      ctx.state.logger.debug({ method: ctx.method, path: ctx.path, status: ctx.status, ms }, 'request');
    }
  });
  app.use(errorMiddleware);

  const routers: Router<AppState>[] = [
    healthRouter(deps.db, deps.redis),
    oauthRouter(deps.db, deps.config.TOKEN_TTL_SECONDS),
    v1Router({ db: deps.db, copyPool: deps.copyPool, verifier: deps.verifier, notifier: deps.notifier }),
    adminRouter({ config: deps.config, db: deps.db, queues: deps.queues }),
  ];
  for (const router of routers) {
    app.use(router.routes());
    app.use(router.allowedMethods());
  }
  return app;
}
