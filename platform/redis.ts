import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { redisTargetOf } from './config.js';

/** A connection to one Redis or to a Redis Cluster (REDIS_URL decides; see platform/config.ts). */
export type RedisClient = Redis | Cluster;

/**
 * A connection for BullMQ. `producer` connections fail commands at once while
 * Redis is away (the outbox keeps the work), worker connections wait and retry.
 * On a cluster the same holds for each slot: a producer's command whose
 * master is lost fails within 0.3 s, one the cluster refuses (CLUSTERDOWN) at
 * once; a worker's is sent again while the cluster promotes the replica.
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
    // A command to a node whose connection is closed (lost, or still opening: ioredis connects to a node on its first
    // command) is tried again after this long, having asked where its slot is now. A worker's goes on about 5 s in
    // all, while a replica takes over (cluster-node-timeout and a vote); a producer's gives up after 3 tries (0.3 s).
    retryDelayOnFailover: role === 'worker' ? 200 : 100,
    // A cluster that refuses commands (a slot nobody serves): a producer fails at once.
    retryDelayOnClusterDown: role === 'worker' ? 200 : 0,
    maxRedirections: role === 'worker' ? 25 : 3,
    // A producer never retries, so it learns a promoted replica from this refresh (or a MOVED answer).
    slotsRefreshInterval: 2_000,
    // Ready once the slots are known, not only while cluster_state is ok: a connect() whose ready check finds the
    // cluster down never settles (ioredis 5), and BullMQ's worker waits on that when it reconnects.
    enableReadyCheck: false,
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
