import { type CommonQueryMethods, sql } from 'slonik';
import { z } from 'zod';

const clientRow = z.object({
  id: z.number(),
  account_id: z.number(),
  account: z.string(),
  client_id: z.string(),
  secret_hash: z.instanceof(Buffer),
  created_at: z.string(),
  revoked_at: z.string().nullable(),
});
export type ClientRow = z.infer<typeof clientRow>;

/**
 * Postgres NOTIFY channels that make every API process drop its cached token
 * answers (auth/token-verifier.ts): a client revoked, an account's request
 * limit changed (it travels with the token's owner).
 */
export const CLIENT_REVOKED = 'client_revoked';
export const ACCOUNT_LIMIT_CHANGED = 'account_limit_changed';

export async function upsertAccount(db: CommonQueryMethods, name: string): Promise<number> {
  return db.oneFirst(sql.type(z.object({ id: z.number() }))`
    INSERT INTO accounts (name)
    VALUES (${name})
    ON CONFLICT (name) DO UPDATE SET name = excluded.name
    RETURNING id
  `);
}

export async function insertClient(db: CommonQueryMethods, accountId: number, clientId: string, secretHash: Buffer): Promise<void> {
  await db.query(sql.unsafe`
    INSERT INTO clients (account_id, client_id, secret_hash)
    VALUES (${accountId}, ${clientId}, ${sql.binary(secretHash)})
  `);
}

export async function findClient(db: CommonQueryMethods, clientId: string): Promise<ClientRow | null> {
  return db.maybeOne(sql.type(clientRow)`
    SELECT c.id, c.account_id, a.name AS account, c.client_id, c.secret_hash, c.created_at, c.revoked_at
    FROM clients c
    JOIN accounts a ON a.id = c.account_id
    WHERE c.client_id = ${clientId}
  `);
}

export async function listClients(db: CommonQueryMethods): Promise<readonly ClientRow[]> {
  return db.any(sql.type(clientRow)`
    SELECT c.id, c.account_id, a.name AS account, c.client_id, c.secret_hash, c.created_at, c.revoked_at
    FROM clients c
    JOIN accounts a ON a.id = c.account_id
    ORDER BY c.id
  `);
}

/** Marks the client revoked and tells every API process to drop cached tokens. Returns false for an unknown client. */
export async function revokeClient(db: CommonQueryMethods, clientId: string): Promise<boolean> {
  const revoked = await db.maybeOne(sql.type(z.object({ id: z.number() }))`
    UPDATE clients
    SET revoked_at = coalesce(revoked_at, now())
    WHERE client_id = ${clientId}
    RETURNING id
  `);
  if (!revoked) return false;
  await db.query(sql.unsafe`SELECT pg_notify(${CLIENT_REVOKED}, ${String(revoked.id)})`);
  return true;
}

/**
 * Sets an account's own request limit (null: back to the deployment's
 * default) and tells every API process, which apply it from the next request
 * on. Returns false for an unknown account.
 */
export async function setAccountLimit(
  db: CommonQueryMethods,
  account: string,
  limit: { rps: number; burst: number } | null,
): Promise<boolean> {
  const updated = await db.maybeOne(sql.type(z.object({ id: z.number() }))`
    UPDATE accounts
    SET rate_limit_rps = ${limit?.rps ?? null}, rate_limit_burst = ${limit?.burst ?? null}
    WHERE name = ${account}
    RETURNING id
  `);
  if (!updated) return false;
  await db.query(sql.unsafe`SELECT pg_notify(${ACCOUNT_LIMIT_CHANGED}, ${String(updated.id)})`);
  return true;
}
