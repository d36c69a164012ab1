import { describe, expect, it } from 'vitest';
import { nextReadLimit } from './drain.js';

describe('when the next batch of a drain decides how many changes to read', () => {
  it('should read the full batch size after a batch that applied all it read', () => {
    expect(nextReadLimit(2_000, 37, false)).toBe(2_000);
    expect(nextReadLimit(2_000, 0, false)).toBe(2_000);
  });

  it('should read about as many as the last batch applied when the slice budget stopped it', () => {
    expect(nextReadLimit(2_000, 714, true)).toBe(894);
    expect(nextReadLimit(2_000, 1, true)).toBe(3);
  });

  it('should read at least one change, and never more than the batch size', () => {
    expect(nextReadLimit(2_000, 0, true)).toBe(1);
    expect(nextReadLimit(2_000, 1_900, true)).toBe(2_000);
  });
});
