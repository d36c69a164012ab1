import { type CommonQueryMethods, sql } from 'slonik';
import { z } from 'zod';

/* A webhook's deliveries as its account reads them (interface §23.5). Every statement names the account. */

const at = (column: string) => sql.fragment`to_char(${sql.identifier([column])} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

export const deliveryLogRow = z.object({
  id: z.string(),
  type: z.string(),
  lang_key: z.number(),
  language_id: z.string(),
  entries: z.number(),
  first_seq: z.number().nullable(),
  last_seq: z.number().nullable(),
  attempts: z.number(),
  status: z.enum(['pending', 'delivered', 'failing']),
  last_status_code: z.number().nullable(),
  last_error: z.string().nullable(),
  next_attempt_at: z.string().nullable(),
  delivered_at: z.string().nullable(),
  created_at: z.string(),
});
export type DeliveryLogRow = z.infer<typeof deliveryLogRow>;

/** A page of the webhook's deliveries, newest first. */
export async function pageOfDeliveries(
  db: CommonQueryMethods,
  accountId: number,
  webhookId: string,
  offset: number,
  limit: number,
): Promise<{ total: number; rows: readonly DeliveryLogRow[] }> {
  const total = await db.oneFirst(sql.type(z.object({ count: z.number() }))`
    SELECT count(*)::int AS count FROM webhook_deliveries WHERE account_id = ${accountId} AND webhook_id = ${webhookId}
  `);
  const rows = await db.any(sql.type(deliveryLogRow)`
    SELECT id::text AS id, type, lang_key, language_id, entries, first_seq, last_seq, attempts, status,
           last_status_code, last_error,
           CASE WHEN status <> 'delivered' THEN ${at('next_attempt_at')} END AS next_attempt_at,
           ${at('delivered_at')} AS delivered_at, ${at('created_at')} AS created_at
    FROM webhook_deliveries
    WHERE account_id = ${accountId} AND webhook_id = ${webhookId}
    ORDER BY created_at DESC, first_seq DESC
    OFFSET ${offset} LIMIT ${limit}
  `);
  return { total, rows };
}

/**
 * Puts a delivery back in line, as itself (same id and body): the worker
 * sends it before anything later of its language (interface §23.5).
 * @returns whether the webhook has that delivery.
 */
export async function requeueDelivery(db: CommonQueryMethods, accountId: number, webhookId: string, id: string): Promise<boolean> {
  const found = await db.maybeOneFirst(sql.type(z.object({ id: z.string() }))`
    UPDATE webhook_deliveries
    SET status = CASE WHEN status = 'delivered' THEN 'pending' ELSE status END, next_attempt_at = now()
    WHERE account_id = ${accountId} AND webhook_id = ${webhookId} AND id = ${id}::uuid
    RETURNING id::text AS id
  `);
  return found !== null;
}

/** Rotates the secret: the old one signs beside the new one for `overlapSeconds` (interface §23.1). */
export async function rotateSecret(
  db: CommonQueryMethods,
  accountId: number,
  webhookId: string,
  secret: string,
  overlapSeconds: number,
): Promise<boolean> {
  const found = await db.maybeOneFirst(sql.type(z.object({ id: z.string() }))`
    UPDATE webhooks
    SET previous_secret = secret, previous_secret_until = now() + make_interval(secs => ${overlapSeconds}),
        secret = ${secret}, updated_at = now()
    WHERE account_id = ${accountId} AND id = ${webhookId}
    RETURNING id
  `);
  return found !== null;
}
