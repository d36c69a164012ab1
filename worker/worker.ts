import { type Job, UnrecoverableError, Worker } from 'bullmq';
import type { Config } from '../platform/config.js';
import { createDatabase } from '../platform/db.js';
import { maskText } from '../platform/loggable.js';
import { createLogger, type Logger } from '../platform/logger.js';
import {
  createApplierMetrics,
  createJobMetrics,
  createMetricsRegistry,
  createRetentionMetrics,
  registerPoolMetrics,
  serveMetrics,
  slonikPoolUsage,
} from '../platform/metrics.js';
import { createQueues, type JobName, jobOptionsOf, QUEUES, type QueueKey, queuePrefixOf, settleConnections } from '../platform/queue.js';
import { createRedis, type RedisClient } from '../platform/redis.js';
import { auditBlockStats } from '../sync/audit-blocks.js';
import { jobIds, RETENTION_EVERY_MS } from '../sync/job-ids.js';
import { OutboxNotifier } from '../sync/outbox.notifier.js';
import { WritePositions } from '../sync/write-positions.js';
import { DeliveryAgents } from '../webhooks/delivery-agents.js';
import { WebhookWaker } from '../webhooks/webhook.waker.js';
import { assertRegistryComplete, processors } from './processors/index.js';
import type { Processor, ProcessorContext } from './processors/processor.js';
import { Sweeper } from './sweeper.js';

export interface RunningWorker {
  /** Port of this worker's GET /metrics. */
  metricsPort: number;
  /** Stops taking jobs, waits for active ones (bounded), closes connections. */
  close(): Promise<void>;
}

/**
 * How long close() waits for active jobs before abandoning them (below bin/run.ts's
 * grace). An abandoned job's lock expires and another worker takes it over as stalled;
 * jobs are idempotent, so that is safe, only slower.
 */
const CLOSE_TIMEOUT_MS = 15_000;

/**
 * Connections of the webhook deliveries' own pool. Its statements are the
 * few of a delivery, prepared once per connection (platform/db.ts,
 * `prepareStatements`); each holds a connection for about a millisecond and
 * a send holds none, so a few serve thousands of deliveries a second.
 */
const DELIVERY_CONNECTIONS = 4;

/** Jobs of a queue one worker process runs at once: webhook deliveries wait on receivers, so they have their own bound. */
const queueConcurrency = (key: QueueKey, config: Config): number => {
  if (key === 'webhooks') return config.WEBHOOK_CONCURRENCY;
  const definition = QUEUES[key];
  return Math.min(config.WORKER_CONCURRENCY, 'concurrency' in definition ? definition.concurrency : Number.POSITIVE_INFINITY);
};

/**
 * Runs one worker process: a BullMQ Worker per queue dispatching by job name
 * to the processor registry, plus a sweeper that re-creates jobs from what
 * Postgres says is pending, so work survives a Redis that lost its data.
 */
export async function startWorker(config: Config, logger: Logger = createLogger(config.LOG_LEVEL, 'worker')): Promise<RunningWorker> {
  assertRegistryComplete(processors);
  const db = await createDatabase(config.DATABASE_URL, { maximumPoolSize: config.WORKER_CONCURRENCY + 2 });
  const deliveriesDb = await createDatabase(config.DATABASE_URL, { maximumPoolSize: DELIVERY_CONNECTIONS, prepareStatements: true });
  const connection = createRedis(config.REDIS_URL, 'worker');
  connection.on('error', (error) => logger.warn({ err: error.message }, 'redis connection error'));
  const queues = createQueues(
    connection,
    config.QUEUE_PREFIX,
    (error) => logger.debug({ err: error.message }, 'queue error'),
    jobOptionsOf(config),
  );
  const registry = createMetricsRegistry('worker');
  const jobMetrics = createJobMetrics(registry);
  const applierMetrics = createApplierMetrics(registry);
  const deliveryAgents = new DeliveryAgents();
  const waker = new WebhookWaker(deliveriesDb, config.DATABASE_URL, queues.webhooks, logger, config.WEBHOOK_DELIVERY_RETENTION_DAYS);
  const retentionMetrics = createRetentionMetrics(
    registry,
    () => auditBlockStats(db),
    (error) => logger.debug({ err: error.message }, 'retention metrics unavailable'),
  );
  // With read replicas, a connection that fails at once while Redis is away (the worker's own wait for it).
  const positionsRedis = config.DATABASE_REPLICA_URLS.length > 0 ? createRedis(config.REDIS_URL, 'producer') : undefined;
  positionsRedis?.on('error', (error) => logger.debug({ err: error.message }, 'redis connection error'));
  const context: ProcessorContext = {
    db,
    logger,
    notifier: new OutboxNotifier(queues.effects, logger),
    ...(positionsRedis && {
      positions: new WritePositions(db, positionsRedis, {
        prefix: config.QUEUE_PREFIX,
        ttlS: config.READ_POSITION_TTL_S,
        onFailure: (error) => logger.warn({ err: error.message }, 'write position not kept'),
      }),
    }),
    drainOptions: {
      sliceSize: config.APPLIER_SLICE_SIZE,
      budgetMs: config.APPLIER_RUN_MS,
      onApplied: (changes) => applierMetrics.changesApplied.inc({ by: 'applier' }, changes),
    },
    maxEffectsBacklog: config.BULK_MAX_EFFECTS_BACKLOG,
    metrics: applierMetrics,
    webhooks: {
      db: deliveriesDb,
      options: { allowPrivate: config.WEBHOOK_ALLOW_PRIVATE, retryBaseMs: config.WEBHOOK_RETRY_BASE_MS, agents: deliveryAgents },
      whileRunning: (pair, deliver) => waker.whileRunning(pair, deliver),
      continue: (pair) => waker.continue(pair),
    },
    retention: {
      auditDays: config.AUDIT_RETENTION_DAYS,
      bulkDays: config.BULK_RETENTION_DAYS,
      deliveryDays: config.WEBHOOK_DELIVERY_RETENTION_DAYS,
      metrics: retentionMetrics,
    },
  };

  registerPoolMetrics(registry, { worker: slonikPoolUsage(db), deliveries: slonikPoolUsage(deliveriesDb) });
  const metricsServer = await serveMetrics(registry, config.WORKER_METRICS_PORT, config.HOST, logger);

  const dispatcher = (queue: string) => async (job: Job) => {
    const processor = processors[job.name as JobName] as Processor<JobName> | undefined;
    if (!processor) throw new UnrecoverableError(`Unknown job name ${job.name}`);
    const requestId = typeof job.data?.requestId === 'string' ? (job.data.requestId as string) : undefined;
    const jobLogger = logger.child({ job: job.name, job_id: job.id, request_id: requestId });
    const labels = { queue, name: job.name };
    const attempt = job.attemptsMade + 1;
    const started = process.hrtime.bigint();
    let outcome = 'failed';
    try {
      const result = await processor(job as never, { ...context, logger: jobLogger });
      outcome = 'completed';
      return result;
    } catch (error) {
      // BullMQ keeps a failure's message and stack in Redis for days: masked like a log line, and no trace.
      if (error instanceof Error) {
        error.message = maskText(error.message);
        error.stack = `${error.name}: ${error.message}`;
      }
      throw error;
    } finally {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      jobMetrics.duration.observe({ ...labels, outcome }, seconds);
      jobMetrics.attempts.observe({ ...labels, outcome }, attempt);
      // Failures are logged at warn by the 'failed' listener below.
      jobLogger.debug({ outcome, attempt, duration_ms: Math.round(seconds * 1e6) / 1e3 }, 'job done');
    }
  };

  const workerConnections: RedisClient[] = [];
  const workers = (Object.keys(QUEUES) as QueueKey[]).map((key) => {
    const workerConnection = createRedis(config.REDIS_URL, 'worker');
    // Reconnects by itself; without a listener ioredis prints every failed attempt to stderr.
    workerConnection.on('error', (error) => logger.debug({ err: error.message }, 'worker redis connection error'));
    workerConnections.push(workerConnection);
    const worker = new Worker(QUEUES[key].name, dispatcher(QUEUES[key].name), {
      connection: workerConnection,
      prefix: queuePrefixOf(workerConnection, config.QUEUE_PREFIX, key),
      concurrency: queueConcurrency(key, config),
    });
    worker.on('failed', (job, error) =>
      logger.warn(
        { job: job?.name, job_id: job?.id, request_id: job?.data?.requestId, attempts: job?.attemptsMade, err: error.message },
        'job failed',
      ),
    );
    worker.on('error', (error) => logger.warn({ err: error.message }, 'worker error'));
    return worker;
  });

  const sweeper = new Sweeper(db, queues, logger);
  sweeper.start();
  await waker.start();
  await queues.maintenance
    .upsertJobScheduler('purge-expired-tokens', { every: 15 * 60_000 }, { name: 'purge-expired-tokens', data: {} })
    .catch((error: Error) => logger.warn({ err: error.message }, 'could not schedule token purge'));
  await queues.maintenance
    .upsertJobScheduler(jobIds.retention, { every: RETENTION_EVERY_MS }, { name: 'apply-retention', data: {} })
    .catch((error: Error) => logger.warn({ err: error.message }, 'could not schedule retention'));
  logger.info({ concurrency: config.WORKER_CONCURRENCY, metrics_port: metricsServer.port }, 'worker started');

  let closing: Promise<void> | undefined;
  return {
    metricsPort: metricsServer.port,
    close() {
      closing ??= (async () => {
        await sweeper.stop();
        await waker.stop();
        await settleConnections([...workers, ...Object.values(queues)]);
        await closeWithin(
          Promise.all(workers.map((worker) => worker.close())).catch((error: Error) =>
            logger.warn({ err: error.message }, 'closing a worker failed'),
          ),
          CLOSE_TIMEOUT_MS,
          async () => {
            logger.warn({ timeout_ms: CLOSE_TIMEOUT_MS }, 'active jobs did not finish in time; leaving them to another worker');
            await Promise.all(workers.map((worker) => worker.close(true)));
          },
        );
        await Promise.all(Object.values(queues).map((queue) => queue.close()));
        deliveryAgents.close();
        connection.disconnect();
        positionsRedis?.disconnect();
        for (const workerConnection of workerConnections) workerConnection.disconnect();
        await metricsServer.close();
        await Promise.all([db.end(), deliveriesDb.end()]);
        logger.info('worker stopped');
      })();
      return closing;
    },
  };
}

/** Waits for `work`; after `ms` runs `fallback` instead of waiting longer. */
async function closeWithin(work: Promise<unknown>, ms: number, fallback: () => Promise<void>): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<'expired'>((resolve) => {
    timer = setTimeout(() => resolve('expired'), ms);
  });
  const outcome = await Promise.race([work.then(() => 'done' as const), expired]);
  clearTimeout(timer);
  if (outcome === 'expired') await fallback();
}
