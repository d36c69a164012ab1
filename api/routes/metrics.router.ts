import Router from '@koa/router';
import type { Registry } from 'prom-client';
import { renderMetrics } from '../../platform/metrics.js';
import type { AppContext, AppState } from '../context.js';

/** GET /metrics for Prometheus; open like the health probes, since scrapers carry no credentials. */
export function metricsRouter(registry: Registry) {
  const router = new Router<AppState>();
  router.get('/metrics', async (ctx: AppContext) => {
    const { contentType, body } = await renderMetrics(registry);
    ctx.type = contentType;
    ctx.body = body;
  });
  return router;
}
