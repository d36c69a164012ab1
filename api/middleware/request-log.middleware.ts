import { randomUUID } from 'node:crypto';
import type { Next } from 'koa';
import type { Logger } from 'pino';
import type { HttpMetrics } from '../../platform/metrics.js';
import type { AppContext } from '../context.js';
import { isQueueDashboardPath, QUEUE_DASHBOARD_PATH } from './queue-dashboard.middleware.js';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

interface RouteLayer {
  path: string | RegExp;
  methods: string[];
}

/**
 * The route template that served the request (`/api/v1/languages/:language_id/products`),
 * never the raw URL, so metrics and logs group by route and a scan of random
 * paths cannot blow up the number of series.
 */
export function routeLabel(ctx: AppContext): string {
  if (isQueueDashboardPath(ctx.path)) return `${QUEUE_DASHBOARD_PATH}/*`;
  const matched = ((ctx as unknown as { matched?: RouteLayer[] }).matched ?? []).filter((layer) => layer.methods.length > 0);
  const route = [...matched].reverse().find((layer) => layer.methods.includes(ctx.method)) ?? matched.at(-1);
  return route ? String(route.path) : 'unmatched';
}

/**
 * Outermost middleware: takes the request id from X-Request-Id (or makes one)
 * and echoes it; services carry it into the outbox rows and jobs of the
 * request's changes. Once the answer is known, it observes the duration and
 * logs one line (the line's fields are only built when `info` is enabled:
 * this runs on every request). The line names the route template, never the
 * path: a record id in a path can be a customer's email.
 */
export function requestLogMiddleware(logger: Logger, httpMetrics: HttpMetrics) {
  return async (ctx: AppContext, next: Next) => {
    const incoming = ctx.get('x-request-id');
    const requestId = REQUEST_ID.test(incoming) ? incoming : randomUUID();
    ctx.state.requestId = requestId;
    // A child logger costs more than most of a request; it is made only when something logs (errors).
    let child: Logger | undefined;
    Object.defineProperty(ctx.state, 'logger', {
      get: () => {
        child ??= logger.child({ request_id: requestId });
        return child;
      },
      configurable: true,
      enumerable: true,
    });
    ctx.set('X-Request-Id', requestId);
    const started = process.hrtime.bigint();
    try {
      await next();
    } finally {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const route = routeLabel(ctx);
      ctx.state.routePath = route;
      httpMetrics.observe({ method: ctx.method, route, status: String(ctx.status) }, seconds);
      if (logger.isLevelEnabled('info')) {
        logger.info(
          {
            request_id: requestId,
            method: ctx.method,
            route,
            status: ctx.status,
            duration_ms: Math.round(seconds * 1e6) / 1e3,
          },
          'request',
        );
      }
    }
  };
}
