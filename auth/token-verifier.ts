import pg from 'pg';
import { sha256 } from '../platform/crypto.js';
import type { Database } from '../platform/db.js';
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
  private listener: pg.Client | undefined;
  private listening = false;
  private closed = false;
  private reconnectTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly db: Database,
    private readonly databaseUrl: string,
    private readonly logger: Logger,
    private readonly staleMs = 5_000,
    private readonly maxEntries = 50_000,
  ) {}

  async start(): Promise<void> {
    await this.connectListener();
  }

  private async connectListener(): Promise<void> {
    if (this.closed) return;
    const client = new pg.Client({ connectionString: this.databaseUrl });
    const retry = () => {
      this.listening = false;
      this.cache.clear();
      client.removeAllListeners();
      client.end().catch(() => undefined);
      if (!this.closed && !this.reconnectTimer) {
        this.reconnectTimer = setTimeout(() => {
          this.reconnectTimer = undefined;
          void this.connectListener();
        }, 1_000);
      }
    };
    client.on('error', (error) => {
      this.logger.warn({ err: error }, 'token revocation listener lost; token cache disabled until it reconnects');
      retry();
    });
    client.on('end', retry);
    client.on('notification', () => this.cache.clear());
    try {
      await client.connect();
      for (const channel of [CLIENT_REVOKED, ACCOUNT_LIMIT_CHANGED]) await client.query(`LISTEN ${channel}`);
      this.listener = client;
      this.listening = true;
    } catch (error) {
      this.logger.warn({ err: error }, 'could not listen for token revocations');
      retry();
    }
  }

  async verify(token: string): Promise<Principal | null> {
    const key = sha256(token);
    const cacheKey = key.toString('base64');
    const now = Date.now();
    const hit = this.listening ? this.cache.get(cacheKey) : undefined;
    if (hit && hit.cachedUntilMs > now) {
      return hit.expiresAtMs > now ? toPrincipal(hit.owner) : null;
    }
    const owner = await findLiveToken(this.db, key);
    if (!owner) {
      this.cache.delete(cacheKey);
      return null;
    }
    if (this.listening) {
      if (this.cache.size >= this.maxEntries) this.cache.clear();
      this.cache.set(cacheKey, { owner, expiresAtMs: Date.parse(owner.expires_at), cachedUntilMs: now + this.staleMs });
    }
    return toPrincipal(owner);
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    const listener = this.listener;
    this.listener = undefined;
    if (listener) {
      listener.removeAllListeners();
      listener.on('error', () => undefined);
      await listener.end().catch(() => undefined);
    }
  }
}

const toPrincipal = (owner: TokenOwner): Principal => ({
  accountId: owner.account_id,
  clientPk: owner.client_pk,
  clientId: owner.client_id,
  limit: owner.rate_limit_rps === null ? null : { rps: owner.rate_limit_rps, burst: owner.rate_limit_burst ?? 0 },
});
