import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { BurstyRateLimiter, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BURST_WINDOW_S, judge, limitKeySpaces, RequestLimiter } from './request-limiter.js';
import type { RequestLimit } from './token-verifier.js';

const REDIS_URL = process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379';

describe('when one request is judged from its windows', () => {
  const limit = { rps: 3, burst: 2 };
  it.each([
    ['within the second', { steady: 1, steadyMs: 900, burst: -1, burstMs: -1 }, 0, { allowed: true, remaining: 2, ms: 900 }],
    ['the second quota reached', { steady: 3, steadyMs: 700, burst: -1, burstMs: -1 }, 0, { allowed: true, remaining: 0, ms: 700 }],
    [
      'over the second, within the burst',
      { steady: 4, steadyMs: 600, burst: 1, burstMs: 59_000 },
      0,
      { allowed: true, remaining: 0, ms: 600 },
    ],
    [
      'over the second, the burst reached',
      { steady: 5, steadyMs: 500, burst: 2, burstMs: 58_000 },
      0,
      { allowed: true, remaining: 0, ms: 500 },
    ],
    ['over both', { steady: 6, steadyMs: 400, burst: 3, burstMs: 300 }, 0, { allowed: false, remaining: 0, ms: 300 }],
    [
      'the second known spent, within the burst',
      { steady: -1, steadyMs: -1, burst: 1, burstMs: 59_000 },
      250,
      { allowed: true, remaining: 0, ms: 250 },
    ],
    [
      'the second known spent, over the burst',
      { steady: -1, steadyMs: -1, burst: 3, burstMs: 59_000 },
      250,
      { allowed: false, remaining: 0, ms: 250 },
    ],
  ])('should judge %s as the library did', (_, counts, steadyBlockedMs, expected) => {
    expect(judge(limit, counts, steadyBlockedMs)).toMatchObject(expected);
  });

  it('should block the second once its count reaches the quota, and the burst once its count reaches its own', () => {
    expect(judge(limit, { steady: 2, steadyMs: 800, burst: -1, burstMs: -1 }, 0)).toMatchObject({ blockSteadyMs: 0, blockBurstMs: 0 });
    expect(judge(limit, { steady: 3, steadyMs: 800, burst: -1, burstMs: -1 }, 0)).toMatchObject({ blockSteadyMs: 800, blockBurstMs: 0 });
    expect(judge(limit, { steady: 5, steadyMs: 800, burst: 2, burstMs: 40_000 }, 0)).toMatchObject({
      blockSteadyMs: 800,
      blockBurstMs: 40_000,
    });
  });

  it('should refuse over the second without a burst allowance', () => {
    expect(judge({ rps: 2, burst: 0 }, { steady: 3, steadyMs: 600, burst: -1, burstMs: -1 }, 0)).toMatchObject({ allowed: false, ms: 600 });
  });
});

describe('when requests are counted in Redis', () => {
  let redis: Redis;
  let prefix: string;
  const refusals: number[] = [];
  const unavailable: Error[] = [];

  beforeAll(async () => {
    redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
    await redis.ping();
    prefix = `limiter-test-${randomUUID()}`;
  });

  afterAll(async () => {
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length > 0) await redis.del(...keys);
    redis.disconnect();
  });

  const limiterOf = (defaults: RequestLimit, keyPrefix = prefix) =>
    new RequestLimiter(redis, {
      prefix: keyPrefix,
      defaults,
      onRefused: () => refusals.push(1),
      onUnavailable: (error) => unavailable.push(error),
    });

  /** The library's limiter as the API used it before, on its own key prefix. */
  const libraryOf = ({ rps, burst }: RequestLimit, keyPrefix: string) => {
    const space = limitKeySpaces(keyPrefix).requests;
    const steady = new RateLimiterRedis({
      storeClient: redis,
      keyPrefix: `${space}:rps`,
      points: rps,
      duration: 1,
      inMemoryBlockOnConsumed: rps,
    });
    if (burst === 0) return steady;
    const extra = new RateLimiterRedis({
      storeClient: redis,
      keyPrefix: `${space}:burst`,
      points: burst,
      duration: BURST_WINDOW_S,
      inMemoryBlockOnConsumed: burst,
    });
    return new BurstyRateLimiter(steady, extra);
  };

  it.each([
    [{ rps: 3, burst: 2 }, [1, 1, 1, 2, 3, 1]],
    [{ rps: 4, burst: 0 }, [2, 3, 2]],
    [{ rps: 1, burst: 5 }, [3, 3, 2]],
  ])('should allow and refuse what rate-limiter-flexible did for %o, in ticks of %o requests', async (limit, ticks) => {
    const ours = limiterOf(limit);
    const library = libraryOf(limit, `${prefix}-library-${limit.rps}-${limit.burst}`);
    const accountId = 1_000 + limit.rps * 10 + limit.burst;
    const seen: Array<{ ours: [boolean, number]; library: [boolean, number] }> = [];
    // Well within one second, so both count in one steady window.
    for (const size of ticks) {
      const [mine, theirs] = await Promise.all([
        Promise.all(Array.from({ length: size }, () => ours.consume(accountId, null))),
        Promise.all(
          Array.from({ length: size }, () =>
            library.consume(accountId).then(
              (res) => [true, res.remainingPoints] as [boolean, number],
              (res: unknown) => {
                if (!(res instanceof RateLimiterRes)) throw res;
                return [false, res.remainingPoints] as [boolean, number];
              },
            ),
          ),
        ),
      ]);
      for (const [index, verdict] of mine.entries()) {
        expect(verdict).not.toBeNull();
        seen.push({ ours: [verdict!.allowed, verdict!.remaining], library: theirs[index]! });
      }
    }
    expect(seen.map(({ ours }) => ours)).toEqual(seen.map(({ library }) => library));
    expect(seen.filter(({ ours }) => ours[0])).toHaveLength(Math.min(seen.length, limit.rps + limit.burst));
  });

  it("should answer a whole tick of many accounts' requests, more than one call takes, each counted once", async () => {
    const limiter = limiterOf({ rps: 2, burst: 0 });
    const accounts = Array.from({ length: 600 }, (_, index) => 10_000 + index);
    const verdicts = await Promise.all(accounts.map((accountId) => limiter.consume(accountId, null)));
    expect(verdicts.map((verdict) => [verdict?.allowed, verdict?.remaining])).toEqual(accounts.map(() => [true, 1]));
    const space = limitKeySpaces(prefix).requests;
    expect(await redis.mget(...accounts.map((accountId) => `${space}:rps:${accountId}`))).toEqual(accounts.map(() => '1'));
  });

  it('should use the limit given for the account over the defaults, with its policy', async () => {
    const limiter = limiterOf({ rps: 100, burst: 0 });
    const first = await limiter.consume(7_001, { rps: 1, burst: 1 });
    const second = await limiter.consume(7_001, { rps: 1, burst: 1 });
    const third = await limiter.consume(7_001, { rps: 1, burst: 1 });
    expect([first, second, third].map((verdict) => verdict?.allowed)).toEqual([true, true, false]);
    expect(third).toMatchObject({ limit: 1, burst: 1, remaining: 0, policy: '1;w=1, 1;w=60' });
    expect(third!.resetS).toBeGreaterThanOrEqual(1);
  });

  it('should refuse a spent account from memory, without counting it in Redis, until its window has passed', async () => {
    const limiter = limiterOf({ rps: 2, burst: 0 });
    const space = limitKeySpaces(prefix).requests;
    const before = refusals.length;
    const verdicts = [];
    for (let index = 0; index < 5; index += 1) verdicts.push(await limiter.consume(8_001, null));
    expect(verdicts.map((verdict) => verdict?.allowed)).toEqual([true, true, false, false, false]);
    expect(refusals.length - before).toBe(3);
    // The count stopped at the quota: the refusals were answered from memory.
    expect(await redis.get(`${space}:rps:8001`)).toBe('2');
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    expect((await limiter.consume(8_001, null))?.allowed).toBe(true);
  });

  it('should let a request through, and say so, when Redis cannot be asked', async () => {
    const gone = new Redis('redis://127.0.0.1:1', {
      maxRetriesPerRequest: 0,
      enableOfflineQueue: false,
      lazyConnect: true,
      retryStrategy: () => null,
    });
    const limiter = new RequestLimiter(gone, {
      prefix,
      defaults: { rps: 1, burst: 0 },
      onRefused: () => undefined,
      onUnavailable: (error) => unavailable.push(error),
    });
    const before = unavailable.length;
    expect(await limiter.consume(9_001, null)).toBeNull();
    expect(unavailable.length - before).toBe(1);
    gone.disconnect();
  });
});
