import type { Redis } from 'ioredis';
import { BurstyRateLimiter, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import { withinMs } from '../platform/redis.js';
import type { RequestLimit } from './token-verifier.js';

/**
 * Where the limits keep their counters in Redis, under QUEUE_PREFIX: request
 * limits (this file) and failed sign-ins (sign-in.guard.ts). `npm run reset`
 * removes them with the queues.
 */
export const limitKeySpaces = (prefix: string) => ({ requests: `${prefix}:limit`, signIns: `${prefix}:signin` });

/** Removes every limit counter of the prefix (a reset: they refer to accounts and clients that are gone). */
export async function removeLimitCounters(redis: Redis, prefix: string): Promise<void> {
  for (const space of Object.values(limitKeySpaces(prefix))) {
    for await (const keys of redis.scanStream({ match: `${space}:*`, count: 1_000 })) {
      if ((keys as string[]).length > 0) await redis.del(...(keys as string[]));
    }
  }
}

/** The window of the burst allowance: `burst` requests over the per-second rate, per minute. */
export const BURST_WINDOW_S = 60;

/** How long a request waits for Redis before it is let through (a hung Redis must not hang the API). */
export const REDIS_TIMEOUT_MS = 500;

/** What one request learnt about its account's limit: the `RateLimit-*` headers and whether it may go on. */
export interface LimitVerdict {
  allowed: boolean;
  /** Requests per second (the steady quota). */
  limit: number;
  /** Requests per minute over the steady quota. */
  burst: number;
  /** Left of this second's quota (0 while the request draws on the burst allowance). */
  remaining: number;
  /** Seconds until this second's quota is full again; on a refusal, how long to wait. */
  resetS: number;
  /** `RateLimit-Policy`: `<rps>;w=1` and, with a burst allowance, `<burst>;w=60`. */
  policy: string;
}

interface LimiterEntry {
  limiter: RateLimiterRedis | BurstyRateLimiter;
  rps: number;
  burst: number;
  policy: string;
}

/**
 * Per-account request limits kept in Redis, so that they hold across every
 * API process: `rps` requests in each second, and over that a burst allowance
 * of `burst` requests per minute (rate-limiter-flexible's BurstyRateLimiter,
 * its token-bucket-like limiter). A request costs one Redis round trip (two
 * once the second's quota is spent); an account already refused for the rest
 * of a window is refused from memory without asking Redis.
 *
 * One limiter per distinct (rps, burst): the default and each account
 * override. They share their keys, so changing an account's limit keeps what
 * it has used of the current windows.
 */
export class RequestLimiter {
  private readonly limiters = new Map<string, LimiterEntry>();

  constructor(
    private readonly redis: Redis,
    private readonly options: {
      /** Redis key prefix (QUEUE_PREFIX, so deployments sharing a Redis keep apart). */
      prefix: string;
      defaults: RequestLimit;
      /** Called when Redis could not be asked and the request was let through. */
      onUnavailable: (error: Error) => void;
      /** Called for each refused request. */
      onRefused: () => void;
    },
  ) {}

  /** Counts one request of `accountId`; null when Redis could not be asked (the request goes on, unlimited). */
  async consume(accountId: number, limit: RequestLimit | null): Promise<LimitVerdict | null> {
    const entry = this.limiterFor(limit ?? this.options.defaults);
    try {
      const res = await withinMs(entry.limiter.consume(accountId), REDIS_TIMEOUT_MS);
      return verdict(entry, res, true);
    } catch (caught) {
      // The library refuses with its result object when over the limit, and with an Error when the store failed.
      if (caught instanceof RateLimiterRes) {
        this.options.onRefused();
        return verdict(entry, caught, false);
      }
      this.options.onUnavailable(caught as Error);
      return null;
    }
  }

  private limiterFor({ rps, burst }: RequestLimit): LimiterEntry {
    const key = `${rps}:${burst}`;
    let entry = this.limiters.get(key);
    if (entry) return entry;
    const prefix = limitKeySpaces(this.options.prefix).requests;
    // Once an account has used a window's points, this process refuses it from memory until the window ends.
    const steady = new RateLimiterRedis({
      storeClient: this.redis,
      keyPrefix: `${prefix}:rps`,
      points: rps,
      duration: 1,
      inMemoryBlockOnConsumed: rps,
      rejectIfRedisNotReady: true,
    });
    const limiter =
      burst === 0
        ? steady
        : new BurstyRateLimiter(
            steady,
            new RateLimiterRedis({
              storeClient: this.redis,
              keyPrefix: `${prefix}:burst`,
              points: burst,
              duration: BURST_WINDOW_S,
              inMemoryBlockOnConsumed: burst,
              rejectIfRedisNotReady: true,
            }),
          );
    entry = { limiter, rps, burst, policy: burst === 0 ? `${rps};w=1` : `${rps};w=1, ${burst};w=${BURST_WINDOW_S}` };
    // Overrides are few; a bound keeps a stream of distinct limits from growing the map for ever.
    if (this.limiters.size >= 1_000) this.limiters.clear();
    this.limiters.set(key, entry);
    return entry;
  }
}

function verdict(entry: LimiterEntry, res: RateLimiterRes, allowed: boolean): LimitVerdict {
  return {
    allowed,
    limit: entry.rps,
    burst: entry.burst,
    remaining: res.remainingPoints,
    resetS: Math.max(1, Math.ceil(res.msBeforeNext / 1000)),
    policy: entry.policy,
  };
}
