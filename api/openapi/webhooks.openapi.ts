import type { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import { WEBHOOK_EVENTS, webhookSchema, webhookWriteSchema } from '../../webhooks/webhook.schema.js';
import { json, NO_CONTENT, type Operation, operationsOf, paginated, pathParams, SECURITY, WRITE_ERRORS } from './components.js';
import { z } from './zod-openapi.js';

/* An account's webhooks (interface §23) in the API description; their bodies are webhooks/webhook.schema.ts's. */

const webhookParam = () => pathParams({ webhook_id: 'The webhook id' });

const webhook = webhookSchema
  .extend({
    languages: z.array(z.string()).nullable().openapi({ description: 'The language ids delivered; null: every language, now and later' }),
    kinds: z.array(z.string()).nullable().openapi({ description: 'The body keys delivered; null: every kind' }),
    status: webhookSchema.shape.status.openapi({
      description: '`active`; `failing` (its receiver fails, deliveries are retried); `disabled` (`active` is false)',
    }),
    failing_since: z.string().nullable().openapi({ format: 'date-time', description: 'Since when its deliveries fail' }),
    disabled_reason: z.string().nullable().openapi({ description: 'Why the service disabled it (after 24 hours of failures, or a 410)' }),
    created_at: z.string().openapi({ format: 'date-time' }),
    updated_at: z.string().openapi({ format: 'date-time' }),
    secret: z.string().optional().openapi({
      description: 'Only in the answer that created it: `whsec_` and base64 random bytes, the Standard Webhooks signing key',
    }),
  })
  .openapi('Webhook');

const delivery = z
  .object({
    id: z.string().openapi({ description: 'Sent as `webhook-id`, the same on every attempt' }),
    type: z.string().openapi({ example: 'changes' }),
    language_id: z.string(),
    entries: z.number().int(),
    first_cursor: z.string().nullable().openapi({ description: 'The cursor of its first entry' }),
    last_cursor: z.string().nullable().openapi({ description: 'The cursor of its last entry' }),
    attempts: z.number().int(),
    status: z.enum(['pending', 'delivered', 'failing']),
    last_status_code: z.number().int().nullable(),
    last_error: z.string().nullable(),
    next_attempt_at: z.string().nullable().openapi({ format: 'date-time' }),
    delivered_at: z.string().nullable().openapi({ format: 'date-time' }),
    created_at: z.string().openapi({ format: 'date-time' }),
  })
  .openapi('WebhookDelivery');

const pingResult = z
  .object({
    status_code: z.number().int().nullable().openapi({ description: 'null when nothing answered' }),
    duration_ms: z.number().int(),
    error: z.string().nullable(),
  })
  .openapi('WebhookPing');

const pageQuery = z.object({
  page: z.number().int().min(1).optional().openapi({ default: 1 }),
  per_page: z.number().int().min(1).optional(),
});

export function registerWebhookPaths(registry: OpenAPIRegistry): void {
  const operation = operationsOf(registry, ['v2'], SECURITY.bearer);
  /** An operation on one webhook, which is 404 when the account has none of that id. */
  const onWebhook = (method: Operation['method'], path: string, operationId: string, summary: string, ok: Operation['responses']) =>
    operation({
      method,
      path: `/api/v2/webhooks/{webhook_id}${path}`,
      operationId,
      summary,
      request: { params: webhookParam() },
      responses: ok,
      errors: ['unauthorized', 'recordNotFound', 'serverError'],
    });

  operation({
    method: 'put',
    path: '/api/v2/webhooks',
    operationId: 'v2SaveWebhook',
    summary: 'Create or replace a webhook',
    description: `Deliveries are POSTs signed as Standard Webhooks specifies. \`events\`: ${WEBHOOK_EVENTS.join(', ')}. The URL must be https to a public address. Setting \`active: true\` again resumes where it stopped.`,
    request: {
      body: { required: true, content: json(z.object({ webhook: webhookWriteSchema.openapi('WebhookWrite') }).strict()) },
    },
    responses: { 200: { description: 'The webhook; with `secret` when this created it', content: json(webhook) } },
    errors: WRITE_ERRORS.filter((name) => name !== 'languageNotFound'),
  });
  operation({
    method: 'get',
    path: '/api/v2/webhooks',
    operationId: 'v2ListWebhooks',
    summary: "The account's webhooks, by id (never their secrets)",
    request: { query: pageQuery },
    responses: { 200: { description: 'A page of webhooks', content: json(paginated(webhook)) } },
    errors: ['badRequest', 'unauthorized', 'serverError'],
  });
  onWebhook('get', '', 'v2GetWebhook', 'One webhook (never its secret)', {
    200: { description: 'The webhook', content: json(webhook) },
  });
  onWebhook('delete', '', 'v2DeleteWebhook', 'Delete a webhook, with its deliveries', { 204: NO_CONTENT });
  onWebhook(
    'post',
    '/rotate-secret',
    'v2RotateWebhookSecret',
    'Give the webhook a new secret; the old one keeps signing beside it for 24 hours',
    { 200: { description: 'The webhook with its new `secret`', content: json(webhook) } },
  );
  onWebhook('post', '/ping', 'v2PingWebhook', 'Send `{"type":"ping"}` now, signed like any delivery, and answer what came back', {
    200: { description: "The receiver's answer", content: json(pingResult) },
  });
  operation({
    method: 'get',
    path: '/api/v2/webhooks/{webhook_id}/deliveries',
    operationId: 'v2ListWebhookDeliveries',
    summary: "The webhook's deliveries, newest first",
    request: { params: webhookParam(), query: pageQuery },
    responses: { 200: { description: 'A page of deliveries', content: json(paginated(delivery)) } },
    errors: ['badRequest', 'unauthorized', 'recordNotFound', 'serverError'],
  });
  operation({
    method: 'post',
    path: '/api/v2/webhooks/{webhook_id}/deliveries/{delivery_id}/redeliver',
    operationId: 'v2RedeliverWebhookDelivery',
    summary: 'Send a delivery again, with the same `webhook-id`, before anything later of its language',
    request: { params: pathParams({ webhook_id: 'The webhook id', delivery_id: 'The delivery id' }) },
    responses: { 202: { description: 'Queued; the worker sends it' } },
    errors: ['unauthorized', 'recordNotFound', 'serverError'],
  });
}
