import type { Queue } from 'bullmq';
import { unfinishedBulkJobs } from '../bulk/bulk.repository.js';
import type { Database } from '../platform/db.js';
import type { Logger } from '../platform/logger.js';
import type { QueueKey } from '../platform/queue.js';
import { listLanguagesPendingPurge } from '../records/language.repository.js';
import { languagesWithPendingChanges } from './applier.repository.js';
import { jobIds } from './job-ids.js';

/** How often each worker process sweeps. */
export const SWEEP_INTERVAL_MS = 250;

/**
 * Redis is a transport, Postgres the truth: every worker process re-creates,
 * from what Postgres says is pending, the jobs that would do it. A job lost
 * between a commit and its enqueue, or a Redis that restarted empty, only
 * delays the work by one sweep. The job ids (job-ids.ts) make re-creating a
 * job that is already queued a no-op.
 */
export class Sweeper {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  constructor(
    private readonly db: Database,
    private readonly queues: Record<QueueKey, Queue>,
    private readonly logger: Logger,
  ) {}

  start(): void {
    this.timer ??= setInterval(() => void this.sweep(), SWEEP_INTERVAL_MS);
    void this.sweep();
  }

  /** Stops sweeping and waits for a sweep in progress (it would find its pool closed under it). */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
  }

  /** One sweep at a time; a tick during a slow sweep joins the running one. */
  sweep(): Promise<void> {
    this.running ??= this.sweepOnce().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  private async sweepOnce(): Promise<void> {
    try {
      for (const langKey of await languagesWithPendingChanges(this.db)) {
        await this.queues.effects.add('apply-outbox', { langKey }, { jobId: jobIds.applyFromSweep(langKey) });
      }
      for (const bulkJobId of await unfinishedBulkJobs(this.db, 100)) {
        await this.queues.bulk.add('process-bulk', { bulkJobId }, { jobId: jobIds.bulkSlice(bulkJobId) });
      }
      for (const langKey of await listLanguagesPendingPurge(this.db, 100)) {
        await this.queues.maintenance.add('purge-language', { langKey }, { jobId: jobIds.purgeLanguage(langKey) });
      }
    } catch (error) {
      this.logger.warn({ err: (error as Error).message }, 'sweep failed; retrying');
    }
  }
}
