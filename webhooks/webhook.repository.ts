import { type CommonQueryMethods, sql } from 'slonik';
import { z } from 'zod';
import type { WebhookEvent } from './webhook.schema.js';

/* The webhooks table (migrations/0022_webhooks.sql). Every statement names the account. */

const at = (column: string) => sql.fragment`to_char(${sql.identifier([column])} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

const COLUMNS = sql.fragment`
  id, url, languages, kinds, events, active, secret, previous_secret,
  previous_secret_until > now() AS previous_signing,
  ${at('failing_since')} AS failing_since, disabled_reason,
  ${at('created_at')} AS created_at, ${at('updated_at')} AS updated_at
`;

export const webhookRow = z.object({
  id: z.string(),
  url: z.string(),
  languages: z.array(z.string()).nullable(),
  kinds: z.array(z.string()).nullable(),
  events: z.array(z.string()),
  active: z.boolean(),
  secret: z.string(),
  previous_secret: z.string().nullable(),
  previous_signing: z.boolean().nullable(),
  failing_since: z.string().nullable(),
  disabled_reason: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type WebhookRow = z.infer<typeof webhookRow>;

export interface WebhookFields {
  id: string;
  url: string;
  languages: readonly string[] | null;
  kinds: readonly string[] | null;
  events: readonly WebhookEvent[];
  active: boolean;
}

const textArray = (values: readonly string[] | null) => (values === null ? sql.fragment`NULL` : sql.array(values, 'text'));

/**
 * Creates the webhook, or replaces its settings (never its secret). Setting
 * `active` again clears its failure state, so its next attempt is now
 * (interface §23.4). `created`: whether this call created it.
 */
export async function upsertWebhook(
  db: CommonQueryMethods,
  accountId: number,
  fields: WebhookFields,
  secret: string,
): Promise<{ row: WebhookRow; created: boolean }> {
  const result = await db.one(sql.type(webhookRow.extend({ created: z.boolean() }))`
    WITH saved AS (
      INSERT INTO webhooks AS w (account_id, id, url, languages, kinds, events, active, secret, created_at, updated_at)
      VALUES (${accountId}, ${fields.id}, ${fields.url}, ${textArray(fields.languages)}, ${textArray(fields.kinds)},
              ${sql.array(fields.events, 'text')}, ${fields.active}, ${secret}, now(), now())
      ON CONFLICT (account_id, id) DO UPDATE SET
        url = EXCLUDED.url, languages = EXCLUDED.languages, kinds = EXCLUDED.kinds, events = EXCLUDED.events,
        active = EXCLUDED.active, updated_at = now(),
        failing_since = CASE WHEN EXCLUDED.active AND NOT w.active THEN NULL ELSE w.failing_since END,
        disabled_reason = CASE WHEN EXCLUDED.active THEN NULL ELSE w.disabled_reason END
      RETURNING *, xmax = 0 AS created
    )
    SELECT ${COLUMNS}, created FROM saved
  `);
  const { created, ...row } = result;
  return { row, created };
}

export async function findWebhook(db: CommonQueryMethods, accountId: number, id: string): Promise<WebhookRow | null> {
  return db.maybeOne(sql.type(webhookRow)`SELECT ${COLUMNS} FROM webhooks WHERE account_id = ${accountId} AND id = ${id}`);
}

export async function pageOfWebhooks(
  db: CommonQueryMethods,
  accountId: number,
  offset: number,
  limit: number,
): Promise<{ total: number; rows: readonly WebhookRow[] }> {
  const total = await db.oneFirst(sql.type(z.object({ count: z.number() }))`
    SELECT count(*)::int AS count FROM webhooks WHERE account_id = ${accountId}
  `);
  const rows = await db.any(sql.type(webhookRow)`
    SELECT ${COLUMNS} FROM webhooks WHERE account_id = ${accountId} ORDER BY id OFFSET ${offset} LIMIT ${limit}
  `);
  return { total, rows };
}

/** Deletes the webhook with its positions and deliveries. @returns whether it existed. */
export async function deleteWebhook(db: CommonQueryMethods, accountId: number, id: string): Promise<boolean> {
  const deleted = await db.maybeOneFirst(sql.type(z.object({ id: z.string() }))`
    DELETE FROM webhooks WHERE account_id = ${accountId} AND id = ${id} RETURNING id
  `);
  return deleted !== null;
}

/**
 * A new webhook starts after every entry written so far in the account's
 * languages (interface §23.3): one position per live language at the audit
 * sequence's current value. A language created later has no position and
 * starts at its first entry.
 */
export async function startPositions(db: CommonQueryMethods, accountId: number, webhookId: string): Promise<void> {
  await db.query(sql.unsafe`
    INSERT INTO webhook_positions (account_id, webhook_id, lang_key, after_seq)
    SELECT ${accountId}, ${webhookId}, lang_key,
           (SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM audit_log_seq_seq)
    FROM languages WHERE account_id = ${accountId} AND deleted_at IS NULL
    ON CONFLICT DO NOTHING
  `);
}

/** A re-enabled webhook's pending deliveries are due now rather than at their backed-off time. */
export async function retryNow(db: CommonQueryMethods, accountId: number, webhookId: string): Promise<void> {
  await db.query(sql.unsafe`
    UPDATE webhook_deliveries SET next_attempt_at = now()
    WHERE account_id = ${accountId} AND webhook_id = ${webhookId} AND status <> 'delivered'
  `);
}
