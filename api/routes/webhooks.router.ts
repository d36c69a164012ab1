import type Router from '@koa/router';
import type { Database } from '../../platform/db.js';
import { listDeliveries, redeliver } from '../../webhooks/delivery-log.service.js';
import { pingWebhook } from '../../webhooks/ping.service.js';
import {
  getWebhook,
  listWebhooks,
  removeWebhook,
  rotateWebhookSecret,
  saveWebhook,
  type WebhookContext,
} from '../../webhooks/webhook.service.js';
import { type AppContext, type AppState, principalOf } from '../context.js';
import type { bodyMiddleware } from '../middleware/body.middleware.js';

export interface WebhookRouteDependencies {
  db: Database;
  /** WEBHOOK_ALLOW_PRIVATE (interface §23.6). */
  allowPrivate: boolean;
  body: ReturnType<typeof bodyMiddleware>;
}

/** /api/v2/webhooks (interface §23): an account's webhooks. */
export function addWebhookRoutes(router: Router<AppState>, { db, allowPrivate, body }: WebhookRouteDependencies): void {
  const context = (ctx: AppContext): WebhookContext => ({ db, allowPrivate, accountId: principalOf(ctx).accountId });
  const id = (ctx: AppContext) => ctx.params['webhook_id']!;

  router.put('/webhooks', body, async (ctx: AppContext) => {
    ctx.body = await saveWebhook(context(ctx), ctx.request.body);
  });
  router.get('/webhooks', async (ctx: AppContext) => {
    ctx.body = await listWebhooks(context(ctx), { ...ctx.query });
  });
  router.get('/webhooks/:webhook_id', async (ctx: AppContext) => {
    ctx.body = await getWebhook(context(ctx), id(ctx));
  });
  router.delete('/webhooks/:webhook_id', async (ctx: AppContext) => {
    await removeWebhook(context(ctx), id(ctx));
    ctx.status = 204;
  });
  router.post('/webhooks/:webhook_id/rotate-secret', async (ctx: AppContext) => {
    ctx.body = await rotateWebhookSecret(context(ctx), id(ctx));
  });
  router.post('/webhooks/:webhook_id/ping', async (ctx: AppContext) => {
    ctx.body = await pingWebhook(context(ctx), id(ctx));
  });
  router.get('/webhooks/:webhook_id/deliveries', async (ctx: AppContext) => {
    ctx.body = await listDeliveries(context(ctx), id(ctx), { ...ctx.query });
  });
  router.post('/webhooks/:webhook_id/deliveries/:delivery_id/redeliver', async (ctx: AppContext) => {
    await redeliver(context(ctx), id(ctx), ctx.params['delivery_id']!);
    ctx.status = 202;
    // No body (Koa would otherwise answer its status text).
    ctx.body = '';
  });
}
