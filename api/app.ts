import Router from '@koa/router';
import type { Queue } from 'bullmq';
import Koa from 'koa';
import type { Logger } from 'pino';
import { RequestLimiter } from '../auth/request-limiter.js';
import { SignInGuard } from '../auth/sign-in.guard.js';
import { TokenIssueLimiter } from '../auth/token-issue.limiter.js';
import type { Config } from '../platform/config.js';
import type { RedisClient } from '../platform/redis.js';
import type { AppState } from './context.js';
import { createApiMetrics } from './metrics.js';
import { adminAreaMiddleware } from './middleware/admin-auth.middleware.js';
import { compressMiddleware } from './middleware/compress.middleware.js';
import { errorMiddleware } from './middleware/error.middleware.js';
import { queueDashboardMiddleware } from './middleware/queue-dashboard.middleware.js';
import { requestLogMiddleware } from './middleware/request-log.middleware.js';
import { adminRouter } from './routes/admin.router.js';
import { docsRouter } from './routes/docs.router.js';
import { healthRouter } from './routes/health.router.js';
import { metricsRouter } from './routes/metrics.router.js';
import { oauthRouter, TOKEN_METHOD_ERRORS, TOKEN_PATH } from './routes/oauth.router.js';
import { v1Router } from './routes/v1.router.js';
import { type V2Dependencies, v2Router } from './routes/v2.router.js';

/** What the API is built from: the process's pools, connections and per-process objects (the v2 router's among them). */
export interface AppDependencies
  extends Pick<V2Dependencies, 'db' | 'copyPool' | 'verifier' | 'notifier' | 'writer' | 'languages' | 'reads' | 'positions' | 'waiter'> {
  config: Config;
  redis: RedisClient;
  /** The request limiter's own connection: the limits of one tick's requests go to Redis in one script call. */
  limitsRedis: RedisClient;
  logger: Logger;
  queues: Queue[];
}

export function createApp(deps: AppDependencies): Koa<AppState> {
  // Behind TRUST_PROXY_HOPS proxies the client's address is the one the outermost of them saw (the first
  // of the last TRUST_PROXY_HOPS entries of X-Forwarded-For; sign-in limits count per address); with none,
  // it is the peer's, and X-Forwarded-For is ignored (anyone can send it).
  const app = new Koa<AppState>({ proxy: deps.config.TRUST_PROXY_HOPS > 0, maxIpsCount: deps.config.TRUST_PROXY_HOPS });
  // Errors are answered by errorMiddleware; Koa's own handler would only log them twice.
  app.silent = true;

  // The replicas' pools and caches are opened when each first answers: counted as they are at scrape time.
  const readTargets = () => deps.reads.targets();
  const metrics = createApiMetrics({
    db: deps.db,
    copyPool: deps.copyPool,
    writePool: deps.writer.pool,
    writerStats: deps.writer.stats,
    readPool: deps.reads.primary.reader.pool,
    pages: () => readTargets().map((target) => target.reader.pages),
    anchors: () => readTargets().map((target) => target.caches.anchors.stats),
    reads: deps.reads,
    positions: deps.positions,
    queues: deps.queues,
    logger: deps.logger,
    waiter: deps.waiter,
  });
  const limiter = deps.config.RATE_LIMIT_ENABLED
    ? new RequestLimiter(deps.limitsRedis, {
        prefix: deps.config.QUEUE_PREFIX,
        defaults: { rps: deps.config.RATE_LIMIT_RPS, burst: deps.config.RATE_LIMIT_BURST },
        onRefused: () => metrics.limits.refused.inc({ limiter: 'account' }),
        // Debug only: while Redis is away every request would log it; the metric is the signal.
        onUnavailable: (error) => {
          metrics.limits.unavailable.inc({ limiter: 'account' });
          deps.logger.debug({ err: error.message }, 'request limit not checked');
        },
      })
    : undefined;
  const signInGuard = (name: 'oauth_token' | 'admin') =>
    new SignInGuard(deps.redis, {
      prefix: deps.config.QUEUE_PREFIX,
      name,
      subjectLimit: deps.config.AUTH_FAILURE_LIMIT,
      addressLimit: deps.config.AUTH_ADDRESS_FAILURE_LIMIT,
      windowS: deps.config.AUTH_FAILURE_WINDOW_S,
      onRefused: () => metrics.limits.refused.inc({ limiter: name }),
      onUnavailable: (error) => {
        metrics.limits.unavailable.inc({ limiter: name });
        deps.logger.debug({ err: error.message, limiter: name }, 'sign-in limit not checked');
      },
    });
  app.use(requestLogMiddleware(deps.logger, metrics.http));
  app.use(errorMiddleware);
  // Inside the error middleware: error bodies are small and go as they are.
  app.use(compressMiddleware());
  // Before every router and the dashboard, so nothing under /admin is reachable without credentials.
  app.use(adminAreaMiddleware(deps.config.ADMIN_USER, deps.config.ADMIN_PASSWORD, signInGuard('admin')));
  app.use(queueDashboardMiddleware(deps.queues, deps.db));

  const uploads = {
    perAccount: deps.config.BULK_UPLOADS_PER_ACCOUNT,
    idleTimeoutMs: deps.config.BULK_IDLE_TIMEOUT_MS,
    maxBytes: deps.config.BULK_MAX_BYTES,
  };
  const interfaceDeps = {
    db: deps.db,
    copyPool: deps.copyPool,
    verifier: deps.verifier,
    notifier: deps.notifier,
    writer: deps.writer,
    languages: deps.languages,
    reads: deps.reads,
    positions: deps.positions,
    uploads,
    bodyTimeoutMs: deps.config.BODY_TIMEOUT_MS,
  };
  // Each request is matched against the routes of its own part only, picked by its path's prefix: @koa/router
  // tests every layer of a router against the path, and allocates for each (a debug call's arguments), so one
  // router holding every route made each request pay for all of them. The rest (health, admin, metrics, docs)
  // share one. Each part runs one routing middleware
  // and one allowedMethods, as one router did. The token endpoint is a part of its own: its wrong methods are
  // answered in the OAuth error shape.
  const rest = new Router<AppState>();
  for (const router of [
    healthRouter(deps.db, deps.redis),
    adminRouter({ config: deps.config, db: deps.db, queues: deps.queues, notifier: deps.notifier }),
    // Operations: Prometheus scrape and the API description.
    metricsRouter(metrics.registry),
    docsRouter(),
  ]) {
    rest.use(router.routes());
  }
  app.use(
    routeByPrefix(
      [
        // Case-insensitive, as the routers' own matching is.
        [/^\/api\/v1(?:\/|$)/i, v1Router({ ...interfaceDeps, limiter })],
        [
          /^\/api\/v2(?:\/|$)/i,
          v2Router({
            ...interfaceDeps,
            waiter: deps.waiter,
            limiter,
            webhookAllowPrivate: deps.config.WEBHOOK_ALLOW_PRIVATE,
          }),
        ],
        [
          TOKEN_PATH,
          oauthRouter({
            db: deps.db,
            tokenTtlSeconds: deps.config.TOKEN_TTL_SECONDS,
            bodyTimeoutMs: deps.config.BODY_TIMEOUT_MS,
            signInGuard: signInGuard('oauth_token'),
            issueLimiter: new TokenIssueLimiter(deps.redis, {
              prefix: deps.config.QUEUE_PREFIX,
              limit: deps.config.TOKEN_ISSUE_LIMIT,
              windowS: deps.config.TOKEN_ISSUE_WINDOW_S,
              onRefused: () => metrics.limits.refused.inc({ limiter: 'token_issue' }),
              onUnavailable: (error) => {
                metrics.limits.unavailable.inc({ limiter: 'token_issue' });
                deps.logger.debug({ err: error.message }, 'token issue limit not checked');
              },
            }),
          }),
          TOKEN_METHOD_ERRORS,
        ],
      ],
      rest,
    ),
  );
  return app;
}

type Routing = ReturnType<Router<AppState>['routes']>;
type AllowedMethodsOptions = Parameters<Router<AppState>['allowedMethods']>[0];

/** The routes and allowedMethods (with a part's own options) of the first router whose prefix the path has, or of `rest`. */
function routeByPrefix(parts: ReadonlyArray<readonly [RegExp, Router<AppState>, AllowedMethodsOptions?]>, rest: Router<AppState>): Routing {
  const routing = (router: Router<AppState>, options?: AllowedMethodsOptions): Routing => {
    const routes = router.routes();
    const allowedMethods = router.allowedMethods(options);
    // allowedMethods reads what routes() left on the context (its matched layers), as it would after it in a chain.
    return (ctx, next) => routes(ctx, () => allowedMethods(ctx as Parameters<typeof allowedMethods>[0], next));
  };
  const routed = parts.map(([prefix, router, options]) => [prefix, routing(router, options)] as const);
  const others = routing(rest);
  const dispatch: Routing = (ctx, next) => {
    for (const [prefix, route] of routed) if (prefix.test(ctx.path)) return route(ctx, next);
    return others(ctx, next);
  };
  // What the app serves, for whoever reads it off the middleware (the API description's test), as routes() shows its router.
  return Object.assign(dispatch, { routers: [...parts.map(([, router]) => router), rest] });
}
