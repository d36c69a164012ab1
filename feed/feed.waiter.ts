import { Listener } from '../platform/listener.js';
import type { Logger } from '../platform/logger.js';
import { AUDIT_WRITTEN } from '../sync/audit.repository.js';

/** How often a waiting reader looks again while the LISTEN connection is down. */
const UNHEARD_RECHECK_MS = 1_000;

/** A reader's registration: `next` resolves when its language may have new entries, after `ms` at most. */
export interface FeedWatch {
  next(ms: number): Promise<void>;
  cancel(): void;
}

/**
 * One per API process: the change feed's long polls (interface §22.4) wait
 * here, holding no Postgres connection each. One LISTEN connection hears
 * AUDIT_WRITTEN, sent at the commit of every transaction that wrote audit
 * entries (sync/audit.repository.ts), and wakes the readers of that language,
 * which then read again. While that connection is down, readers look again
 * every second instead, so a lost notification delays an answer, never loses
 * an entry. Closing wakes every reader, so a shutdown is not held for a wait.
 */
export class FeedWaiter {
  private readonly waiting = new Map<number, Set<() => void>>();
  private readonly listener: Listener;
  private stopped = false;

  constructor(databaseUrl: string, logger: Logger) {
    this.listener = new Listener(databaseUrl, logger, {
      channels: [AUDIT_WRITTEN],
      onNotification: (payload) => {
        const langKey = Number(payload);
        if (Number.isSafeInteger(langKey)) this.wake(langKey);
      },
      // What was sent while nobody listened is lost: every reader looks again.
      onLost: () => this.wakeAll(),
      lostMessage: 'change feed listener lost; waiting readers poll until it reconnects',
      failedMessage: 'could not listen for audit entries; waiting readers poll',
    });
  }

  async start(): Promise<void> {
    await this.listener.start();
  }

  /**
   * Registers a reader of the language before it reads, so that an entry
   * committed between its read and its wait still wakes it.
   */
  watch(langKey: number): FeedWatch {
    let woken = false;
    let wake: (() => void) | undefined;
    const signal = () => {
      woken = true;
      wake?.();
    };
    const readers = this.waiting.get(langKey) ?? new Set();
    readers.add(signal);
    this.waiting.set(langKey, readers);
    const cancel = () => {
      readers.delete(signal);
      if (readers.size === 0 && this.waiting.get(langKey) === readers) this.waiting.delete(langKey);
      wake?.();
    };
    return {
      next: (ms) => {
        if (woken || this.stopped) {
          woken = false;
          return Promise.resolve();
        }
        return new Promise<void>((resolve) => {
          const timer = setTimeout(done, this.listener.listening ? ms : Math.min(ms, UNHEARD_RECHECK_MS));
          function done() {
            clearTimeout(timer);
            wake = undefined;
            woken = false;
            resolve();
          }
          wake = done;
        });
      },
      cancel,
    };
  }

  /** Closed: readers answer with what they have instead of waiting. */
  get closed(): boolean {
    return this.stopped;
  }

  /** Whether the LISTEN connection is up (held reads otherwise look again every second). */
  get listening(): boolean {
    return this.listener.listening;
  }

  /** How many readers wait now (for /metrics and tests). */
  get readers(): number {
    let count = 0;
    for (const readers of this.waiting.values()) count += readers.size;
    return count;
  }

  private wake(langKey: number): void {
    for (const signal of this.waiting.get(langKey) ?? []) signal();
  }

  private wakeAll(): void {
    for (const readers of this.waiting.values()) for (const signal of readers) signal();
  }

  async close(): Promise<void> {
    this.stopped = true;
    this.wakeAll();
    await this.listener.close();
  }
}
