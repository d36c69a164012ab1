import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi } from '../api/server.js';
import { ANCHOR_STEP, WAIT_FROM } from '../reads/list-anchors.js';
import { httpRequest, startEnvironment, type TestEnvironment } from './support/harness.js';
import { at, ids, openShop, type Shop } from './support/v2-client.js';

/*
 * Deep pages of a big list start from cached anchors (reads/list-anchors.ts)
 * while the list is unchanged, and are walked otherwise. Either way a page
 * must be exactly the page of the list as it is: this checks deep pages
 * against a model of the order while records are added, deleted and moved.
 */

let env: TestEnvironment;
let shop: Shop;
const COUNT = 2 * ANCHOR_STEP + 1_000;
const PER_PAGE = 100;
/** The list as the model sees it: [created_at, id], kept sorted. */
let order: Array<[string, string]> = [];
const idOf = (index: number) => `d${String(index).padStart(6, '0')}`;

const sortOrder = () => order.sort((a, b) => (a[0] === b[0] ? (a[1] < b[1] ? -1 : 1) : a[0] < b[0] ? -1 : 1));
const expectedPage = (page: number) => order.slice((page - 1) * PER_PAGE, page * PER_PAGE).map(([, id]) => id);

async function expectPages(pages: number[]) {
  for (const page of pages) {
    const response = await shop.get(`/products?per_page=${PER_PAGE}&page=${page}`);
    expect(response.status).toBe(200);
    expect(response.body.meta.total).toBe(order.length);
    expect(ids(response.body.data), `page ${page}`).toEqual(expectedPage(page));
  }
}

beforeAll(async () => {
  env = await startEnvironment();
  shop = await openShop(env);
  const lines: string[] = [];
  for (let index = 1; index <= COUNT; index += 1) {
    lines.push(JSON.stringify({ product: { id: idOf(index), name: 'n', created_at: at(index) } }));
    order.push([at(index), idOf(index)]);
  }
  const upload = await env.request('POST', `/api/v1/languages/${shop.lang}/bulk`, {
    token: shop.token,
    raw: `${lines.join('\n')}\n`,
    headers: { 'content-type': 'application/x-ndjson' },
  });
  expect(upload.status).toBe(202);
  const deadline = Date.now() + 120_000;
  for (;;) {
    const job = await shop.request('GET', upload.headers.get('location')!);
    if (job.body.bulk_job.status === 'completed') break;
    if (Date.now() > deadline) throw new Error(`bulk job did not finish: ${job.text}`);
    await sleep(200);
  }
  await env.drain(60_000);
}, 180_000);
afterAll(async () => {
  await env.close();
});

describe('when deep pages of a list without anchors are read at once', () => {
  it('should answer each exactly from one read of the anchors', async () => {
    // A process of its own: its lists have no anchors yet.
    const api = await startApi(env.config);
    try {
      const baseUrl = `http://127.0.0.1:${api.port}`;
      const pages = Array.from({ length: 8 }, (_, index) => Math.ceil(WAIT_FROM / PER_PAGE) + 1 + index);
      const answers = await Promise.all(
        pages.map((page) =>
          httpRequest(baseUrl, 'GET', `/api/v2/languages/${shop.lang}/products?per_page=${PER_PAGE}&page=${page}`, { token: shop.token }),
        ),
      );
      for (const [index, response] of answers.entries()) {
        expect(response.status).toBe(200);
        expect(response.body.meta).toMatchObject({ current_page: pages[index], per_page: PER_PAGE, total: order.length });
        expect(ids(response.body.data), `page ${pages[index]}`).toEqual(expectedPage(pages[index]!));
      }
      const metrics = await httpRequest(baseUrl, 'GET', '/metrics');
      expect(metrics.text).toMatch(/^sync_list_anchor_reads_total\{outcome="read"[^}]*\} 1$/m);
      expect(metrics.text).toMatch(/^sync_list_anchor_reads_total\{outcome="failed"[^}]*\} 0$/m);
      // Every page waited for the anchors rather than walking the list.
      expect(metrics.text).toMatch(/^sync_list_deep_pages_total\{start="anchor"[^}]*\} 8$/m);
      expect(metrics.text).toMatch(/^sync_list_deep_pages_total\{start="walked"[^}]*\} 0$/m);
    } finally {
      await api.close();
    }
  });
});

describe('when deep pages of a big list are read', () => {
  const DEEP = [Math.ceil(ANCHOR_STEP / PER_PAGE) + 1, 75, 100, Math.ceil(COUNT / PER_PAGE)];

  it('should give exactly the pages of the list, read again once anchors exist', async () => {
    await expectPages(DEEP);
    // The first deep read starts reading anchors in the background; the next ones can start from them.
    await sleep(1_500);
    await expectPages(DEEP);
  });

  it('should stay exact when records are created, deleted and moved before the page', async () => {
    await shop.save('product', { id: 'first', created_at: at(0) });
    order.push([at(0), 'first']);
    sortOrder();
    await expectPages(DEEP);

    expect((await shop.del(`/products/${idOf(10)}`)).status).toBe(204);
    order = order.filter(([, id]) => id !== idOf(10));
    await expectPages(DEEP);

    await shop.save('product', { id: idOf(COUNT), created_at: at(0.5) });
    order = order.map(([createdAt, id]) => (id === idOf(COUNT) ? [at(0.5), id] : [createdAt, id]));
    sortOrder();
    await expectPages(DEEP);

    // After the anchors are read again (at most every 5 s), pages start from them again, still exact.
    await sleep(6_000);
    await expectPages(DEEP);
    await sleep(1_500);
    await expectPages(DEEP);
  });

  it('should keep starting from the anchors while records are only added after them', async () => {
    // As one write in 128 does: the counter rows folded (reads/sql/record_counts.sql).
    const fold = () =>
      env.db.query(sql.unsafe`
        SELECT record_count_fold(lang_key, 'product') FROM languages WHERE id = ${shop.lang} AND deleted_at IS NULL
      `);
    const deepPages = async () => {
      const text = (await env.request('GET', '/metrics')).text;
      const count = (start: string) =>
        Number(new RegExp(`^sync_list_deep_pages_total\\{start="${start}"[^}]*\\} (\\d+)$`, 'm').exec(text)?.[1]);
      return { anchor: count('anchor'), walked: count('walked') };
    };
    // The changes above folded, then anchors read after them: the pages walk until the read in the
    // background ends, which takes longer on a loaded machine, so rounds are read until one walks none.
    await fold();
    await sleep(6_000);
    const deadline = Date.now() + 30_000;
    for (;;) {
      const round = await deepPages();
      await expectPages(DEEP);
      if ((await deepPages()).walked === round.walked) break;
      expect(Date.now(), 'the anchors came into use').toBeLessThan(deadline);
      await sleep(500);
    }
    const before = await deepPages();
    for (let index = 1; index <= 3; index += 1) {
      await shop.save('product', { id: `tail${index}`, created_at: at(COUNT + index) });
      order.push([at(COUNT + index), `tail${index}`]);
      await expectPages(DEEP);
      // A fold of rows that all lie after the anchors leaves them valid.
      await fold();
      await expectPages(DEEP);
    }
    const after = await deepPages();
    expect(after.walked).toBe(before.walked);
    expect(after.anchor).toBeGreaterThan(before.anchor);

    // A record added before them moves every anchor after it: those pages walk, still exact.
    await shop.save('product', { id: 'early', created_at: at(1.5) });
    order.push([at(1.5), 'early']);
    sortOrder();
    await expectPages(DEEP);
    expect((await deepPages()).walked).toBeGreaterThan(after.walked);
  });

  it('should walk to the end with cursors, giving every record once', async () => {
    const seen: string[] = [];
    let next: string | null = null;
    do {
      const path: string = `/products?per_page=250${next ? `&cursor=${encodeURIComponent(next)}` : ''}`;
      const page = await shop.get(path);
      seen.push(...ids(page.body.data));
      next = page.body.meta.next_cursor;
    } while (next);
    expect(seen).toEqual(order.map(([, id]) => id));
  });
});
