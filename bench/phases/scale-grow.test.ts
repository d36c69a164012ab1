import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeFeedCursor } from '../../feed/feed-cursor.js';
import { startEnvironment, type TestEnvironment } from '../../test/support/harness.js';
import { type Grown, growLanguage, settleGrown } from './scale-grow.js';

/*
 * The scale phase's grown language must be one the service reads as its own:
 * totals, pages, links and the change feed as if its rows had been written
 * through the API, and the writes after it numbered after it.
 */

const CATEGORIES = 10;

describe('when the bench grows a language straight into the tables', () => {
  let env: TestEnvironment;
  let token: string;
  let grown: Grown;
  const psql = async (text: string, values: unknown[] = []) => {
    const client = new pg.Client({ connectionString: env.config.DATABASE_URL });
    await client.connect();
    try {
      return await client.query(text, values);
    } finally {
      await client.end();
    }
  };
  const get = (path: string) => env.request('GET', path, { token });

  beforeAll(async () => {
    env = await startEnvironment();
    token = await env.token();
    for (const id of ['grown', 'other']) {
      await env.request('POST', '/api/v1/languages', { token, body: { language: { id, name: id, code: 'xx' } } });
    }
    const categories = Array.from({ length: CATEGORIES }, (_, index) =>
      JSON.stringify({ category: { id: `cat-${index}`, name: `C${index}` } }),
    );
    await env.request('POST', '/api/v1/languages/grown/bulk', {
      token,
      raw: categories.join('\n'),
      headers: { 'content-type': 'application/x-ndjson' },
    });
    await env.request('POST', '/api/v1/languages/other/products', { token, body: { product: { id: 'O1', name: 'Other' } } });
    await env.drain(60_000);
    grown = await growLanguage({ psql }, 'grown', 1_200, 4_800, CATEGORIES);
    await settleGrown({ psql }, grown.langKey);
  }, 120_000);

  afterAll(async () => {
    await env?.close();
  });

  it('should count its products in the v2 list total, oldest first', async () => {
    const page = await get('/api/v2/languages/grown/products?page=1&per_page=250');
    expect(page.status).toBe(200);
    expect(page.body.meta.total).toBe(1_200);
    expect(page.body.data).toHaveLength(250);
    expect(page.body.data[0].id).toBe('g000000000');
    const deep = await get('/api/v2/languages/grown/products?page=5&per_page=250');
    expect(deep.body.data.map((product: { id: string }) => product.id)).toEqual(
      Array.from({ length: 200 }, (_, index) => `g${String(1_000 + index).padStart(9, '0')}`),
    );
  });

  it("should show each product's categories", async () => {
    const categories = await get('/api/v2/languages/grown/products/g000000011/categories');
    expect(categories.status).toBe(200);
    expect(categories.body.data.map((category: { id: string }) => category.id).sort()).toEqual(['cat-1', 'cat-5', 'cat-8']);
  });

  it('should number a write after it after every grown entry, and the feed read the grown history in order', async () => {
    const write = await env.request('POST', '/api/v1/languages/grown/products', {
      token,
      body: { product: { id: 'new-1', name: 'After', category_ids: ['cat-0'] } },
    });
    expect(write.status).toBe(200);
    await env.drain(60_000);
    const middle = grown.firstAuditSeq + grown.auditEntries / 2 - 1;
    const cursor = encodeFeedCursor({ langKey: grown.langKey, seq: middle, languageId: 'grown' });
    const feed = await get(`/api/v2/languages/grown/changes?limit=1000&after=${cursor}`);
    expect(feed.status).toBe(200);
    const entries = feed.body.data as { id: string; record_id: string; action: string }[];
    expect(entries.slice(0, 4).map((entry) => [entry.record_id, entry.action])).toEqual([
      ['g000000600', 'create'],
      ['g000000600', 'link'],
      ['g000000600', 'link'],
      ['g000000600', 'link'],
    ]);
    const all = [...entries];
    let next = feed.body;
    while (next.meta.has_more) {
      next = (await get(`/api/v2/languages/grown/changes?limit=1000&after=${next.meta.next_cursor}`)).body;
      all.push(...(next.data as typeof entries));
    }
    expect(all).toHaveLength(2_400 + 2);
    expect(all.slice(-2).map((entry) => [entry.record_id, entry.action])).toEqual([
      ['new-1', 'create'],
      ['new-1', 'link'],
    ]);
    const seqs = all.map((entry) => Number(entry.id));
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    const total = await get('/api/v2/languages/grown/products?page=1&per_page=1');
    expect(total.body.meta.total).toBe(1_201);
  });

  it("should keep a product's audit entries together on the table's pages, as the applier writes them", async () => {
    const pages = await psql(
      `SELECT record_id, count(DISTINCT (ctid::text::point)[0]) AS pages FROM audit_log
       WHERE language_id = 'grown' AND record_id IN ('g000000100', 'g000000700', 'g000001100') GROUP BY record_id`,
    );
    expect(pages.rows).toHaveLength(3);
    for (const row of pages.rows) expect(Number(row.pages)).toBeLessThanOrEqual(2);
  });

  it("should leave another language's feed without the grown entries", async () => {
    const feed = await get('/api/v2/languages/other/changes?limit=1000');
    expect(feed.body.data.map((entry: { record_id: string }) => entry.record_id)).toEqual(['other', 'O1']);
  });
});
