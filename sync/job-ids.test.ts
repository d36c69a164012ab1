import { describe, expect, it } from 'vitest';
import { BULK_SLICE_WINDOW_MS, jobIds, SWEEP_APPLY_WINDOW_MS, WAKE_WINDOW_MS, wakeWindow } from './job-ids.js';

describe('when job ids are made', () => {
  it('should collapse wake-ups of one language within a window and separate the next window', () => {
    const start = 1_700_000_000_000 - (1_700_000_000_000 % WAKE_WINDOW_MS);
    expect(jobIds.applyAfterWrite(7, start)).toBe(jobIds.applyAfterWrite(7, start + WAKE_WINDOW_MS - 1));
    expect(jobIds.applyAfterWrite(7, start)).not.toBe(jobIds.applyAfterWrite(7, start + WAKE_WINDOW_MS));
    expect(jobIds.applyAfterWrite(7, start)).not.toBe(jobIds.applyAfterWrite(8, start));
    expect(wakeWindow(start)).toBe(wakeWindow(start + WAKE_WINDOW_MS - 1));
  });

  it('should never give a sweep job the id of a wake-up job', () => {
    const ids = new Set<string>();
    for (let now = 0; now < 10 * SWEEP_APPLY_WINDOW_MS; now += 7) ids.add(jobIds.applyAfterWrite(3, now));
    for (let now = 0; now < 10 * SWEEP_APPLY_WINDOW_MS; now += 7) expect(ids.has(jobIds.applyFromSweep(3, now))).toBe(false);
  });

  it('should give a bulk file one start job and one slice per window', () => {
    expect(jobIds.bulkStart('f')).toBe(jobIds.bulkStart('f'));
    expect(jobIds.bulkSlice('f', 0)).toBe(jobIds.bulkSlice('f', BULK_SLICE_WINDOW_MS - 1));
    expect(jobIds.bulkSlice('f', 0)).not.toBe(jobIds.bulkSlice('f', BULK_SLICE_WINDOW_MS));
    expect(jobIds.bulkSlice('f', 0)).not.toBe(jobIds.bulkStart('f'));
  });

  it('should give one purge job per language', () => {
    expect(jobIds.purgeLanguage(5)).toBe(jobIds.purgeLanguage(5));
    expect(jobIds.purgeLanguage(5)).not.toBe(jobIds.purgeLanguage(6));
  });
});
