import { type CommonQueryMethods, sql } from 'slonik';
import { z } from 'zod';

const tokenOwner = z.object({
  account_id: z.number(),
  client_pk: z.number(),
  client_id: z.string(),
  expires_at: z.string(),
  /** The account's own request limit (cli set-limit), null for the deployment's default. */
  rate_limit_rps: z.number().nullable(),
  rate_limit_burst: z.number().nullable(),
});
export type TokenOwner = z.infer<typeof tokenOwner>;

export async function insertToken(
  db: CommonQueryMethods,
  tokenHash: Buffer,
  clientPk: number,
  issuedAt: Date,
  expiresAt: Date,
): Promise<void> {
  await db.query(sql.unsafe`
    INSERT INTO access_tokens (token_hash, client_pk, issued_at, expires_at)
    VALUES (${sql.binary(tokenHash)}, ${clientPk}, ${sql.timestamp(issuedAt)}, ${sql.timestamp(expiresAt)})
  `);
}

/**
 * The owner of a live token, with its account's request limit (so the limit
 * costs the request path no query of its own): unknown, expired and
 * revoked-client tokens all give null.
 */
export async function findLiveToken(db: CommonQueryMethods, tokenHash: Buffer): Promise<TokenOwner | null> {
  return db.maybeOne(sql.type(tokenOwner)`
    SELECT c.account_id, t.client_pk, c.client_id, t.expires_at, a.rate_limit_rps, a.rate_limit_burst
    FROM access_tokens t
    JOIN clients c ON c.id = t.client_pk
    JOIN accounts a ON a.id = c.account_id
    WHERE t.token_hash = ${sql.binary(tokenHash)}
      AND t.expires_at > now()
      AND c.revoked_at IS NULL
  `);
}

export async function deleteExpiredTokens(db: CommonQueryMethods, limit: number): Promise<number> {
  const result = await db.query(sql.unsafe`
    DELETE FROM access_tokens
    WHERE token_hash IN (
      SELECT token_hash FROM access_tokens WHERE expires_at < now() - interval '1 hour' LIMIT ${limit}
    )
  `);
  return result.rowCount;
}
