import { isStorableText } from '../catalogue/primitives.schema.js';
import { constantTimeEqual, randomToken, sha256 } from '../platform/crypto.js';
import type { Database } from '../platform/db.js';
import { OAuthError } from '../platform/errors.js';
import { type ClientRow, findClient, insertClient, upsertAccount } from './client.repository.js';
import { insertToken } from './token.repository.js';

export interface IssuedToken {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  created_at: number;
}

export async function createClient(db: Database, account: string) {
  const clientId = randomToken(18);
  const clientSecret = randomToken(32);
  await db.transaction(async (tx) => {
    const accountId = await upsertAccount(tx, account);
    await insertClient(tx, accountId, clientId, sha256(clientSecret));
  });
  return { account, client_id: clientId, client_secret: clientSecret };
}

/**
 * The client whose id and secret these are.
 * @throws {OAuthError} invalid_client (401) for an unknown client, a wrong secret or a revoked client.
 */
export async function authenticateClient(db: Database, clientId: string, clientSecret: string, usedBasic: boolean): Promise<ClientRow> {
  const client = isStorableText(clientId) ? await findClient(db, clientId) : null;
  const secretMatches = client !== null && constantTimeEqual(sha256(clientSecret).toString('hex'), client.secret_hash.toString('hex'));
  if (!client || !secretMatches || client.revoked_at !== null) {
    throw new OAuthError(
      401,
      'invalid_client',
      'Client authentication failed: unknown client, wrong secret or revoked client',
      usedBasic ? { 'WWW-Authenticate': 'Basic realm="oauth", charset="UTF-8"' } : {},
    );
  }
  return client;
}

/** Issues a token for an authenticated client (only its hash is stored). */
export async function issueToken(db: Database, client: ClientRow, ttlSeconds: number): Promise<IssuedToken> {
  const token = randomToken(32);
  const issuedAt = new Date(Math.floor(Date.now() / 1000) * 1000);
  const expiresAt = new Date(issuedAt.getTime() + ttlSeconds * 1000);
  await insertToken(db, sha256(token), client.id, issuedAt, expiresAt);
  return {
    access_token: token,
    token_type: 'Bearer',
    expires_in: ttlSeconds,
    created_at: issuedAt.getTime() / 1000,
  };
}
