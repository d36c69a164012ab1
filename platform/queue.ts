import { type JobsOptions, Queue } from 'bullmq';
import { type RedisClient, removeKeys } from './redis.js';

/** Every queue the service uses, and the job names each one carries. */
export const QUEUES = {
  effects: { name: 'effects', jobs: ['apply-outbox'] },
  maintenance: { name: 'maintenance', jobs: ['purge-language', 'purge-expired-tokens', 'apply-retention', 'scrub-erasure'] },
  // One bulk file at a time per worker process, a slice at a time, so one shop's catalogue cannot starve another's.
  bulk: { name: 'bulk', jobs: ['process-bulk'], concurrency: 1 },
  // Deliveries wait on receivers, not on this process: many at once (WEBHOOK_CONCURRENCY), so a slow one holds up no other.
  webhooks: { name: 'webhooks', jobs: ['deliver-webhook'] },
} as const;

export type QueueKey = keyof typeof QUEUES;
export type JobName = (typeof QUEUES)[QueueKey]['jobs'][number];

/** `requestId`: the request that caused the job, so its logs can be joined with the API's. */
export interface JobData {
  'apply-outbox': { langKey: number; requestId?: string };
  'purge-language': { langKey: number; requestId?: string };
  'purge-expired-tokens': { requestId?: string };
  'apply-retention': { requestId?: string };
  'scrub-erasure': { erasureId: string; requestId?: string };
  'process-bulk': { bulkJobId: string; requestId?: string };
  'deliver-webhook': { accountId: number; webhookId: string; langKey: number; requestId?: string };
}

/** Failed work retries with backoff; finished jobs are trimmed by age and count. */
export const DEFAULT_JOB_OPTIONS: JobsOptions = {
  attempts: 8,
  backoff: { type: 'exponential', delay: 500 },
  removeOnComplete: { age: 3_600, count: 1_000 },
  removeOnFail: { age: 7 * 24 * 3_600, count: 10_000 },
};

/** The retry budget of the configuration (JOB_ATTEMPTS, JOB_BACKOFF_MS) over the defaults. */
export const jobOptionsOf = (config: { JOB_ATTEMPTS: number; JOB_BACKOFF_MS: number }): JobsOptions => ({
  ...DEFAULT_JOB_OPTIONS,
  attempts: config.JOB_ATTEMPTS,
  backoff: { type: 'exponential', delay: config.JOB_BACKOFF_MS },
});

/**
 * The BullMQ prefix of a queue: QUEUE_PREFIX on one Redis (`sync:effects:…`,
 * as always), and on a cluster with the queue's name as hash tag
 * (`sync:{effects}:effects:…`): BullMQ's scripts need every key of a queue in
 * one slot, and each queue having a slot of its own lets the queues spread
 * over the masters (docs/decisions.md, "Redis Cluster").
 */
export const queuePrefixOf = (connection: RedisClient, prefix: string, key: QueueKey): string =>
  connection.isCluster ? `${prefix}:{${QUEUES[key].name}}` : prefix;

export function createQueues(
  connection: RedisClient,
  prefix: string,
  onError: (error: Error) => void = () => undefined,
  defaultJobOptions: JobsOptions = DEFAULT_JOB_OPTIONS,
): Record<QueueKey, Queue> {
  const queue = (key: QueueKey) =>
    new Queue(QUEUES[key].name, { connection, prefix: queuePrefixOf(connection, prefix, key), defaultJobOptions });
  const queues = { effects: queue('effects'), maintenance: queue('maintenance'), bulk: queue('bulk'), webhooks: queue('webhooks') };
  // Without a listener an 'error' event would be printed to stderr on every reconnect attempt.
  for (const queue of Object.values(queues)) queue.on('error', onError);
  return queues;
}

/**
 * Removes every queue of the prefix with its jobs (a reset). A queue writes
 * its `meta` key when it first connects, which can land after the
 * obliteration: what is left of each queue's keys is removed after closing.
 */
export async function removeQueues(connection: RedisClient, prefix: string): Promise<void> {
  const queues = Object.entries(createQueues(connection, prefix)) as Array<[QueueKey, Queue]>;
  for (const [, queue] of queues) await queue.obliterate({ force: true });
  // Every queue is closed before the keys go: an open one may still write its `meta` key as it finishes connecting.
  await Promise.all(queues.map(([, queue]) => queue.close()));
  for (const [key] of queues) await removeKeys(connection, `${queuePrefixOf(connection, prefix, key)}:${QUEUES[key].name}:*`);
}

/**
 * Waits (at most `ms`) until the queues' Redis connections have finished
 * connecting, successfully or not. BullMQ drops its error listeners when a
 * queue on a shared connection closes; if the connection was still being set
 * up, disconnecting it afterwards rejects that setup with no listener left,
 * which would crash the process during shutdown.
 */
export async function settleConnections(queues: Array<{ client: Promise<unknown> }>, ms = 2_000): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    Promise.allSettled(queues.map((queue) => queue.client)),
    new Promise<void>((resolve) => {
      timer = setTimeout(resolve, ms);
    }),
  ]);
  clearTimeout(timer);
}
