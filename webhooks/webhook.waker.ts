import { createHash } from 'node:crypto';
import type { Queue } from 'bullmq';
import pg from 'pg';
import type { Database } from '../platform/db.js';
import { Listener } from '../platform/listener.js';
import type { Logger } from '../platform/logger.js';
import { AUDIT_WRITTEN } from '../sync/audit.repository.js';
import { jobIds } from '../sync/job-ids.js';
import { announceFinishedBulkJobs } from './bulk-finished.announcer.js';
import { changePairsByLanguage, type Pair, pairsWithWork } from './delivery.repository.js';

/** How often every worker process looks for webhook work, whatever it heard. */
export const WEBHOOK_SWEEP_MS = 1_000;
/** A heard commit is looked at after this long, so that a burst of commits makes one sweep. */
const HEARD_DELAY_MS = 20;
/** A heard commit sweeps anyway when what the waker knows of the webhooks is older than this (one made since is found so). */
const WATCHED_FRESH_MS = 250;
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
 *
 * A heard commit sweeps only when it may give a pair work that no run of this
 * process is on: its language has an active webhook taking `changes` (as of
 * the last sweep) and not every such pair of it is running here, or that
 * sweep is older than WATCHED_FRESH_MS (a webhook made since is found). A
 * running pair reads on by itself; one heard while it runs is swept for once
 * the run ends without more to send, in case the run's last read came before
 * it. Bulk jobs are announced by the timer sweep only: a commit does not end one.
 */
export class WebhookWaker {
  private timer: NodeJS.Timeout | undefined;
  private soon: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again: 'heard' | 'timer' | undefined;
  private readonly listener: Listener;
  private stopped = false;
  /** Active webhooks taking `changes`, per lang_key, as the last sweep found them, and when. */
  private watched: ReadonlyMap<number, number> = new Map();
  private watchedAt = 0;
  /** The runs of this process under way, each with its pair's key; `heard`: a commit of its language was heard during the run. */
  private readonly runs = new Set<{ pair: Pair; key: string; heard: boolean }>();

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
      onNotification: (payload) => this.heard(Number(payload)),
      // The sweep every second goes on meanwhile; the listener comes back when Postgres does.
      onLost: () => undefined,
      lostMessage: 'webhook listener lost its connection',
      failedMessage: 'webhook listener could not connect',
      applicationName: 'webhook waker',
    });
  }

  async start(): Promise<void> {
    this.timer = setInterval(() => void this.sweep('timer'), WEBHOOK_SWEEP_MS);
    await this.listener.start();
    void this.sweep('timer');
  }

  /** A commit wrote audit entries of the language `langKey`. */
  heard(langKey: number): void {
    if (this.stopped) return;
    const pairs = this.watched.get(langKey) ?? 0;
    const runningHere = new Set<string>();
    for (const run of this.runs) {
      if (run.pair.langKey !== langKey) continue;
      run.heard = true;
      runningHere.add(run.key);
    }
    if (runningHere.size < pairs || performance.now() - this.watchedAt >= WATCHED_FRESH_MS) this.wake();
  }

  /** Sweeps shortly. */
  wake(): void {
    if (this.stopped || this.soon) return;
    this.soon = setTimeout(() => {
      this.soon = undefined;
      void this.sweep('heard');
    }, HEARD_DELAY_MS);
  }

  /**
   * Runs `deliver` for the pair, known to this process as running meanwhile.
   * A run that ends without more to send, after a commit of its language was
   * heard, is followed by a sweep.
   */
  async whileRunning(pair: Pair, deliver: () => Promise<boolean>): Promise<boolean> {
    const key = pairKey(pair);
    // Two jobs of one pair in this process (the lease lets one send): each is tracked on its own.
    const run = { pair, key, heard: false };
    this.runs.add(run);
    let more = false;
    try {
      more = await deliver();
      return more;
    } finally {
      this.runs.delete(run);
      if (run.heard && !more) this.wake();
    }
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

  /** One sweep at a time; one asked for meanwhile runs after it (as a timer sweep if either was). */
  private sweep(by: 'heard' | 'timer'): Promise<void> {
    if (this.running) {
      this.again = this.again === 'timer' || by === 'timer' ? 'timer' : 'heard';
      return this.running;
    }
    this.running = this.sweepOnce(by).finally(() => {
      this.running = undefined;
      const again = this.again;
      this.again = undefined;
      if (again && !this.stopped) void this.sweep(again);
    });
    return this.running;
  }

  private async sweepOnce(by: 'heard' | 'timer'): Promise<void> {
    if (this.stopped) return;
    try {
      const at = performance.now();
      this.watched = await changePairsByLanguage(this.db);
      this.watchedAt = at;
      if (by === 'timer') await announceFinishedBulkJobs(this.db, this.announceWithinDays);
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
