import { randomUUID } from 'node:crypto';
import { sendDelivery } from './delivery.sender.js';
import { requireWebhook, type WebhookContext } from './webhook.service.js';
import { signatureHeader } from './webhook-secret.js';

/**
 * POST /api/v2/webhooks/{id}/ping (interface §23.5): sends `{"type":"ping"}`
 * now, signed and guarded like any delivery, and answers what came back.
 * Nothing is stored: a ping is not a delivery.
 * @throws {RecordNotFoundError}
 */
export async function pingWebhook(context: WebhookContext, webhookId: string) {
  const webhook = await requireWebhook(context, webhookId);
  const id = randomUUID();
  const timestamp = Math.floor(Date.now() / 1000);
  const body = '{"type":"ping"}';
  const secrets = webhook.previous_signing && webhook.previous_secret ? [webhook.secret, webhook.previous_secret] : [webhook.secret];
  const headers = {
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signatureHeader(secrets, id, timestamp, body),
  };
  const outcome = await sendDelivery(webhook.url, headers, body, { allowPrivate: context.allowPrivate });
  return { status_code: outcome.statusCode, duration_ms: outcome.durationMs, error: outcome.error };
}
