import { describe, expect, it } from 'vitest';
import { fromSortableWalPosition, parseWalPosition, sortableWalPosition } from './wal-position.js';

describe('when WAL positions are compared', () => {
  it('should order them as numbers, not as text', () => {
    expect(parseWalPosition('0/A0') > parseWalPosition('0/B')).toBe(true);
    expect(parseWalPosition('1/0') > parseWalPosition('0/FFFFFFFF')).toBe(true);
    expect(parseWalPosition('16/B374D848')).toBe(0x16b374d848n);
  });

  it('should keep that order in their sortable text', () => {
    const positions = ['0/B', '0/A0', '1/0', '0/FFFFFFFF'].map(parseWalPosition);
    const texts = positions.map(sortableWalPosition);
    expect([...texts].sort().map(fromSortableWalPosition)).toEqual([...positions].sort((a, b) => (a < b ? -1 : 1)));
  });

  it('should refuse what is not a position', () => {
    expect(() => parseWalPosition('12')).toThrow('not a WAL position');
  });
});
