import type { Queue } from 'bullmq';
import { bulkJobsInTurn, discardAbandonedUploads } from '../bulk/bulk.repository.js';
import { erasuresToScrub } from '../erasures/erasure-scrub.repository.js';
import type { Database } from '../platform/db.js';
import type { Logger } from '../platform/logger.js';
import type { QueueKey } from '../platform/queue.js';
import { listLanguagesPendingPurge } from '../records/language.repository.js';
import { BACKGROUND_PRIORITY, jobIds } from '../sync/job-ids.js';
import { languagesWithPendingChanges } from '../sync/outbox.repository.js';

/** How often each worker process sweeps. */
export const SWEEP_INTERVAL_MS = 250;

/** How often, at most, a sweep also looks for wake-up jobs that used up their attempts. */
export const RECOVER_INTERVAL_MS = 2_000;

/** Jobs that only wake a worker up for work that Postgres holds: re-running one is always safe. */
const WAKE_UPS: ReadonlySet<string> = new Set(['apply-outbox', 'process-bulk', 'purge-language', 'scrub-erasure']);

/** Failed jobs looked at per queue and pass. */
const RECOVER_PAGE = 200;

/**
 * Redis is a transport, Postgres the truth: every worker process re-creates,
 * from what Postgres says is pending, the jobs that would do it. A job lost
 * between a commit and its enqueue, or a Redis that restarted empty, only
 * delays the work by one sweep. The job ids (sync/job-ids.ts) make re-creating a
 * job that is already queued a no-op.
 *
 * A wake-up job that used up its attempts while Postgres (or anything else it
 * needs) was away is run again once a sweep gets through, so it does not
 * stay failed for work that is done, or that its new run does. A bulk upload
 * left `receiving` by an API process that died is removed a while after its
 * lease ends (bulk/bulk.repository.ts, discardAbandonedUploads).
 */
export class Sweeper {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private lastRecovery = 0;

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
        // In the background: wake-ups after writes are never missed (one that comes while the language's applier
        // runs is kept for after it), so this only catches ones lost with Redis or an API process, and must not
        // give a busy language extra turns ahead of quiet ones.
        await this.queues.effects.add(
          'apply-outbox',
          { langKey },
          { jobId: jobIds.applyFromSweep(langKey), priority: BACKGROUND_PRIORITY },
        );
      }
      for (const bulkJobId of await bulkJobsInTurn(this.db, 100)) {
        await this.queues.bulk.add('process-bulk', { bulkJobId }, { jobId: jobIds.bulkSlice(bulkJobId) });
      }
      for (const langKey of await listLanguagesPendingPurge(this.db, 100)) {
        await this.queues.maintenance.add('purge-language', { langKey }, { jobId: jobIds.purgeLanguage(langKey) });
      }
      // Erasures applied in every language they reach: their scrub (idempotent, so a job queued twice costs nothing).
      for (const erasureId of await erasuresToScrub(this.db, 100)) {
        await this.queues.maintenance.add('scrub-erasure', { erasureId }, { jobId: jobIds.scrubErasure(erasureId) });
      }
      // Postgres and Redis answered just now: what failed for want of them can run again.
      if (Date.now() - this.lastRecovery >= RECOVER_INTERVAL_MS) {
        this.lastRecovery = Date.now();
        await this.recoverExhaustedWakeUps();
        // Uploads whose API process died while receiving them: nobody will finish them.
        const discarded = await discardAbandonedUploads(this.db, 10);
        if (discarded > 0) this.logger.info({ discarded }, 'abandoned bulk uploads removed');
      }
    } catch (error) {
      this.logger.warn({ err: (error as Error).message }, 'sweep failed; retrying');
    }
  }

  /**
   * Runs again every wake-up job that failed after its last attempt. A job
   * refused for good (a malformed job, UnrecoverableError) failed before its
   * attempts were used up: it stays failed for an operator to look at.
   */
  private async recoverExhaustedWakeUps(): Promise<void> {
    for (const queue of Object.values(this.queues)) {
      if ((await queue.getFailedCount()) === 0) continue;
      for (const job of await queue.getFailed(0, RECOVER_PAGE - 1)) {
        if (!job || !WAKE_UPS.has(job.name) || job.attemptsMade < (job.opts.attempts ?? 1)) continue;
        // Another worker's sweeper may have moved it already.
        await job.retry('failed', { resetAttemptsMade: true, resetAttemptsStarted: true }).then(
          () => this.logger.info({ job: job.name, job_id: job.id }, 'exhausted job run again'),
          () => undefined,
        );
      }
    }
  }
}
