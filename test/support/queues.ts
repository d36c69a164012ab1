import type { Queue } from 'bullmq';
import type { Config } from '../../platform/config.js';
import { createQueues, type QueueKey } from '../../platform/queue.js';
import { createRedis, type RedisClient } from '../../platform/redis.js';

/** The service's queues as a test sees them through the BullMQ API, on the environment's prefix. */
export interface TestQueues {
  queues: Record<QueueKey, Queue>;
  close(): Promise<void>;
}

export function openQueues(config: Config): TestQueues {
  const connection: RedisClient = createRedis(config.REDIS_URL, 'worker');
  connection.on('error', () => undefined);
  const queues = createQueues(connection, config.QUEUE_PREFIX);
  return {
    queues,
    async close() {
      await Promise.all(Object.values(queues).map((queue) => queue.close()));
      connection.disconnect();
    },
  };
}
