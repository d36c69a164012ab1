import { describe, expect, it } from 'vitest';
import { StatementNames } from './statement-names.js';

describe('when statements are named', () => {
  it('should give one text the same name every time, and another text another', () => {
    const names = new StatementNames();
    const first = names.nameOf('SELECT 1');
    expect(first).toMatch(/^s_[A-Za-z0-9_-]+$/);
    expect(names.nameOf('SELECT 1')).toBe(first);
    expect(names.nameOf('SELECT 2')).not.toBe(first);
  });

  it('should give the same text the same name in another pool', () => {
    expect(new StatementNames().nameOf('SELECT $1')).toBe(new StatementNames().nameOf('SELECT $1'));
  });

  it('should leave texts past the bound unnamed, and keep naming those it named', () => {
    const names = new StatementNames(2);
    const kept = names.nameOf('SELECT 1');
    names.nameOf('SELECT 2');
    expect(names.nameOf('SELECT 3')).toBeUndefined();
    expect(names.nameOf('SELECT 1')).toBe(kept);
  });
});
