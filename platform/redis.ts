import { Redis, type RedisOptions } from 'ioredis';

/**
 * A connection for BullMQ. `forQueue` connections fail commands at once while
 * Redis is away (the outbox keeps the work), worker connections wait and retry.
 */
export function createRedis(url: string, role: 'producer' | 'worker', extra: RedisOptions = {}): Redis {
  return new Redis(url, {
    maxRetriesPerRequest: role === 'worker' ? null : 1,
    enableOfflineQueue: role === 'worker',
    retryStrategy: (attempt) => Math.min(attempt * 200, 2_000),
    lazyConnect: false,
    ...extra,
  });
}

/**
 * `promise`, or a rejection once `ms` have passed: for calls on the request
 * path that must not wait for a Redis that is connected but not answering.
 * The rejection waits for the event loop to read what has arrived meanwhile:
 * after the process itself was busy for `ms` (timers run before sockets are
 * read), an answer already there wins, so a loaded API does not let limits
 * go unchecked for a slowness of its own.
 */
export function withinMs<T>(promise: Promise<T>, ms: number, what = 'Redis'): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => setImmediate(() => reject(new Error(`${what} did not answer within ${ms} ms`))), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}
