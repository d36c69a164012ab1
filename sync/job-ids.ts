/*
 * Every BullMQ job id the service creates. BullMQ keeps one job per id, so an
 * id is also a deduplication rule: jobs that share an id collapse into one.
 * Jobs are only wake-up calls (what is pending lives in Postgres), so
 * collapsing them loses nothing.
 */

/** Writes of one language within this many milliseconds wake its applier once. */
export const WAKE_WINDOW_MS = 50;
/** The sweeper re-creates apply jobs at most once per language per this many milliseconds. */
export const SWEEP_APPLY_WINDOW_MS = 1_000;
/** A bulk file gets its next slice queued at most once per this many milliseconds. */
export const BULK_SLICE_WINDOW_MS = 250;

const windowOf = (now: number, ms: number) => Math.floor(now / ms);

export const jobIds = {
  /** apply-outbox after a commit (outbox.notifier.ts). */
  applyAfterWrite: (langKey: number, now = Date.now()) => `apply-${langKey}-${windowOf(now, WAKE_WINDOW_MS)}`,
  /** apply-outbox from the sweeper (sweeper.ts): a different id, so a finished wake-up job does not hide it. */
  applyFromSweep: (langKey: number, now = Date.now()) => `apply-${langKey}-sweep-${windowOf(now, SWEEP_APPLY_WINDOW_MS)}`,
  /** process-bulk right after the upload. */
  bulkStart: (bulkJobId: string) => `bulk-${bulkJobId}-start`,
  /** process-bulk slices queued by the sweeper, behind other files. */
  bulkSlice: (bulkJobId: string, now = Date.now()) => `bulk-${bulkJobId}-${windowOf(now, BULK_SLICE_WINDOW_MS)}`,
  /** One purge per deleted language. */
  purgeLanguage: (langKey: number) => `purge-language-${langKey}`,
} as const;

/** The window a wake-up job id belongs to, so the notifier can skip a Redis call for the rest of it. */
export const wakeWindow = (now = Date.now()) => windowOf(now, WAKE_WINDOW_MS);
