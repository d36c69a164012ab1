import type { Job } from 'bullmq';
import type { Logger } from 'pino';
import type { Database } from '../../shared/db.js';
import type { OutboxNotifier } from '../../shared/outbox-notifier.js';
import type { JobData, JobName } from '../../shared/queue.js';

export interface ProcessorContext {
  db: Database;
  logger: Logger;
  /** Wakes the applier of a language after work that wrote outbox rows. */
  notifier: OutboxNotifier;
}

export type Processor<N extends JobName> = (job: Job<JobData[N]>, context: ProcessorContext) => Promise<unknown>;

export type ProcessorRegistry = { [N in JobName]: Processor<N> };
