import { parseEnvelope } from '../catalogue/envelope.schema.js';
import { parseOrThrow, Validator } from '../catalogue/validation.js';
import type { Database } from '../platform/db.js';
import { RecordNotFoundError, ValidationError } from '../platform/errors.js';
import { rotateSecret } from './delivery-log.repository.js';
import { parseDestination, resolveSafely, UnsafeDestinationError } from './url-guard.js';
import {
  deleteWebhook,
  findWebhook,
  pageOfWebhooks,
  retryNow,
  startPositions,
  upsertWebhook,
  type WebhookRow,
} from './webhook.repository.js';
import { WEBHOOK_EVENTS, type Webhook, webhookListQuerySchema, webhookWriteSchema } from './webhook.schema.js';
import { newWebhookSecret } from './webhook-secret.js';

const webhookWrite = new Validator(webhookWriteSchema);

export interface WebhookContext {
  db: Database;
  accountId: number;
  /** WEBHOOK_ALLOW_PRIVATE: http and internal addresses allowed (interface §23.6). */
  allowPrivate: boolean;
}

/** The webhook as answered: never its secret (interface §23.1). */
export function presentWebhook(row: WebhookRow): Webhook {
  return {
    id: row.id,
    url: row.url,
    languages: row.languages,
    kinds: row.kinds,
    events: row.events as Webhook['events'],
    active: row.active,
    status: !row.active ? 'disabled' : row.failing_since !== null ? 'failing' : 'active',
    failing_since: row.failing_since,
    disabled_reason: row.disabled_reason,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/**
 * PUT /api/v2/webhooks (interface §23.1): creates the webhook (answering its
 * secret, once) or replaces its settings.
 * @throws {ValidationError} for a bad body or a URL that may not be called (§23.6)
 */
export async function saveWebhook(context: WebhookContext, body: unknown): Promise<Webhook> {
  const input = parseEnvelope('webhook', body, webhookWrite);
  const destination = parseDestination(input.url, context.allowPrivate);
  const refuseUrl = (why: string) => new ValidationError('invalid_parameters', ['url'], `Invalid parameters: url (${why})`);
  if (!destination) throw refuseUrl(context.allowPrivate ? 'must be an http or https URL' : 'must be an https URL');
  try {
    await resolveSafely(destination.hostname, context.allowPrivate);
  } catch (error) {
    if (error instanceof UnsafeDestinationError) throw refuseUrl(error.message);
    throw error;
  }
  const fields = {
    id: input.id,
    url: input.url,
    languages: input.languages ? [...new Set(input.languages)] : null,
    kinds: input.kinds ? [...new Set(input.kinds)] : null,
    events: input.events ? [...new Set(input.events)] : [...WEBHOOK_EVENTS],
    active: input.active,
  };
  return context.db.transaction(async (tx) => {
    const before = await findWebhook(tx, context.accountId, input.id);
    const { row, created } = await upsertWebhook(tx, context.accountId, fields, newWebhookSecret());
    if (created) {
      await startPositions(tx, context.accountId, row.id);
      return { ...presentWebhook(row), secret: row.secret };
    }
    if (row.active && before && !before.active) await retryNow(tx, context.accountId, row.id);
    return presentWebhook(row);
  });
}

/** @throws {RecordNotFoundError} when the account has no such webhook */
export async function requireWebhook(context: Pick<WebhookContext, 'db' | 'accountId'>, id: string): Promise<WebhookRow> {
  const row = await findWebhook(context.db, context.accountId, id);
  if (!row) throw new RecordNotFoundError('Webhook');
  return row;
}

export async function getWebhook(context: WebhookContext, id: string): Promise<Webhook> {
  return presentWebhook(await requireWebhook(context, id));
}

/** GET /api/v2/webhooks: `{"data","meta"}`, by id. @throws {ValidationError} */
export async function listWebhooks(context: WebhookContext, rawQuery: Record<string, unknown>) {
  const query = parseOrThrow(webhookListQuerySchema, rawQuery);
  const { total, rows } = await pageOfWebhooks(context.db, context.accountId, (query.page - 1) * query.per_page, query.per_page);
  return { data: rows.map(presentWebhook), meta: { current_page: query.page, per_page: query.per_page, total } };
}

/** How long a rotated-out secret keeps signing beside the new one (interface §23.1). */
export const SECRET_OVERLAP_SECONDS = 24 * 3_600;

/** POST /api/v2/webhooks/{id}/rotate-secret: the webhook with its new secret. @throws {RecordNotFoundError} */
export async function rotateWebhookSecret(context: WebhookContext, id: string): Promise<Webhook> {
  const secret = newWebhookSecret();
  if (!(await rotateSecret(context.db, context.accountId, id, secret, SECRET_OVERLAP_SECONDS))) throw new RecordNotFoundError('Webhook');
  return { ...presentWebhook(await requireWebhook(context, id)), secret };
}

/** @throws {RecordNotFoundError} */
export async function removeWebhook(context: WebhookContext, id: string): Promise<void> {
  if (!(await deleteWebhook(context.db, context.accountId, id))) throw new RecordNotFoundError('Webhook');
}
