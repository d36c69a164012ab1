import { sha256Base64 } from '../platform/crypto.js';
import type { Database } from '../platform/db.js';
import { Listener } from '../platform/listener.js';
import type { Logger } from '../platform/logger.js';
import { ACCOUNT_LIMIT_CHANGED, CLIENT_REVOKED } from './client.repository.js';
import { findLiveToken, type TokenOwner } from './token.repository.js';

/** An account's own request limit: `rps` requests each second, `burst` more per minute. */
export interface RequestLimit {
  rps: number;
  burst: number;
}

export interface Principal {
  accountId: number;
  clientPk: number;
  clientId: string;
  /** The account's own request limit (cli set-limit); null: the deployment's default. */
  limit: RequestLimit | null;
}

interface CacheEntry {
  owner: TokenOwner;
  expiresAtMs: number;
  cachedUntilMs: number;
}

/**
 * Resolves bearer tokens to their account, caching each answer for at most
 * `staleMs`. Revocation and limit changes are pushed with Postgres NOTIFY
 * (auth/client.repository.ts), which empties the cache at once; while the LISTEN
 * connection is down the cache is bypassed, so a revoked client never
 * outlives its revocation (nor an old limit its change) by more than the
 * notification's delivery time.
 */
export class TokenVerifier {
  private readonly cache = new Map<string, CacheEntry>();
  private readonly listener: Listener;

  constructor(
    private readonly db: Database,
    databaseUrl: string,
    logger: Logger,
    private readonly staleMs = 5_000,
    private readonly maxEntries = 50_000,
  ) {
    this.listener = new Listener(databaseUrl, logger, {
      channels: [CLIENT_REVOKED, ACCOUNT_LIMIT_CHANGED],
      onNotification: () => this.cache.clear(),
      onLost: () => this.cache.clear(),
      lostMessage: 'token revocation listener lost; token cache disabled until it reconnects',
      failedMessage: 'could not listen for token revocations',
    });
  }

  async start(): Promise<void> {
    await this.listener.start();
  }

  async verify(token: string): Promise<Principal | null> {
    const cacheKey = sha256Base64(token);
    const now = Date.now();
    const hit = this.listener.listening ? this.cache.get(cacheKey) : undefined;
    if (hit && hit.cachedUntilMs > now) {
      return hit.expiresAtMs > now ? toPrincipal(hit.owner) : null;
    }
    const owner = await findLiveToken(this.db, Buffer.from(cacheKey, 'base64'));
    if (!owner) {
      this.cache.delete(cacheKey);
      return null;
    }
    if (this.listener.listening) {
      if (this.cache.size >= this.maxEntries) this.cache.clear();
      this.cache.set(cacheKey, { owner, expiresAtMs: Date.parse(owner.expires_at), cachedUntilMs: now + this.staleMs });
    }
    return toPrincipal(owner);
  }

  async close(): Promise<void> {
    await this.listener.close();
  }
}

const toPrincipal = (owner: TokenOwner): Principal => ({
  accountId: owner.account_id,
  clientPk: owner.client_pk,
  clientId: owner.client_id,
  limit: owner.rate_limit_rps === null ? null : { rps: owner.rate_limit_rps, burst: owner.rate_limit_burst ?? 0 },
});
