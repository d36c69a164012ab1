import { describe, expect, it } from 'vitest';
import { windowOf } from './language-read.service.js';

describe('when the rows of a page are located in a list', () => {
  it('should read pages in the first half from the start', () => {
    expect(windowOf({ page: 1, per_page: 10 }, 100)).toEqual({ offset: 0, limit: 10, fromEnd: false, total: 100 });
    expect(windowOf({ page: 5, per_page: 10 }, 100)).toEqual({ offset: 40, limit: 10, fromEnd: false, total: 100 });
  });

  it('should read pages in the second half from the end', () => {
    expect(windowOf({ page: 6, per_page: 10 }, 100)).toEqual({ offset: 40, limit: 10, fromEnd: true, total: 100 });
    expect(windowOf({ page: 10, per_page: 10 }, 100)).toEqual({ offset: 0, limit: 10, fromEnd: true, total: 100 });
  });

  it('should shorten the last page and give nothing past the end', () => {
    expect(windowOf({ page: 4, per_page: 30 }, 100)).toEqual({ offset: 0, limit: 10, fromEnd: true, total: 100 });
    expect(windowOf({ page: 5, per_page: 30 }, 100)).toBeNull();
    expect(windowOf({ page: 1, per_page: 10 }, 0)).toBeNull();
  });
});
