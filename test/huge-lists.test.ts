import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { applierLockHolders } from '../sync/locks.js';
import { startEnvironment, type TestEnvironment } from './support/harness.js';
import { pollUntil } from './support/poll.js';
import { spawnWorker, stopProcess } from './support/processes.js';

/*
 * An id list as large as a 1 MiB body allows is applied
 * set-based and in slices. Every stub and link is audited exactly once, the
 * language's later changes wait for it (serial order), and the record being
 * applied stays writable by the API meanwhile.
 */

const COUNT = 100_000;
const ids = (prefix: string, from: number, count: number) => Array.from({ length: count }, (_, index) => `${prefix}${from + index}`);

let env: TestEnvironment;
let token: string;

beforeAll(async () => {
  env = await startEnvironment();
  token = await env.token();
});
afterAll(() => env.close());

const counted = z.object({ action: z.string(), entries: z.number(), distinct: z.number() });

/** Audit entries of a language by kind, record and action: how many, and for how many distinct targets. */
async function auditCounts(languageId: string, kind: string, recordId?: string) {
  const rows = await env.db.any(sql.type(counted)`
    SELECT action, count(*)::int8 AS entries,
           count(DISTINCT CASE WHEN kind = 'product' THEN changes::text ELSE record_id END)::int8 AS distinct
    FROM audit_log
    WHERE language_id = ${languageId} AND kind = ${kind} ${recordId === undefined ? sql.fragment`` : sql.fragment`AND record_id = ${recordId}`}
    GROUP BY action ORDER BY action
  `);
  return Object.fromEntries(rows.map((row) => [row.action, { entries: row.entries, distinct: row.distinct }]));
}

async function write(languageId: string, body: unknown) {
  const started = Date.now();
  const response = await env.request('POST', `/api/v1/languages/${languageId}/products`, { token, body });
  return { response, ms: Date.now() - started };
}

describe('when one product names 100,000 categories (an 889 KB body)', () => {
  it('should stub and link every one exactly once, audit each once, keep serial order and answer a concurrent write within 2 s', async () => {
    await env.request('POST', '/api/v1/languages', { token, body: { language: { id: 'w1', name: 'W1', code: 'w1' } } });
    const categoryIds = ids('k', 0, COUNT);
    const big = await write('w1', { product: { id: 'BIG', name: 'big', category_ids: categoryIds } });
    expect(big.response.status).toBe(200);
    // A later change of the same language, which must be applied after all of BIG's effects.
    const after = await write('w1', { product: { id: 'AFTER', name: 'after', category_ids: ['k1', 'fresh'] } });
    expect(after.response.status).toBe(200);

    // While the applier works on BIG, the API still answers a write of BIG promptly.
    const busy = await pollUntil(
      async () => (await applierLockHolders(env.db)).length > 0,
      (value) => value,
      { timeoutMs: 20_000, intervalMs: 5 },
    );
    expect(busy).toBe(true);
    const rename = await write('w1', { product: { id: 'BIG', name: 'renamed' } });
    expect(rename.response.status).toBe(200);
    expect(rename.ms).toBeLessThan(2_000);

    await env.drain(180_000);
    const langKey = await env.db.oneFirst(sql.type(z.object({ lang_key: z.number() }))`
      SELECT lang_key FROM languages WHERE id = 'w1' AND deleted_at IS NULL
    `);
    const stubs = await env.db.oneFirst(sql.type(z.object({ count: z.number() }))`
      SELECT count(*)::int8 AS count FROM records WHERE lang_key = ${langKey} AND kind = 'category' AND live AND data = '{}'
    `);
    expect(stubs).toBe(COUNT + 1);
    const links = await env.db.oneFirst(sql.type(z.object({ count: z.number() }))`
      SELECT count(*)::int8 AS count FROM links WHERE lang_key = ${langKey} AND rel = 'product_category' AND a = 'BIG'
    `);
    expect(links).toBe(COUNT);
    const name = await env.db.oneFirst(sql.type(z.object({ name: z.string() }))`
      SELECT data ->> 'name' AS name FROM records WHERE lang_key = ${langKey} AND kind = 'product' AND id = 'BIG'
    `);
    expect(name).toBe('renamed');

    expect(await auditCounts('w1', 'category')).toEqual({ stub: { entries: COUNT + 1, distinct: COUNT + 1 } });
    expect(await auditCounts('w1', 'product', 'BIG')).toEqual({
      create: { entries: 1, distinct: 1 },
      link: { entries: COUNT, distinct: COUNT },
      update: { entries: 1, distinct: 1 },
    });
    // Serial order: BIG's create and all its effects, then AFTER (stubbing only 'fresh'), then the rename.
    const order = await env.db.any(sql.type(z.object({ record_id: z.string(), action: z.string(), first: z.number(), last: z.number() }))`
      SELECT record_id, action, min(seq)::int8 AS first, max(seq)::int8 AS last
      FROM audit_log WHERE language_id = 'w1' AND kind = 'product' GROUP BY record_id, action
    `);
    const at = (recordId: string, action: string) => order.find((row) => row.record_id === recordId && row.action === action)!;
    expect(at('BIG', 'create').first).toBeLessThan(at('BIG', 'link').first);
    expect(at('BIG', 'link').last).toBeLessThan(at('AFTER', 'create').first);
    expect(at('AFTER', 'link').last).toBeLessThan(at('BIG', 'update').first);
  }, 240_000);

  it('should unlink exactly the ones left out, each audited once, when the list is replaced by half of it', async () => {
    const before = await auditCounts('w1', 'product', 'BIG');
    const half = await write('w1', { product: { id: 'BIG', name: 'half', category_ids: ids('k', COUNT / 2, COUNT / 2) } });
    expect(half.response.status).toBe(200);
    await env.drain(180_000);
    const links = await env.db.anyFirst(sql.type(z.object({ b: z.string() }))`
      SELECT l.b FROM links l JOIN languages g ON g.lang_key = l.lang_key
      WHERE g.id = 'w1' AND g.deleted_at IS NULL AND l.rel = 'product_category' AND l.a = 'BIG'
    `);
    expect(new Set(links)).toEqual(new Set(ids('k', COUNT / 2, COUNT / 2)));
    expect(await auditCounts('w1', 'product', 'BIG')).toEqual({
      ...before,
      update: { entries: 2, distinct: 2 },
      unlink: { entries: COUNT / 2, distinct: COUNT / 2 },
    });
  }, 240_000);

  it('should detach every link of the product, each audited once, when it is deleted', async () => {
    const before = await auditCounts('w1', 'product', 'BIG');
    const deleted = await env.request('DELETE', '/api/v1/languages/w1/products/BIG', { token });
    expect(deleted.status).toBe(200);
    await env.drain(180_000);
    const links = await env.db.oneFirst(sql.type(z.object({ count: z.number() }))`
      SELECT count(*)::int8 AS count FROM links l JOIN languages g ON g.lang_key = l.lang_key
      WHERE g.id = 'w1' AND g.deleted_at IS NULL AND l.rel = 'product_category' AND l.a = 'BIG'
    `);
    expect(links).toBe(0);
    expect(await auditCounts('w1', 'product', 'BIG')).toEqual({
      ...before,
      delete: { entries: 1, distinct: 1 },
      unlink: { entries: COUNT, distinct: COUNT },
    });
  }, 240_000);
});

describe('when the worker dies while a split change is half applied', () => {
  it('should resume it exactly where the last committed slice ended', async () => {
    const worker = env.worker!;
    await worker.close();
    await env.request('POST', '/api/v1/languages', { token, body: { language: { id: 'w2', name: 'W2', code: 'w2' } } });
    const count = 20_000;
    const big = await write('w2', { product: { id: 'HALF', name: 'half', category_ids: ids('c', 0, count) } });
    expect(big.response.status).toBe(200);
    const victim = spawnWorker(env.config, { APPLIER_SLICE_SIZE: '500' });
    try {
      const progress = await pollUntil(
        () =>
          env.db.maybeOneFirst(sql.type(z.object({ progress: z.object({ phase: z.number(), offset: z.number() }).nullable() }))`
            SELECT progress FROM outbox WHERE language_id = 'w2' AND record_id = 'HALF'
          `),
        (value) => (value?.offset ?? 0) >= 2_000,
        { timeoutMs: 60_000, intervalMs: 5 },
      );
      expect(progress?.offset).toBeGreaterThanOrEqual(2_000);
    } finally {
      await stopProcess(victim, 'SIGKILL');
    }
    const survivor = spawnWorker(env.config, { APPLIER_SLICE_SIZE: '500' });
    try {
      await env.drain(120_000);
    } finally {
      await stopProcess(survivor);
    }
    expect(await auditCounts('w2', 'category')).toEqual({ stub: { entries: count, distinct: count } });
    expect(await auditCounts('w2', 'product', 'HALF')).toEqual({
      create: { entries: 1, distinct: 1 },
      link: { entries: count, distinct: count },
    });
  }, 240_000);
});
