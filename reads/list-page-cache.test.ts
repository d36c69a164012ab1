import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { ListPageCache } from './list-page-cache.js';

/*
 * Requests for one page share a read that started after they arrived
 * (list-page-cache.ts). The reads here are controlled by the test; no page is
 * kept before the last request, so Postgres is never asked.
 */

const pool = new pg.Pool({ connectionString: process.env['TEST_POSTGRES_URL'] ?? 'postgres://postgres@127.0.0.1:5432/postgres' });
afterAll(async () => {
  await pool.end();
});

/** Reads that answer when told: the n-th read made answers `page n`. */
function controlledReads() {
  const pending: Array<{ resolve: (page: { snapshot: string; data: string }) => void; reject: (error: Error) => void }> = [];
  return {
    read: () =>
      new Promise<{ snapshot: string; data: string }>((resolve, reject) => {
        pending.push({ resolve, reject });
      }),
    get made() {
      return pending.length;
    },
    answer: (n: number) => pending[n - 1]!.resolve({ snapshot: `s${n}`, data: `page ${n}` }),
    fail: (n: number) => pending[n - 1]!.reject(new Error(`read ${n} failed`)),
  };
}

const turn = () => new Promise((resolve) => setImmediate(resolve));
const data = (answer: Promise<{ page: { data: string } }>) => answer.then(({ page }) => page.data);

describe('when requests for one page come while it is being read', () => {
  it('should answer each from a read that started after it came, one read for all that came meanwhile', async () => {
    const cache = new ListPageCache(pool, 1_000_000);
    const reads = controlledReads();
    const first = data(cache.page(1, 'k', reads.read));
    await turn();
    const meanwhile = [data(cache.page(1, 'k', reads.read)), data(cache.page(1, 'k', reads.read))];
    await turn();
    expect(reads.made).toBe(1);
    reads.answer(1);
    expect(await first).toBe('page 1');
    await turn();
    // The two that came during the first read share the second.
    expect(reads.made).toBe(2);
    const later = data(cache.page(1, 'k', reads.read));
    await turn();
    reads.answer(2);
    expect(await Promise.all(meanwhile)).toEqual(['page 2', 'page 2']);
    await turn();
    // One that came after the second read started is not answered by it.
    expect(reads.made).toBe(3);
    reads.answer(3);
    expect(await later).toBe('page 3');
  });

  it('should read other pages apart', async () => {
    const cache = new ListPageCache(pool, 1_000_000);
    const reads = controlledReads();
    const one = data(cache.page(1, 'a', reads.read));
    const other = data(cache.page(1, 'b', reads.read));
    await turn();
    expect(reads.made).toBe(2);
    reads.answer(2);
    reads.answer(1);
    expect([await one, await other]).toEqual(['page 1', 'page 2']);
  });

  it('should give a failed read to those it served, and still read for those that came after it started', async () => {
    const cache = new ListPageCache(pool, 1_000_000);
    const reads = controlledReads();
    const first = data(cache.page(1, 'k', reads.read));
    await turn();
    const behind = data(cache.page(1, 'k', reads.read));
    await turn();
    reads.fail(1);
    await expect(first).rejects.toThrow('read 1 failed');
    await turn();
    expect(reads.made).toBe(2);
    reads.answer(2);
    expect(await behind).toBe('page 2');
  });

  it('should let each request read on its own when pages are not kept (LIST_PAGE_CACHE_MB=0)', async () => {
    const cache = new ListPageCache(pool, 0);
    const reads = controlledReads();
    const answers = [data(cache.page(1, 'k', reads.read)), data(cache.page(1, 'k', reads.read))];
    await turn();
    expect(reads.made).toBe(2);
    reads.answer(1);
    reads.answer(2);
    expect(await Promise.all(answers)).toEqual(['page 1', 'page 2']);
  });
});
