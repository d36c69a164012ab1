import { setTimeout as sleep } from 'node:timers/promises';

export interface PollOptions {
  /** Give up after this long and return the last value seen. */
  timeoutMs: number;
  /** Pause between attempts. */
  intervalMs?: number;
}

/**
 * Calls `attempt` until `done` accepts its value or `timeoutMs` has passed, and
 * returns the last value either way, so the caller's assertion shows what was
 * really seen when the condition never held.
 */
export async function pollUntil<T>(attempt: () => Promise<T>, done: (value: T) => boolean, options: PollOptions): Promise<T> {
  const deadline = Date.now() + options.timeoutMs;
  const interval = options.intervalMs ?? 50;
  for (;;) {
    const value = await attempt();
    if (done(value) || Date.now() >= deadline) return value;
    await sleep(interval);
  }
}
