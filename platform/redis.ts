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
