import type { Queue } from 'bullmq';
import type { Logger } from 'pino';

/** Jobs for one language collapse into one per window; the worker's sweeper covers anything a lost job would miss. */
const WINDOW_MS = 50;

/**
 * Wakes the worker for a language after a commit. Never throws and never
 * waits for Redis: the outbox row is already durable, so a failed enqueue only
 * delays the effects until the worker's sweeper finds them.
 */
export class OutboxNotifier {
  constructor(
    private readonly queue: Queue | undefined,
    private readonly logger: Logger,
    private readonly bulkQueue?: Queue,
  ) {}

  /** Starts a stored bulk file; the worker's sweeper starts it too if this is lost. */
  notifyBulk(bulkJobId: string): void {
    this.bulkQueue
      ?.add('process-bulk', { bulkJobId }, { jobId: `bulk-${bulkJobId}-start` })
      .catch((error: Error) => this.logger.warn({ err: error.message, bulk_job: bulkJobId }, 'enqueue failed; the sweeper will start the bulk job'));
  }

  notify(langKey: number): void {
    if (!this.queue) return;
    const window = Math.floor(Date.now() / WINDOW_MS);
    this.queue
      .add('apply-outbox', { langKey }, { jobId: `apply-${langKey}-${window}` })
      .catch((error: Error) => this.logger.warn({ err: error.message, lang_key: langKey }, 'enqueue failed; the sweeper will pick the change up'));
  }
}
