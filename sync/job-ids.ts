import { randomUUID } from 'node:crypto';

/*
 * Every BullMQ job id the service creates. BullMQ keeps one job per id, so an
 * id is also a deduplication rule: jobs that share an id collapse into one.
 * Jobs are only wake-up calls (what is pending lives in Postgres), so
 * collapsing them loses nothing.
 */

/**
 * BullMQ takes jobs without a priority first, then prioritized ones. Wake-ups
 * after single writes (a client is waiting for those effects) have none;
 * background wake-ups (a language's next turn after a run that used its whole
 * budget, a bulk file's effects, the sweeper's safety net) have this one, so
 * they queue behind every waiting single write, and take turns among
 * themselves in the order they were queued.
 */
export const BACKGROUND_PRIORITY = 1;

/** Writes of one language within this many milliseconds wake its applier once. */
export const WAKE_WINDOW_MS = 50;
/** The sweeper re-creates apply jobs at most once per language per this many milliseconds. */
export const SWEEP_APPLY_WINDOW_MS = 1_000;
/** A webhook and language's wake-ups within this many milliseconds are one job. */
export const WEBHOOK_JOB_WINDOW_MS = 250;
/** How often the worker applies retention (worker/processors/apply-retention.processor.ts). */
export const RETENTION_EVERY_MS = 15 * 60_000;
/** A bulk file gets its next slice queued at most once per this many milliseconds. */
export const BULK_SLICE_WINDOW_MS = 250;

/** An unfinished erasure's scrub is queued again at most once per this many milliseconds. */
export const SCRUB_ERASURE_WINDOW_MS = 2_000;

const windowOf = (now: number, ms: number) => Math.floor(now / ms);

export const jobIds = {
  /** apply-outbox after a commit (outbox.notifier.ts). */
  applyAfterWrite: (langKey: number, now = Date.now()) => `apply-${langKey}-${windowOf(now, WAKE_WINDOW_MS)}`,
  /** apply-outbox in the background (BACKGROUND_PRIORITY): a language's next turn, a bulk file's effects. */
  applyInBackground: (langKey: number, now = Date.now()) => `apply-${langKey}-bg-${windowOf(now, WAKE_WINDOW_MS)}`,
  /** apply-outbox again after the applier was busy (outbox.notifier.ts). */
  applyAgain: (langKey: number, now = Date.now()) => `apply-${langKey}-again-${windowOf(now, WAKE_WINDOW_MS)}`,
  /**
   * BullMQ deduplication id of a language's wake-ups (outbox.notifier.ts): while one waits, others are dropped;
   * while one runs, the last is kept and queued when it ends. So one language never has more than two jobs.
   */
  applyDeduplication: (langKey: number) => `apply-${langKey}`,
  /**
   * apply-outbox from the sweeper (worker/sweeper.ts): a different id, so a finished wake-up job does not hide it,
   * and not deduplicated: the safety net must not depend on the state of another job.
   */
  applyFromSweep: (langKey: number, now = Date.now()) => `apply-${langKey}-sweep-${windowOf(now, SWEEP_APPLY_WINDOW_MS)}`,
  /** process-bulk right after the upload. */
  bulkStart: (bulkJobId: string) => `bulk-${bulkJobId}-start`,
  /** process-bulk slices queued by the sweeper, behind other files. */
  bulkSlice: (bulkJobId: string, now = Date.now()) => `bulk-${bulkJobId}-${windowOf(now, BULK_SLICE_WINDOW_MS)}`,
  /** The repeatable retention job's scheduler: one for every worker process. */
  retention: 'apply-retention',
  /** The scrub of an erasure, queued by the sweeper at most once per window while it is not completed. */
  scrubErasure: (erasureId: string, now = Date.now()) => `scrub-erasure-${erasureId}-${windowOf(now, SCRUB_ERASURE_WINDOW_MS)}`,
  /** One purge per deleted language. */
  purgeLanguage: (langKey: number) => `purge-language-${langKey}`,
  /** deliver-webhook from the webhook waker's sweep (webhooks/webhook.waker.ts): one per pair and window. */
  deliverWebhook: (pairKey: string, now = Date.now()) => `webhook-${pairKey}-${windowOf(now, WEBHOOK_JOB_WINDOW_MS)}`,
  /** deliver-webhook queued by a run that left more to send: an id of its own, as the run's job is still active. */
  deliverWebhookAgain: (pairKey: string) => `webhook-${pairKey}-more-${randomUUID()}`,
} as const;

/** The window a wake-up job id belongs to, so the notifier can skip a Redis call for the rest of it. */
export const wakeWindow = (now = Date.now()) => windowOf(now, WAKE_WINDOW_MS);
