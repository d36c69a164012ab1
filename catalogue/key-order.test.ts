import { describe, expect, it } from 'vitest';
import { compareKeys } from './key-order.js';

const byBytes = (x: string, y: string) => Buffer.compare(Buffer.from(x), Buffer.from(y));

describe('compareKeys', () => {
  it('should order keys as their UTF-8 bytes do', () => {
    const keys = ['b', 'B', 'a', 'a-b', 'ab', 'a b', '', 'é', 'ä', '\uffff', '\ue000x', '😀', '😀a', '𝒜', 'z', '1', '_'];
    for (const x of keys) for (const y of keys) expect(Math.sign(compareKeys(x, y)), `${x} vs ${y}`).toBe(Math.sign(byBytes(x, y)));
  });

  it('should put a character above U+FFFF after U+FFFF, unlike the < operator', () => {
    expect('😀' < '\uffff').toBe(true);
    expect(compareKeys('😀', '\uffff')).toBeGreaterThan(0);
  });
});
