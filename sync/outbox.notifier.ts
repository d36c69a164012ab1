import type { Queue } from 'bullmq';
import type { Logger } from 'pino';
import { jobIds, wakeWindow } from './job-ids.js';

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

  notify(langKey: number, requestId: string | undefined): void {
    if (!this.queue) return;
    const now = Date.now();
    const window = wakeWindow(now);
    if (this.enqueued.get(langKey) === window) return;
    if (this.enqueued.size > 10_000) this.enqueued.clear();
    this.enqueued.set(langKey, window);
    this.queue
      .add('apply-outbox', withRequestId({ langKey }, requestId), { jobId: jobIds.applyAfterWrite(langKey, now) })
      .catch((error: Error) =>
        this.logger.warn({ err: error.message, lang_key: langKey }, 'enqueue failed; the sweeper will pick the change up'),
      );
  }
}

const withRequestId = <T extends object>(data: T, requestId: string | undefined): T & { requestId?: string } =>
  requestId === undefined ? data : { ...data, requestId };
