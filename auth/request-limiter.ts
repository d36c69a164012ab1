import { type RedisClient, removeKeys, withinMs } from '../platform/redis.js';
import type { RequestLimit } from './token-verifier.js';

/**
 * Where the limits keep their counters in Redis, under QUEUE_PREFIX: request
 * limits (this file), failed sign-ins (sign-in.guard.ts) and tokens issued
 * (token-issue.limiter.ts). `npm run reset` removes them with the queues.
 */
export const limitKeySpaces = (prefix: string) => ({
  requests: `${prefix}:limit`,
  signIns: `${prefix}:signin`,
  tokens: `${prefix}:tokens`,
});

/** Removes every limit counter of the prefix (a reset: they refer to accounts and clients that are gone). */
export async function removeLimitCounters(redis: RedisClient, prefix: string): Promise<void> {
  for (const space of Object.values(limitKeySpaces(prefix))) await removeKeys(redis, `${space}:*`);
}

/** The window of the steady quota: `rps` requests a second. */
const STEADY_WINDOW_S = 1;

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

/**
 * Counts one request in each of the two fixed windows of its account, for a
 * tick's requests at once: KEYS are each request's steady (1 s) and burst
 * (BURST_WINDOW_S) counters, ARGV each request's skip-steady flag, rps and
 * burst, then the two windows' seconds. A window's counter is made with its
 * expiry on its first request and counted up (rate-limiter-flexible's own
 * steps, so the keys and windows are the same); the burst counter is counted
 * only for a request over its second's quota, or whose second is known spent.
 * Answers four integers a request: steady count and ms left (-1 when not
 * counted), burst count and ms left (-1 when not counted).
 */
const COUNT_WINDOWS_LUA = `
local steadyS, burstS = tonumber(ARGV[#ARGV - 1]), tonumber(ARGV[#ARGV])
local function count(key, seconds)
  redis.call('set', key, 0, 'EX', seconds, 'NX')
  local counted = redis.call('incrby', key, 1)
  local ttl = redis.call('pttl', key)
  if ttl == -1 then
    redis.call('expire', key, seconds)
    ttl = 1000 * seconds
  end
  return counted, ttl
end
local out = {}
for i = 1, #KEYS / 2 do
  local skip, rps, burst = ARGV[3 * i - 2], tonumber(ARGV[3 * i - 1]), tonumber(ARGV[3 * i])
  local steady, steadyTtl, extra, extraTtl = -1, -1, -1, -1
  if skip == '0' then steady, steadyTtl = count(KEYS[2 * i - 1], steadyS) end
  if burst > 0 and (skip == '1' or steady > rps) then extra, extraTtl = count(KEYS[2 * i], burstS) end
  out[4 * i - 3], out[4 * i - 2], out[4 * i - 1], out[4 * i] = steady, steadyTtl, extra, extraTtl
end
return out
`;

/** What Redis counted for one request: each window's count and ms left, -1 when that window was not counted. */
export interface WindowCounts {
  steady: number;
  steadyMs: number;
  burst: number;
  burstMs: number;
}

interface Check {
  accountId: number;
  steadyKey: string;
  burstKey: string;
  limit: RequestLimit;
  skipSteady: boolean;
  settle: (counts: WindowCounts | Error) => void;
}

type CountingRedis = RedisClient & { countLimitWindows(...keysAndArgs: Array<string | number>): Promise<number[]> };

/**
 * Checks counted by one script call at most: Redis runs a script alone, so a
 * crowded tick goes as a few calls of about a millisecond each rather than one
 * long one.
 */
const MAX_CHECKS_PER_CALL = 256;

/** In-memory blocks kept at most, before expired ones are swept (each account has two keys). */
const MAX_BLOCKED_KEYS = 10_000;

/**
 * Per-account request limits kept in Redis, so that they hold across every
 * API process: `rps` requests in each second, and over that a burst allowance
 * of `burst` requests per minute. These are rate-limiter-flexible's
 * BurstyRateLimiter windows, on the same keys; what differs is the trip to
 * Redis. The library sends a command per request (two once the second's quota
 * is spent); here the requests of one tick go as one script call, counted in
 * order. The library's command per request was the largest single part of
 * the API's CPU per single write (docs/decisions.md, Hot paths). An account
 * already refused for the rest of a window is refused from memory without
 * asking Redis, as the library's in-memory block did.
 *
 * On a Redis Cluster a script may only touch keys of one slot: an account's
 * two keys carry its id as hash tag (`sync:limit:rps:{42}`), and a tick's
 * checks go as one script call per account, each to its account's master.
 */
export class RequestLimiter {
  private readonly redis: CountingRedis;
  /** Where this deployment's request counters live (`{prefix}:limit`). */
  private readonly space: string;
  /** Whether Redis is a cluster: keys tagged by account, and a call per account. */
  private readonly clustered: boolean;
  /** Keys whose window is known spent, and until when (epoch ms). */
  private readonly blocked = new Map<string, number>();
  private pending: Check[] = [];

  constructor(
    redis: RedisClient,
    private readonly options: {
      /** Redis key prefix (QUEUE_PREFIX, so deployments sharing a Redis keep apart). */
      prefix: string;
      defaults: RequestLimit;
      /** Called when Redis could not be asked and the request was let through. */
      onUnavailable: (error: Error) => void;
      /** Called for each refused request. */
      onRefused: () => void;
    },
  ) {
    redis.defineCommand('countLimitWindows', { lua: COUNT_WINDOWS_LUA });
    this.redis = redis as CountingRedis;
    this.space = limitKeySpaces(options.prefix).requests;
    this.clustered = redis.isCluster;
  }

  /** Counts one request of `accountId`; null when Redis could not be asked (the request goes on, unlimited). */
  async consume(accountId: number, limit: RequestLimit | null): Promise<LimitVerdict | null> {
    const applied = limit ?? this.options.defaults;
    const account = this.clustered ? `{${accountId}}` : accountId;
    const steadyKey = `${this.space}:rps:${account}`;
    const burstKey = `${this.space}:burst:${account}`;
    const now = Date.now();
    const steadyBlockedMs = this.blockedMs(steadyKey, now);
    if (steadyBlockedMs > 0) {
      const burstBlockedMs = applied.burst === 0 ? steadyBlockedMs : this.blockedMs(burstKey, now);
      if (burstBlockedMs > 0) return this.refuse(applied, Math.min(steadyBlockedMs, burstBlockedMs));
    }
    if (this.redis.status !== 'ready') {
      this.options.onUnavailable(new Error(`Redis is ${this.redis.status}`));
      return null;
    }
    const counts = await new Promise<WindowCounts | Error>((settle) => {
      if (this.pending.length === 0) setImmediate(() => this.flush());
      this.pending.push({ accountId, steadyKey, burstKey, limit: applied, skipSteady: steadyBlockedMs > 0, settle });
    });
    if (counts instanceof Error) {
      this.options.onUnavailable(counts);
      return null;
    }
    const outcome = judge(applied, counts, steadyBlockedMs);
    const at = Date.now();
    if (outcome.blockSteadyMs > 0) this.block(steadyKey, at + outcome.blockSteadyMs);
    if (outcome.blockBurstMs > 0) this.block(burstKey, at + outcome.blockBurstMs);
    if (!outcome.allowed) return this.refuse(applied, outcome.ms);
    return this.verdict(applied, true, outcome.remaining, outcome.ms);
  }

  /** Sends the tick's checks as one script call (one per account on a cluster); a failure or a silent Redis lets each of them through. */
  private flush(): void {
    const checks = this.pending;
    this.pending = [];
    if (this.clustered) {
      const byAccount = new Map<number, Check[]>();
      for (const check of checks) {
        const group = byAccount.get(check.accountId);
        if (group) group.push(check);
        else byAccount.set(check.accountId, [check]);
      }
      for (const group of byAccount.values()) this.countInCalls(group);
      return;
    }
    this.countInCalls(checks);
  }

  private countInCalls(checks: Check[]): void {
    for (let start = 0; start < checks.length; start += MAX_CHECKS_PER_CALL) this.count(checks.slice(start, start + MAX_CHECKS_PER_CALL));
  }

  private count(checks: Check[]): void {
    const keys: string[] = [];
    const args: Array<string | number> = [];
    for (const check of checks) {
      keys.push(check.steadyKey, check.burstKey);
      args.push(check.skipSteady ? 1 : 0, check.limit.rps, check.limit.burst);
    }
    args.push(STEADY_WINDOW_S, BURST_WINDOW_S);
    withinMs(this.redis.countLimitWindows(keys.length, ...keys, ...args), REDIS_TIMEOUT_MS).then(
      (out) => {
        for (const [index, check] of checks.entries()) {
          const at = 4 * index;
          check.settle({ steady: out[at]!, steadyMs: out[at + 1]!, burst: out[at + 2]!, burstMs: out[at + 3]! });
        }
      },
      (error: Error) => {
        for (const check of checks) check.settle(error);
      },
    );
  }

  private blockedMs(key: string, now: number): number {
    const until = this.blocked.get(key);
    if (until === undefined) return 0;
    if (until > now) return until - now;
    this.blocked.delete(key);
    return 0;
  }

  private block(key: string, until: number): void {
    if (this.blocked.size >= MAX_BLOCKED_KEYS) {
      const now = Date.now();
      for (const [blockedKey, blockedUntil] of this.blocked) if (blockedUntil <= now) this.blocked.delete(blockedKey);
      if (this.blocked.size >= MAX_BLOCKED_KEYS) this.blocked.clear();
    }
    this.blocked.set(key, until);
  }

  private refuse(limit: RequestLimit, ms: number): LimitVerdict {
    this.options.onRefused();
    return this.verdict(limit, false, 0, ms);
  }

  private verdict({ rps, burst }: RequestLimit, allowed: boolean, remaining: number, ms: number): LimitVerdict {
    return {
      allowed,
      limit: rps,
      burst,
      remaining,
      resetS: Math.max(1, Math.ceil(ms / 1000)),
      policy: burst === 0 ? `${rps};w=${STEADY_WINDOW_S}` : `${rps};w=${STEADY_WINDOW_S}, ${burst};w=${BURST_WINDOW_S}`,
    };
  }
}

/** What one request's counts mean, as BurstyRateLimiter over two RateLimiterRedis with in-memory blocks judged them. */
export interface Judgement {
  allowed: boolean;
  /** Left of this second's quota. */
  remaining: number;
  /** Until the quota that decided comes back. */
  ms: number;
  /** A window found spent (its count reached its quota): refused from memory for this long, 0 if not. */
  blockSteadyMs: number;
  blockBurstMs: number;
}

/**
 * Judges one request from its counts. `steadyBlockedMs` > 0 means its second
 * was known spent and only the burst window was counted. Within the second's
 * quota the request goes; over it, the burst allowance decides, and the wait
 * is the shorter of the two windows' (the library's combined result).
 */
export function judge(limit: RequestLimit, counts: WindowCounts, steadyBlockedMs: number): Judgement {
  const steadyCounted = steadyBlockedMs === 0;
  const steadyMs = steadyCounted ? counts.steadyMs : steadyBlockedMs;
  const blockSteadyMs = steadyCounted && counts.steady >= limit.rps ? counts.steadyMs : 0;
  if (steadyCounted && counts.steady <= limit.rps) {
    return { allowed: true, remaining: limit.rps - counts.steady, ms: steadyMs, blockSteadyMs, blockBurstMs: 0 };
  }
  if (limit.burst === 0 || counts.burst < 0) return { allowed: false, remaining: 0, ms: steadyMs, blockSteadyMs, blockBurstMs: 0 };
  const blockBurstMs = counts.burst >= limit.burst ? counts.burstMs : 0;
  const ms = Math.min(steadyMs, counts.burstMs);
  return { allowed: counts.burst <= limit.burst, remaining: 0, ms, blockSteadyMs, blockBurstMs };
}
