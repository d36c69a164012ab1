import type { JobsOptions, Queue } from 'bullmq';
import type { Logger } from 'pino';
import { BACKGROUND_PRIORITY, jobIds, wakeWindow } from './job-ids.js';

/**
 * Wakes the worker for a language after a commit. Never throws and never
 * waits for Redis: the outbox row is already durable, so a failed enqueue only
 * delays the effects until the worker's sweeper finds them.
 *
 * Jobs carry the id of the request that enqueued them, so a job's log lines
 * can be traced back to the request.
 * Because jobs of one window collapse, an apply-outbox job names the first
 * request of its window; every audit entry still carries its own request id.
 */
export class OutboxNotifier {
  /** The last window each language was enqueued for: later writes of that window need no Redis call. */
  private readonly enqueued = new Map<number, number>();
  private readonly enqueuedInBackground = new Map<number, number>();

  constructor(
    private readonly queue: Queue | undefined,
    private readonly logger: Logger,
    private readonly bulkQueue?: Queue,
  ) {}

  /** Starts a stored bulk file; the worker's sweeper starts it too if this is lost. */
  notifyBulk(bulkJobId: string, requestId: string | undefined): void {
    this.bulkQueue
      ?.add('process-bulk', withRequestId({ bulkJobId }, requestId), { jobId: jobIds.bulkStart(bulkJobId) })
      .catch((error: Error) =>
        this.logger.warn({ err: error.message, bulk_job: bulkJobId }, 'enqueue failed; the sweeper will start the bulk job'),
      );
  }

  /**
   * Wakes the language's applier. `background`: work nobody is waiting on
   * right now (a bulk file's effects, a language's next turn), queued behind
   * every waiting wake-up after a single write (BACKGROUND_PRIORITY).
   */
  notify(langKey: number, requestId: string | undefined, background = false): void {
    if (!this.queue) return;
    const now = Date.now();
    const window = wakeWindow(now);
    const enqueued = background ? this.enqueuedInBackground : this.enqueued;
    if (enqueued.get(langKey) === window) return;
    if (enqueued.size > 10_000) enqueued.clear();
    enqueued.set(langKey, window);
    this.enqueue(
      langKey,
      requestId,
      background
        ? { jobId: jobIds.applyInBackground(langKey, now), priority: BACKGROUND_PRIORITY }
        : { jobId: jobIds.applyAfterWrite(langKey, now) },
    );
  }

  /**
   * The language's applier was busy with another job (a sweep's): wakes it
   * again shortly, so a change that job had not seen is applied then rather
   * than at the next sweep, which waits in the background.
   */
  notifyAgainSoon(langKey: number, requestId: string | undefined): void {
    this.enqueue(langKey, requestId, { jobId: jobIds.applyAgain(langKey), delay: BUSY_RETRY_MS });
  }

  private enqueue(langKey: number, requestId: string | undefined, options: JobsOptions): void {
    // At most one wake-up per language waits (and one runs): a language written to all the time cannot fill
    // the queue and push every other language's wake-up back. A wake-up while one runs is kept for after it.
    const deduplication = { id: jobIds.applyDeduplication(langKey), keepLastIfActive: true };
    this.queue
      ?.add('apply-outbox', withRequestId({ langKey }, requestId), { ...options, deduplication })
      .catch((error: Error) =>
        this.logger.warn({ err: error.message, lang_key: langKey }, 'enqueue failed; the sweeper will pick the change up'),
      );
  }
}

/** How soon a wake-up that found its language's applier busy tries again. */
const BUSY_RETRY_MS = 250;

const withRequestId = <T extends object>(data: T, requestId: string | undefined): T & { requestId?: string } =>
  requestId === undefined ? data : { ...data, requestId };
