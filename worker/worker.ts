import { UnrecoverableError, Worker, type Job } from 'bullmq';
import type { Config } from '../shared/config.js';
import { createDatabase } from '../shared/db.js';
import { createLogger, type Logger } from '../shared/logger.js';
import { createQueues, QUEUES, type JobName, type QueueKey } from '../shared/queue.js';
import { OutboxNotifier } from '../shared/outbox-notifier.js';
import { createRedis } from '../shared/redis.js';
import { listLanguagesPendingPurge } from '../shared/repositories/language.repository.js';
import { languagesWithPendingChanges } from './effects/effects.repository.js';
import { unfinishedBulkJobs } from '../shared/repositories/bulk.repository.js';
import { assertRegistryComplete, processors } from './processors/index.js';
import type { Processor, ProcessorContext } from './processors/processor.js';

export interface RunningWorker {
  /** Stops taking jobs, waits for active ones (bounded), closes connections. */
  close(): Promise<void>;
}

const SWEEP_INTERVAL_MS = 250;

const queueConcurrency = (key: QueueKey): number => {
  const definition = QUEUES[key];
  return 'concurrency' in definition ? definition.concurrency : Number.POSITIVE_INFINITY;
};

/**
 * Runs one worker process: a BullMQ Worker per queue dispatching by job name
 * to the processor registry, plus a sweeper that re-creates jobs from what
 * Postgres says is pending, so work survives a Redis that lost its data.
 */
export async function startWorker(config: Config, logger: Logger = createLogger(config.LOG_LEVEL, 'worker')): Promise<RunningWorker> {
  assertRegistryComplete(processors);
  const db = await createDatabase(config.DATABASE_URL, { maximumPoolSize: config.WORKER_CONCURRENCY + 2 });
  const connection = createRedis(config.REDIS_URL, 'worker');
  connection.on('error', (error) => logger.warn({ err: error.message }, 'redis connection error'));
  const queues = createQueues(connection, config.QUEUE_PREFIX, (error) => logger.debug({ err: error.message }, 'queue error'));
  const context: ProcessorContext = { db, logger, notifier: new OutboxNotifier(queues.effects, logger) };

  const dispatch = async (job: Job) => {
    const processor = processors[job.name as JobName] as Processor<JobName> | undefined;
    if (!processor) throw new UnrecoverableError(`Unknown job name ${job.name}`);
    return processor(job as never, { ...context, logger: logger.child({ job: job.name, job_id: job.id }) });
  };

  const workers = (Object.keys(QUEUES) as QueueKey[]).map((key) => {
    const worker = new Worker(QUEUES[key].name, dispatch, {
      connection: createRedis(config.REDIS_URL, 'worker'),
      prefix: config.QUEUE_PREFIX,
      concurrency: Math.min(config.WORKER_CONCURRENCY, queueConcurrency(key)),
    });
    worker.on('failed', (job, error) => logger.warn({ job: job?.name, job_id: job?.id, err: error.message }, 'job failed'));
    worker.on('error', (error) => logger.warn({ err: error.message }, 'worker error'));
    return worker;
  });

  let sweeping = false;
  const sweep = async () => {
    if (sweeping) return;
    sweeping = true;
    try {
      const window = Math.floor(Date.now() / 1_000);
      for (const langKey of await languagesWithPendingChanges(db)) {
        await queues.effects.add('apply-outbox', { langKey }, { jobId: `apply-${langKey}-sweep-${window}` });
      }
      const slice = Math.floor(Date.now() / 250);
      for (const bulkJobId of await unfinishedBulkJobs(db, 100)) {
        await queues.bulk.add('process-bulk', { bulkJobId }, { jobId: `bulk-${bulkJobId}-${slice}` });
      }
      for (const langKey of await listLanguagesPendingPurge(db, 100)) {
        await queues.maintenance.add('purge-language', { langKey }, { jobId: `purge-language-${langKey}` });
      }
    } catch (error) {
      logger.warn({ err: (error as Error).message }, 'sweep failed; retrying');
    } finally {
      sweeping = false;
    }
  };
  const timer = setInterval(() => void sweep(), SWEEP_INTERVAL_MS);
  void sweep();
  await queues.maintenance
    .upsertJobScheduler('purge-expired-tokens', { every: 15 * 60_000 }, { name: 'purge-expired-tokens', data: {} })
    .catch((error: Error) => logger.warn({ err: error.message }, 'could not schedule token purge'));
  logger.info({ concurrency: config.WORKER_CONCURRENCY }, 'worker started');

  let closing: Promise<void> | undefined;
  return {
    close() {
      closing ??= (async () => {
        clearInterval(timer);
        await Promise.all(workers.map((worker) => worker.close()));
        await Promise.all(Object.values(queues).map((queue) => queue.close()));
        connection.disconnect();
        await db.end();
        logger.info('worker stopped');
      })();
      return closing;
    },
  };
}
