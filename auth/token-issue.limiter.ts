import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import { type RedisClient, withinMs } from '../platform/redis.js';
import { limitKeySpaces, REDIS_TIMEOUT_MS } from './request-limiter.js';

export interface TokenIssueLimiterOptions {
  /** Redis key prefix (QUEUE_PREFIX). */
  prefix: string;
  /** Tokens one client may be issued within `windowS` (TOKEN_ISSUE_LIMIT, TOKEN_ISSUE_WINDOW_S). */
  limit: number;
  windowS: number;
  onRefused: () => void;
  onUnavailable: (error: Error) => void;
}

/**
 * Tokens issued per client (docs/decisions.md, "Token issuance"): a client
 * needs one token per lifetime, so a client asking for many is refused with
 * 429 until its window (which starts at its first token) ends, rather than
 * each request costing a stored row. Counted once the client has
 * authenticated, so nobody but the client itself can use up its share.
 * Redis unreachable: tokens are issued unchecked (counted by onUnavailable).
 */
export class TokenIssueLimiter {
  private readonly limiter: RateLimiterRedis;

  constructor(
    redis: RedisClient,
    readonly options: TokenIssueLimiterOptions,
  ) {
    this.limiter = new RateLimiterRedis({
      storeClient: redis,
      keyPrefix: limitKeySpaces(options.prefix).tokens,
      points: options.limit,
      duration: options.windowS,
      rejectIfRedisNotReady: true,
    });
  }

  /** Counts one token for the client: null when it may have it, else the seconds until it may have another. */
  async take(clientPk: number): Promise<number | null> {
    try {
      await withinMs(this.limiter.consume(String(clientPk)), REDIS_TIMEOUT_MS);
      return null;
    } catch (error) {
      if (error instanceof RateLimiterRes) {
        this.options.onRefused();
        return Math.max(1, Math.ceil(error.msBeforeNext / 1000));
      }
      this.options.onUnavailable(error as Error);
      return null;
    }
  }
}
