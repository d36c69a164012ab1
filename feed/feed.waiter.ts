import pg from 'pg';
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
  private listener: pg.Client | undefined;
  private connected = false;
  private stopped = false;
  private reconnectTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly databaseUrl: string,
    private readonly logger: Logger,
  ) {}

  async start(): Promise<void> {
    await this.connect();
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
          const timer = setTimeout(done, this.connected ? ms : Math.min(ms, UNHEARD_RECHECK_MS));
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
    return this.connected;
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

  private async connect(): Promise<void> {
    if (this.stopped) return;
    const client = new pg.Client({ connectionString: this.databaseUrl });
    const retry = () => {
      this.connected = false;
      // What was sent while nobody listened is lost: every reader looks again.
      this.wakeAll();
      client.removeAllListeners();
      client.on('error', () => undefined);
      client.end().catch(() => undefined);
      if (!this.stopped && !this.reconnectTimer) {
        this.reconnectTimer = setTimeout(() => {
          this.reconnectTimer = undefined;
          void this.connect();
        }, 1_000);
      }
    };
    client.on('error', (error) => {
      this.logger.warn({ err: error.message }, 'change feed listener lost; waiting readers poll until it reconnects');
      retry();
    });
    client.on('end', retry);
    client.on('notification', (message) => {
      const langKey = Number(message.payload);
      if (Number.isSafeInteger(langKey)) this.wake(langKey);
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${AUDIT_WRITTEN}`);
      this.listener = client;
      this.connected = true;
    } catch (error) {
      this.logger.warn({ err: (error as Error).message }, 'could not listen for audit entries; waiting readers poll');
      retry();
    }
  }

  async close(): Promise<void> {
    this.stopped = true;
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    this.wakeAll();
    const listener = this.listener;
    this.listener = undefined;
    if (listener) {
      listener.removeAllListeners();
      listener.on('error', () => undefined);
      await listener.end().catch(() => undefined);
    }
  }
}
