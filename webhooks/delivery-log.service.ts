import { parseOrThrow } from '../catalogue/validation.js';
import { encodeFeedCursor } from '../feed/feed-cursor.js';
import { RecordNotFoundError } from '../platform/errors.js';
import { type DeliveryLogRow, pageOfDeliveries, requeueDelivery } from './delivery-log.repository.js';
import { webhookListQuerySchema } from './webhook.schema.js';
import { requireWebhook, type WebhookContext } from './webhook.service.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A delivery as listed (interface §23.5): its first and last entries' cursors rather than their positions. */
function presentDelivery(row: DeliveryLogRow) {
  const cursor = (seq: number | null) =>
    seq === null ? null : encodeFeedCursor({ langKey: row.lang_key, languageId: row.language_id, seq });
  return {
    id: row.id,
    type: row.type,
    language_id: row.language_id,
    entries: row.entries,
    first_cursor: cursor(row.first_seq),
    last_cursor: cursor(row.last_seq),
    attempts: row.attempts,
    status: row.status,
    last_status_code: row.last_status_code,
    last_error: row.last_error,
    next_attempt_at: row.next_attempt_at,
    delivered_at: row.delivered_at,
    created_at: row.created_at,
  };
}

/** GET /api/v2/webhooks/{id}/deliveries, newest first. @throws {RecordNotFoundError} @throws {ValidationError} */
export async function listDeliveries(context: WebhookContext, webhookId: string, rawQuery: Record<string, unknown>) {
  const query = parseOrThrow(webhookListQuerySchema, rawQuery);
  await requireWebhook(context, webhookId);
  const { total, rows } = await pageOfDeliveries(
    context.db,
    context.accountId,
    webhookId,
    (query.page - 1) * query.per_page,
    query.per_page,
  );
  return { data: rows.map(presentDelivery), meta: { current_page: query.page, per_page: query.per_page, total } };
}

/** POST .../deliveries/{delivery_id}/redeliver: sent again by the worker, with the same webhook-id. @throws {RecordNotFoundError} */
export async function redeliver(context: WebhookContext, webhookId: string, deliveryId: string): Promise<void> {
  await requireWebhook(context, webhookId);
  if (!UUID.test(deliveryId) || !(await requeueDelivery(context.db, context.accountId, webhookId, deliveryId)))
    throw new RecordNotFoundError('Delivery');
}
