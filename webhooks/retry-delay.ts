/** The longest wait between two attempts of a delivery (interface §23.4). */
export const MAX_RETRY_DELAY_MS = 3_600_000;

/**
 * How long after its `attempts`-th failed attempt (counting from 0) a delivery
 * is tried again: `baseMs` doubled each time, at most an hour, with a jitter
 * of ±20% so that receivers that fail together are not retried together.
 */
export function retryDelayMs(attempts: number, baseMs: number, random: () => number = Math.random): number {
  const delay = Math.min(MAX_RETRY_DELAY_MS, baseMs * 2 ** Math.min(attempts, 30));
  return Math.round(delay * (0.8 + 0.4 * random()));
}
