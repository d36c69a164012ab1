import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { redisTargetOf } from './config.js';

/** A connection to one Redis or to a Redis Cluster (REDIS_URL decides; see platform/config.ts). */
export type RedisClient = Redis | Cluster;

/**
 * A connection for BullMQ. `producer` connections fail commands at once while
 * Redis is away (the outbox keeps the work), worker connections wait and retry.
 * On a cluster the same holds for the cluster as a whole; a command whose
 * master is lost is sent again while the cluster promotes its replica
 * (ioredis: retryDelayOnFailover, maxRedirections), then fails.
 */
export function createRedis(url: string, role: 'producer' | 'worker', extra: RedisOptions = {}): RedisClient {
  const target = redisTargetOf(url);
  const retryStrategy = (attempt: number) => Math.min(attempt * 200, 2_000);
  const maxRetriesPerRequest = role === 'worker' ? null : 1;
  if (target.kind === 'single') {
    return new Redis(target.url, {
      maxRetriesPerRequest,
      enableOfflineQueue: role === 'worker',
      retryStrategy,
      lazyConnect: false,
      ...extra,
    });
  }
  return new Cluster(target.nodes, {
    enableOfflineQueue: role === 'worker',
    clusterRetryStrategy: retryStrategy,
    // A lost master's slots are asked for again this often; its replica takes over within cluster-node-timeout and a vote.
    retryDelayOnFailover: 200,
    retryDelayOnClusterDown: 200,
    // About 5 s of retries per command through a failover (each retry waits retryDelayOnFailover and refreshes the slots).
    maxRedirections: 25,
    slotsRefreshInterval: 2_000,
    lazyConnect: false,
    redisOptions: {
      maxRetriesPerRequest,
      ...(target.username === undefined ? {} : { username: target.username }),
      ...(target.password === undefined ? {} : { password: target.password }),
      ...extra,
    },
  });
}

/** Each master's connection (the one connection of a single Redis): what a SCAN must visit to see every key. */
export function mastersOf(redis: RedisClient): Redis[] {
  return redis instanceof Cluster ? redis.nodes('master') : [redis];
}

/** Removes every key matching `pattern` (SCAN on each master, so a cluster's keys are all found). */
export async function removeKeys(redis: RedisClient, pattern: string): Promise<void> {
  for (const node of mastersOf(redis)) {
    for await (const keys of node.scanStream({ match: pattern, count: 1_000 })) {
      if ((keys as string[]).length === 0) continue;
      // One DEL per key on a cluster: the keys of one SCAN page are on one node, but not in one slot.
      if (redis instanceof Cluster) await (keys as string[]).reduce((pipeline, key) => pipeline.del(key), node.pipeline()).exec();
      else await node.del(...(keys as string[]));
    }
  }
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
