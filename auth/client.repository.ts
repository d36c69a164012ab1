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
  await db.query(sql.unsafe`SELECT pg_notify('client_revoked', ${String(revoked.id)})`);
  return true;
}
