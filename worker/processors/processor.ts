import type { Job } from 'bullmq';
import type { Logger } from 'pino';
import type { Database } from '../../platform/db.js';
import type { ApplierMetrics, RetentionMetrics } from '../../platform/metrics.js';
import type { JobData, JobName } from '../../platform/queue.js';
import type { DrainOptions } from '../../sync/drain.js';
import type { OutboxNotifier } from '../../sync/outbox.notifier.js';
import type { WritePositions } from '../../sync/write-positions.js';
import type { Pair } from '../../webhooks/delivery.repository.js';
import type { DeliveryOptions } from '../../webhooks/delivery.service.js';

export interface ProcessorContext {
  db: Database;
  logger: Logger;
  /** Wakes the applier of a language after work that wrote outbox rows. */
  notifier: OutboxNotifier;
  /**
   * With read replicas: raises the write position of a language's account
   * after work applied in it committed, so that its reads on a replica show
   * what the worker did (sync/write-positions.ts); undefined without replicas.
   */
  positions?: WritePositions;
  /** How the applier drains a language (slice size from the configuration; it counts what it applies in `metrics`). */
  drainOptions: DrainOptions;
  metrics: ApplierMetrics;
  /** Changes of a language left to apply at which a bulk file waits for the applier (backpressure). */
  maxEffectsBacklog: number;
  /**
   * Webhook deliveries: their settings, a pair's run made known to the waker
   * while it lasts, and the next run queued for a pair with more to send
   * (webhooks/webhook.waker.ts).
   */
  webhooks: {
    /** The deliveries' own pool, whose statements are prepared (worker/worker.ts). */
    db: Database;
    options: DeliveryOptions;
    whileRunning(pair: Pair, deliver: () => Promise<boolean>): Promise<boolean>;
    continue(pair: Pair): Promise<void>;
  };
  /** Retention's days (AUDIT_RETENTION_DAYS, BULK_RETENTION_DAYS, WEBHOOK_DELIVERY_RETENTION_DAYS) and its counters. */
  retention: { auditDays: number; bulkDays: number; deliveryDays: number; metrics: RetentionMetrics };
}

export type Processor<N extends JobName> = (job: Job<JobData[N]>, context: ProcessorContext) => Promise<unknown>;

export type ProcessorRegistry = { [N in JobName]: Processor<N> };
