import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningApi, startApi } from '../api/server.js';
import { startWorker } from '../worker/worker.js';
import { drainWithWorker, httpRequest, startEnvironment, type TestEnvironment } from './support/harness.js';
import { sample } from './support/metrics.js';
import { generate, rng, send } from './support/scenario.js';
import { type KindName, openShop, SEGMENT, type Shop } from './support/v2-client.js';

/*
 * v2 list pages are kept by the API and answered again while their language
 * is unchanged (reads/list-page-cache.ts, docs/consistency.md "Pages served
 * again"). A page answered again must be exactly what a fresh read would
 * give: every kind of change to what a list shows, made after the page was
 * kept, must show on the next read. No worker runs unless a test starts one,
 * so a page can be kept before the applier has applied a change's effects.
 */

let env: TestEnvironment;

beforeAll(async () => {
  env = await startEnvironment({ worker: false });
});
afterAll(() => env.close());

type Source = 'read' | 'stale' | 'reused';
const pageCounts = async (): Promise<Record<Source, number>> => {
  const text = (await env.request('GET', '/metrics')).text;
  const count = (source: Source) => sample(text, 'sync_list_pages_total', { source }) ?? 0;
  return { read: count('read'), stale: count('stale'), reused: count('reused') };
};

/**
 * A list read until it is kept (a page is kept at its second read) and then
 * once more: the body of a fresh read, that of the last, and how the API
 * says it answered the last.
 */
async function readUntilKept(shop: Shop, path: string) {
  const first = await shop.get(path);
  await shop.get(path);
  const before = await pageCounts();
  const second = await shop.get(path);
  const after = await pageCounts();
  return { first, second, reused: after.reused - before.reused };
}

const names = (body: any) => (body.data as Array<{ name: string }>).map((item) => item.name);

describe('when a list is read again with nothing written in between', () => {
  it.each([
    ['a page of products', '/products?page=1&per_page=2'],
    ['a later page', '/products?page=2&per_page=2'],
    ['a cursor page', '/products?per_page=2&cursor='],
    ['a filtered list', '/products?created_after=2000-01-01T00:00:00Z'],
    ["a category's products", '/categories/c1/products'],
    ["a product's categories", '/products/p1/categories'],
  ])('should answer %s as kept, with the same body', async (_, path) => {
    const shop = await openShop(env);
    for (const id of ['p1', 'p2', 'p3']) await shop.v1('product', { id, name: id, category_ids: ['c1'] });
    await shop.save('category', { id: 'c1', name: 'c1' });
    await drainWithWorker(env);
    let target = path;
    if (path.endsWith('cursor=')) {
      const first = await shop.get('/products?per_page=2');
      target = `${path}${encodeURIComponent(first.body.meta.next_cursor)}`;
    }

    const { first, second, reused } = await readUntilKept(shop, target);

    expect(first.status).toBe(200);
    expect(first.body.data.length).toBeGreaterThan(0);
    expect(second.status).toBe(200);
    expect(second.text).toBe(first.text);
    expect(reused).toBe(1);
  });
});

describe('when what a kept page shows changes', () => {
  // Each change is made after the page was kept; the next read must show it, read afresh.
  const changes: Array<[string, string, (shop: Shop) => Promise<void>, (body: any) => void]> = [
    [
      'a single write of a listed product',
      '/products',
      async (shop) => void (await shop.save('product', { id: 'p2', name: 'renamed' })),
      (body) => expect(names(body)).toEqual(['p1', 'renamed', 'p3']),
    ],
    [
      'a v1 write of a listed product',
      '/products',
      async (shop) => void (await shop.v1('product', { id: 'p1', name: 'v1 name' })),
      (body) => expect(names(body)).toEqual(['v1 name', 'p2', 'p3']),
    ],
    [
      'a delete of a listed product',
      '/products',
      async (shop) => expect((await shop.del('/products/p3')).status).toBe(204),
      (body) => {
        expect(names(body)).toEqual(['p1', 'p2']);
        expect(body.meta.total).toBe(2);
      },
    ],
    [
      'the applier applying the category links the products were written with',
      '/products',
      () => drainWithWorker(env),
      (body) => expect(body.data.map((item: any) => item.category_ids)).toEqual([['c1'], ['c1'], ['c1']]),
    ],
    [
      'the applier creating the stub of a category the products name',
      '/categories',
      () => drainWithWorker(env),
      (body) => expect(body.data.map((item: any) => item.id)).toEqual(['c1']),
    ],
    [
      "the applier linking a category's products",
      '/categories/c1/products',
      () => drainWithWorker(env),
      (body) => expect(names(body)).toEqual(['p1', 'p2', 'p3']),
    ],
    [
      'a category assigned to a product',
      '/products/p1/categories',
      async (shop) => {
        await shop.save('category', { id: 'c2', name: 'c2' });
        expect((await shop.request('PUT', `/api/v2/languages/${shop.lang}/products/p1/categories/c2`)).status).toBe(204);
        await drainWithWorker(env);
      },
      (body) => expect(body.data.map((item: any) => item.id)).toEqual(['c1', 'c2']),
    ],
  ];

  it.each(changes)('should show %s on the next read', async (_, path, change, expectChange) => {
    const shop = await openShop(env);
    if (path.startsWith('/categories/c1/')) await shop.save('category', { id: 'c1', name: 'c1' });
    for (const id of ['p1', 'p2', 'p3']) await shop.v1('product', { id, name: id, category_ids: ['c1'] });
    if (path.startsWith('/products/p1/categories')) await drainWithWorker(env);
    const kept = await readUntilKept(shop, path);
    expect(kept.second.status).toBe(200);
    expect(kept.reused).toBe(1);

    await change(shop);
    const before = await pageCounts();
    const after = await shop.get(path);

    expect(after.status).toBe(200);
    expectChange(after.body);
    expect(after.text).not.toBe(kept.second.text);
    expect((await pageCounts()).stale - before.stale).toBe(1);
  });

  it("should show a bulk file's lines, stored and applied by the worker", async () => {
    const shop = await openShop(env);
    await shop.save('product', { id: 'p1', name: 'p1' });
    await shop.save('category', { id: 'c1', name: 'c1' });
    expect((await readUntilKept(shop, '/products')).reused).toBe(1);

    const lines = [
      ...['p1', 'p2'].map((id) => JSON.stringify({ product: { id, name: `bulk ${id}` } })),
      JSON.stringify({ put: 'products/p2/categories/c1' }),
    ];
    const posted = await env.request('POST', `/api/v2/languages/${shop.lang}/bulk`, {
      token: shop.token,
      raw: lines.join('\n'),
      headers: { 'content-type': 'application/x-ndjson' },
    });
    expect(posted.status).toBe(202);
    const worker = await startWorker(env.config);
    try {
      const deadline = Date.now() + 30_000;
      for (;;) {
        const job = (await env.request('GET', posted.headers.get('location')!, { token: shop.token })).body;
        if (job.status === 'completed' && job.lines_applied === job.lines) break;
        if (Date.now() > deadline) throw new Error(`bulk job did not finish: ${JSON.stringify(job)}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    } finally {
      await worker.close();
    }

    const after = await shop.get('/products');
    expect(names(after.body)).toEqual(['bulk p1', 'bulk p2']);
    expect(after.body.data.map((item: any) => item.category_ids)).toEqual([[], ['c1']]);
  });

  it('should answer 404 once the language is deleted', async () => {
    const shop = await openShop(env);
    await shop.save('product', { id: 'p1', name: 'p1' });
    expect((await readUntilKept(shop, '/products')).reused).toBe(1);

    expect((await shop.request('DELETE', `/api/v1/languages/${encodeURIComponent(shop.lang)}`)).status).toBe(200);

    expect((await shop.get('/products')).status).toBe(404);
  });
});

describe('when a client walks a whole list with cursor, each page once', () => {
  it('should keep none of its pages, leaving the room to pages read again', async () => {
    const shop = await openShop(env);
    for (let index = 0; index < 6; index += 1) await shop.save('product', { id: `p${index}`, name: `p${index}` });
    const bytes = async () => sample((await env.request('GET', '/metrics')).text, 'sync_list_page_cache_bytes');
    const before = await bytes();

    const walked: string[] = [];
    let path: string | null = '/products?per_page=1';
    while (path) {
      const page = await shop.get(path);
      walked.push(...page.body.data.map((item: { id: string }) => item.id));
      path = page.body.meta.next_cursor ? `/products?per_page=1&cursor=${encodeURIComponent(page.body.meta.next_cursor)}` : null;
    }

    expect(walked).toEqual(['p0', 'p1', 'p2', 'p3', 'p4', 'p5']);
    expect(await bytes()).toBe(before);
    await shop.get('/products?per_page=1');
    expect(await bytes()).toBeGreaterThan(before!);
  });
});

describe('when two accounts read the same path', () => {
  it("should answer each with its own language's page, never the other's", async () => {
    const [a, b] = [await openShop(env, 'shared-id'), await openShop(env, 'shared-id')];
    await a.save('product', { id: 'p1', name: 'of a' });
    await b.save('product', { id: 'p1', name: 'of b' });

    for (let round = 0; round < 3; round += 1) {
      expect(names((await a.get('/products')).body)).toEqual(['of a']);
      expect(names((await b.get('/products')).body)).toEqual(['of b']);
    }
  });
});

describe('when the cache is turned off (LIST_PAGE_CACHE_MB=0)', () => {
  let off: TestEnvironment;
  beforeAll(async () => {
    off = await startEnvironment({ worker: false, env: { LIST_PAGE_CACHE_MB: '0' } });
  });
  afterAll(() => off.close());

  it('should read every page', async () => {
    const shop = await openShop(off);
    await shop.save('product', { id: 'p1', name: 'p1' });
    for (let round = 0; round < 3; round += 1) expect((await shop.get('/products')).status).toBe(200);
    const text = (await off.request('GET', '/metrics')).text;
    expect(sample(text, 'sync_list_pages_total', { source: 'reused' })).toBe(0);
    expect(sample(text, 'sync_list_pages_total', { source: 'read' })).toBe(3);
  });
});

/*
 * Random requests of the whole v2 surface (the model test's generator), with
 * the applier run for a moment now and then (in slices of two ids, so it
 * stops between the transactions of a change, and cut off mid-way), and
 * every list of the language read in between from this API and from a
 * second API on the same database that keeps nothing. Between reads nothing
 * runs, so both must answer alike, byte for byte.
 */
const SEED = Number(process.env['MODEL_SEED'] ?? Date.now() % 1_000_000);

describe('when another API process writes to the language of a kept page', () => {
  let other: RunningApi;
  beforeAll(async () => {
    other = await startApi({ ...env.config, PORT: 0 });
  });
  afterAll(() => other.close());

  it('should show the write on the next read from this process', async () => {
    const shop = await openShop(env);
    await shop.save('product', { id: 'p1', name: 'before' });
    expect((await readUntilKept(shop, '/products')).reused).toBe(1);

    const written = await httpRequest(
      `http://127.0.0.1:${other.port}`,
      'PUT',
      `/api/v2/languages/${encodeURIComponent(shop.lang)}/products`,
      {
        token: shop.token,
        body: { product: { id: 'p1', name: 'after' } },
      },
    );
    expect(written.status).toBe(200);

    expect(names((await shop.get('/products')).body)).toEqual(['after']);
  });
});

describe('when random requests and applier runs come between reads of every list', () => {
  let uncached: RunningApi;
  beforeAll(async () => {
    uncached = await startApi({ ...env.config, LIST_PAGE_CACHE_MB: 0, PORT: 0 });
  });
  afterAll(() => uncached.close());

  it.each([SEED, SEED + 1])(
    'should answer every list as a fresh read does (seed %i)',
    async (seed) => {
      const shop = await openShop(env);
      const r = rng(seed);
      const lists = [
        ...(Object.keys(SEGMENT) as KindName[]).map((kind) => `/${SEGMENT[kind]}?per_page=2`),
        ...['1', '2', '3'].flatMap((id) => [
          `/products/${id}/categories`,
          `/products/${id}/variants`,
          `/products/${id}/relevant_products`,
          `/categories/${id}/products`,
          `/brands/${id}/products?page=2&per_page=1`,
        ]),
      ];
      const base = `/api/v2/languages/${encodeURIComponent(shop.lang)}`;
      const counts = await pageCounts();
      const operations = generate(r, 48, undefined, { v2Surface: true });
      for (const [index, operation] of operations.entries()) {
        await send(env, shop.token, shop.lang, operation, `cache-${seed}-${index}`);
        if (index % 4 !== 3) continue;
        if (r.chance(0.6)) {
          const worker = await startWorker({ ...env.config, APPLIER_SLICE_SIZE: 2 });
          await new Promise((resolve) => setTimeout(resolve, r.int(4) * 15));
          await worker.close();
        }
        // Three times: a page is kept at its second read and answered as kept at the third.
        for (let round = 0; round < 3; round += 1) {
          for (const list of lists) {
            const kept = await shop.get(list);
            const fresh = await httpRequest(`http://127.0.0.1:${uncached.port}`, 'GET', `${base}${list}`, { token: shop.token });
            expect(`${kept.status} ${kept.text}`, `seed ${seed}, after request ${index}: ${list}`).toBe(`${fresh.status} ${fresh.text}`);
          }
        }
      }
      expect((await pageCounts()).reused - counts.reused).toBeGreaterThan(0);
    },
    120_000,
  );
});
