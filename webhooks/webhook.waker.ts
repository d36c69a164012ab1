import { createHash } from 'node:crypto';
import type { Queue } from 'bullmq';
import pg from 'pg';
import type { Database } from '../platform/db.js';
import { Listener } from '../platform/listener.js';
import type { Logger } from '../platform/logger.js';
import { AUDIT_WRITTEN } from '../sync/audit.repository.js';
import { jobIds } from '../sync/job-ids.js';
import { announceFinishedBulkJobs } from './bulk-finished.announcer.js';
import { type Pair, pairsWithWork } from './delivery.repository.js';

/** How often every worker process looks for webhook work, whatever it heard. */
export const WEBHOOK_SWEEP_MS = 1_000;
/** A heard commit is looked at after this long, so that a burst of commits makes one sweep. */
const HEARD_DELAY_MS = 20;
/** Pairs queued per sweep at most; the rest on the next. */
const PAIRS_PER_SWEEP = 1_000;

/**
 * Wakes webhook deliveries (interface §23): queues a deliver-webhook job for
 * every webhook and language with something to send and no worker on it,
 * right after a commit wrote audit entries (AUDIT_WRITTEN, heard on one
 * LISTEN connection) and every second besides. What is to send lives in
 * Postgres (positions, deliveries, the audit log), so a job lost with Redis,
 * a notification missed while the connection was down, or a retry coming due
 * only waits for the next sweep.
 */
export class WebhookWaker {
  private timer: NodeJS.Timeout | undefined;
  private soon: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private readonly listener: Listener;
  private stopped = false;

  constructor(
    private readonly db: Database,
    databaseUrl: string,
    private readonly queue: Queue,
    private readonly logger: Logger,
    /** Bulk jobs are announced when they finished within this many days (the delivered deliveries' retention). */
    private readonly announceWithinDays: number,
  ) {
    this.listener = new Listener(databaseUrl, logger, {
      channels: [pg.escapeIdentifier(AUDIT_WRITTEN)],
      onNotification: () => this.wake(),
      // The sweep every second goes on meanwhile; the listener comes back when Postgres does.
      onLost: () => undefined,
      lostMessage: 'webhook listener lost its connection',
      failedMessage: 'webhook listener could not connect',
      applicationName: 'webhook waker',
    });
  }

  async start(): Promise<void> {
    this.timer = setInterval(() => void this.sweep(), WEBHOOK_SWEEP_MS);
    await this.listener.start();
    void this.sweep();
  }

  /** Sweeps shortly (a heard commit). */
  wake(): void {
    if (this.stopped || this.soon) return;
    this.soon = setTimeout(() => {
      this.soon = undefined;
      void this.sweep();
    }, HEARD_DELAY_MS);
  }

  /**
   * Queues the pair again at once: a run that stopped with more to send (its
   * time was up) is followed by the next without waiting for a sweep. Its own
   * job id, as the run's job is still active and a sweep's id for this window
   * may be taken.
   */
  async continue(pair: Pair): Promise<void> {
    if (this.stopped) return;
    await this.queue.add('deliver-webhook', pair, { ...JOB_OPTIONS, jobId: jobIds.deliverWebhookAgain(pairKey(pair)) });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    clearTimeout(this.soon);
    await this.listener.close();
    await this.running;
  }

  /** One sweep at a time; one asked for meanwhile runs after it. */
  private sweep(): Promise<void> {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = this.sweepOnce().finally(() => {
      this.running = undefined;
      if (this.again && !this.stopped) {
        this.again = false;
        void this.sweep();
      }
    });
    return this.running;
  }

  private async sweepOnce(): Promise<void> {
    if (this.stopped) return;
    try {
      await announceFinishedBulkJobs(this.db, this.announceWithinDays);
      for (const pair of await pairsWithWork(this.db, PAIRS_PER_SWEEP)) {
        await this.queue.add('deliver-webhook', pair, { ...JOB_OPTIONS, jobId: jobIds.deliverWebhook(pairKey(pair)) });
      }
    } catch (error) {
      this.logger.warn({ err: (error as Error).message }, 'webhook sweep failed');
    }
  }
}

/** A run that fails is not retried by BullMQ: the pair's state is in Postgres, and the next sweep queues it again. */
const JOB_OPTIONS = { attempts: 1, removeOnComplete: true, removeOnFail: true } as const;

/** A job id part for a pair: webhook ids may hold any character, BullMQ ids may not. */
const pairKey = (pair: Pair): string =>
  createHash('sha256').update(`${pair.accountId}\n${pair.webhookId}\n${pair.langKey}`).digest('hex').slice(0, 32);
