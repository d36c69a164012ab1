import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEnvironment, type TestEnvironment } from './support/harness.js';
import { at, ids, openShop, type Shop } from './support/v2-client.js';

/** interface §8.7 pagination and filters, on every list and sub-list. */

let env: TestEnvironment;
let shop: Shop;

const name = (index: number) => `p${String(index).padStart(2, '0')}`;
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, offset) => name(from + offset));

beforeAll(async () => {
  env = await startEnvironment();
  shop = await openShop(env);
  // p01..p25: created at 1..25 s, updated at 99..75 s (the reverse order).
  for (let index = 25; index >= 1; index -= 1) {
    await shop.save('product', { id: name(index), name: `Product ${index}`, created_at: at(index), updated_at: at(100 - index) });
  }
  await shop.save('category', { id: 'c', name: 'C', created_at: at(0) });
  for (let index = 1; index <= 12; index += 1) {
    await shop.v1('variant', { id: `v${String(index).padStart(2, '0')}`, product_id: 'p01', created_at: at(index), updated_at: at(index) });
    const assigned = await shop.request('PUT', `/api/v2/languages/${shop.lang}/products/${name(index)}/categories/c`);
    expect(assigned.status).toBe(204);
  }
  await shop.v1('product', { id: 'p01', name: 'Product 1', category_ids: ['c'] });
  await shop.v1('brand', { id: 'brand', name: 'Brand' });
  await shop.v1('review', { id: 'review', product_id: 'p01', profile_id: 'profile' });
  await shop.v1('order', { id: 'order', profile_id: 'profile', products: [{ id: 'p01', quantity: 1 }] });
  await shop.v1('shopping_cart', { id: 'cart', profile_id: 'profile', product_ids: ['p01'] });
  await env.drain();
});
afterAll(async () => {
  await env.close();
});

describe('when a list is paged', () => {
  it('should give the first 10 by default, with meta', async () => {
    const response = await shop.get('/products');
    expect(response.status).toBe(200);
    expect(ids(response.body.data)).toEqual(range(1, 10));
    expect(response.body.meta).toEqual({ current_page: 1, per_page: 10, total: 25, next_cursor: expect.any(String) });
  });

  it('should give the following pages in order, and a short last page', async () => {
    expect(ids((await shop.get('/products?page=2')).body.data)).toEqual(range(11, 20));
    const last = await shop.get('/products?page=3');
    expect(ids(last.body.data)).toEqual(range(21, 25));
    expect(last.body.meta).toEqual({ current_page: 3, per_page: 10, total: 25, next_cursor: null });
  });

  it('should give an empty page past the end, with the total', async () => {
    for (const page of ['4', '1000', '9007199254740991']) {
      const response = await shop.get(`/products?page=${page}`);
      expect(response.status).toBe(200);
      expect(response.body).toEqual({ data: [], meta: { current_page: Number(page), per_page: 10, total: 25, next_cursor: null } });
    }
  });

  it('should accept per_page 250 and per_page 1', async () => {
    const all = await shop.get('/products?per_page=250');
    expect(ids(all.body.data)).toEqual(range(1, 25));
    expect(all.body.meta).toEqual({ current_page: 1, per_page: 250, total: 25, next_cursor: null });
    expect(ids((await shop.get('/products?per_page=1&page=25')).body.data)).toEqual(['p25']);
    expect(ids((await shop.get('/products?per_page=1&page=13')).body.data)).toEqual(['p13']);
  });

  it('should give every record exactly once when walking every page size', async () => {
    for (const perPage of [1, 2, 3, 4, 7, 12, 13, 24, 25, 26]) {
      expect(ids(await shop.all('/products', perPage))).toEqual(range(1, 25));
    }
  });

  it.each([
    ['per_page=251', ['per_page']],
    ['per_page=0', ['per_page']],
    ['per_page=-1', ['per_page']],
    ['per_page=abc', ['per_page']],
    ['per_page=2.5', ['per_page']],
    ['per_page=', ['per_page']],
    ['per_page=1e2', ['per_page']],
    ['page=0', ['page']],
    ['page=-1', ['page']],
    ['page=abc', ['page']],
    ['page=1.0', ['page']],
    ['page=+1', ['page']],
    ['page=', ['page']],
    ['page=99999999999999999', ['page']],
    ['page=1&page=2', ['page']],
    ['page=0&per_page=300', ['page', 'per_page']],
  ])('should answer 400 invalid_parameters for %s', async (query, names) => {
    const response = await shop.get(`/products?${query}`);
    expect(response.status).toBe(400);
    expect(response.body.error.invalid_parameters).toEqual(names);
    expect(typeof response.body.error.message).toBe('string');
  });

  it('should answer 400 unknown_parameters for a query parameter it does not know, before invalid values', async () => {
    const response = await shop.get('/products?sort=name&page=0');
    expect(response.status).toBe(400);
    expect(response.body.error.unknown_parameters).toEqual(['sort']);
  });
});

describe('when a list is filtered by timestamps', () => {
  it.each([
    ['created_after', at(5), range(6, 25)],
    ['created_before', at(5), range(1, 4)],
    ['updated_after', at(90), range(1, 9)],
    ['updated_before', at(90), range(11, 25)],
  ])('should exclude the record at the boundary (%s=%s)', async (filter, instant, expected) => {
    const response = await shop.get(`/products?${filter}=${instant}&per_page=250`);
    expect(response.status).toBe(200);
    expect(ids(response.body.data)).toEqual(expected);
    expect(response.body.meta.total).toBe(expected.length);
  });

  it('should combine filters and page within the filtered results', async () => {
    const query = `created_after=${at(3)}&created_before=${at(20)}&updated_before=${at(90)}`;
    const response = await shop.get(`/products?${query}&per_page=4&page=2`);
    expect(ids(response.body.data)).toEqual(range(15, 18));
    expect(response.body.meta).toEqual({ current_page: 2, per_page: 4, total: 9, next_cursor: expect.any(String) });
    expect(ids(await shop.all(`/products?${query}`, 4))).toEqual(range(11, 19));
  });

  it('should read zone offsets, escaped or not, and bare dates', async () => {
    const escaped = await shop.get('/products?created_after=2024-01-01T02:00:05%2B02:00&per_page=1');
    expect(escaped.body.meta.total).toBe(20);
    const unescaped = await shop.get('/products?created_after=2024-01-01T02:00:05+02:00&per_page=1');
    expect(unescaped.body.meta.total).toBe(20);
    const fraction = await shop.get('/products?created_after=2024-01-01T00:00:05.001Z&per_page=1');
    expect(fraction.body.meta.total).toBe(20);
    const date = await shop.get('/products?created_before=2024-01-02&per_page=1');
    expect(date.body.meta.total).toBe(25);
  });

  it.each(['yesterday', '2024-13-01T00:00:00Z', '2024-01-01T25:00:00Z', '', '1700000000'])(
    'should answer 400 invalid_parameters for created_after=%j',
    async (value) => {
      const response = await shop.get(`/products?created_after=${encodeURIComponent(value)}`);
      expect(response.status).toBe(400);
      expect(response.body.error.invalid_parameters).toEqual(['created_after']);
    },
  );

  it.each(['created_before', 'updated_after', 'updated_before'])('should validate %s the same way', async (filter) => {
    const response = await shop.get(`/products?${filter}=soon`);
    expect(response.status).toBe(400);
    expect(response.body.error.invalid_parameters).toEqual([filter]);
  });
});

describe('when records share a created_at', () => {
  it('should order them by id, stably across pages', async () => {
    const tied = await openShop(env);
    for (const id of ['b', 'd', 'a', 'c']) await tied.save('product', { id, created_at: at(50) });
    await tied.save('product', { id: 'z', created_at: at(49) });
    await tied.save('product', { id: 'y', created_at: at(51) });
    expect(ids((await tied.get('/products')).body.data)).toEqual(['z', 'a', 'b', 'c', 'd', 'y']);
    expect(ids((await tied.get('/products?per_page=2&page=2')).body.data)).toEqual(['b', 'c']);
    expect(ids((await tied.get('/products?per_page=4&page=2')).body.data)).toEqual(['d', 'y']);
    expect(ids((await tied.get(`/products?created_after=${at(49)}&created_before=${at(51)}`)).body.data)).toEqual(['a', 'b', 'c', 'd']);
  });
});

describe('when a sub-list is paged and filtered', () => {
  it('should page the variants of a product', async () => {
    const response = await shop.get('/products/p01/variants?per_page=5&page=3');
    expect(ids(response.body.data)).toEqual(['v11', 'v12']);
    expect(response.body.meta).toEqual({ current_page: 3, per_page: 5, total: 12, next_cursor: null });
    const filtered = await shop.get(`/products/p01/variants?created_after=${at(4)}&updated_before=${at(7)}`);
    expect(ids(filtered.body.data)).toEqual(['v05', 'v06']);
    expect(filtered.body.meta.total).toBe(2);
  });

  it('should page the products of a category', async () => {
    const response = await shop.get('/categories/c/products?per_page=5&page=2');
    expect(ids(response.body.data)).toEqual(range(6, 10));
    expect(response.body.meta).toEqual({ current_page: 2, per_page: 5, total: 12, next_cursor: expect.any(String) });
    expect(ids(await shop.all('/categories/c/products', 5))).toEqual(range(1, 12));
    const filtered = await shop.get(`/categories/c/products?created_before=${at(3)}`);
    expect(ids(filtered.body.data)).toEqual(range(1, 2));
    expect(filtered.body.meta.total).toBe(2);
  });

  it('should page the categories of a product', async () => {
    const response = await shop.get('/products/p01/categories?page=2');
    expect(response.body).toEqual({ data: [], meta: { current_page: 2, per_page: 10, total: 1, next_cursor: null } });
    expect((await shop.get(`/products/p01/categories?created_after=${at(0)}`)).body.meta.total).toBe(0);
  });
});

/** Every page of `path` by cursor: the ids, the current_page of each page, and the meta of the last one. */
async function walk(path: string, perPage: number) {
  const separator = path.includes('?') ? '&' : '?';
  const seen: string[] = [];
  const pages: number[] = [];
  let response = await shop.get(`${path}${separator}per_page=${perPage}`);
  for (;;) {
    expect(response.status, response.text).toBe(200);
    seen.push(...ids(response.body.data));
    pages.push(response.body.meta.current_page);
    const next = response.body.meta.next_cursor;
    if (next === null) return { ids: seen, pages, last: response.body.meta };
    response = await shop.get(`${path}${separator}per_page=${perPage}&cursor=${encodeURIComponent(next)}`);
  }
}

describe('when a list is walked with cursors', () => {
  it.each([1, 3, 7, 10, 25, 250])('should give every record once, in order, %i per page, as the pages do', async (perPage) => {
    const result = await walk('/products', perPage);
    expect(result.ids).toEqual(range(1, 25));
    expect(result.pages).toEqual(Array.from({ length: Math.max(Math.ceil(25 / perPage), 1) }, (_, index) => index + 1));
    expect(result.last).toMatchObject({ total: 25, next_cursor: null });
  });

  it.each([
    [`/products?created_after=${encodeURIComponent(at(3))}&created_before=${encodeURIComponent(at(13))}`, range(4, 12)],
    ['/products/p01/variants', ['v01', 'v02', 'v03', 'v04', 'v05', 'v06', 'v07', 'v08', 'v09', 'v10', 'v11', 'v12']],
    ['/categories/c/products', range(1, 12)],
    [`/categories/c/products?created_after=${encodeURIComponent(at(2))}`, range(3, 12)],
  ])('should walk %s like its pages', async (path, expected) => {
    expect((await walk(path, 4)).ids).toEqual(expected);
  });

  it('should go on after its cursor when records are written and deleted meanwhile, repeating none', async () => {
    const moving = await openShop(env);
    for (let index = 1; index <= 10; index += 1) await moving.save('product', { id: name(index), created_at: at(index) });
    const first = await moving.get('/products?per_page=4');
    expect(ids(first.body.data)).toEqual(range(1, 4));
    // Before the cursor: a new earliest record and a deleted one. After it: a new last one, a deleted one, a moved one.
    await moving.save('product', { id: 'early', created_at: at(0) });
    expect((await moving.del('/products/p02')).status).toBe(204);
    await moving.save('product', { id: 'late', created_at: at(99) });
    expect((await moving.del('/products/p06')).status).toBe(204);
    await moving.save('product', { id: 'p05', created_at: at(50) });
    const rest: string[] = [];
    let next = first.body.meta.next_cursor as string | null;
    while (next) {
      const page = await moving.get(`/products?per_page=4&cursor=${encodeURIComponent(next)}`);
      rest.push(...ids(page.body.data));
      expect(page.body.meta.total).toBe(10);
      next = page.body.meta.next_cursor;
    }
    expect(rest).toEqual(['p07', 'p08', 'p09', 'p10', 'p05', 'late']);
  });

  it('should answer an empty last page with no cursor when the list ends exactly at the cursor', async () => {
    const exact = await walk('/products', 5);
    expect(exact.pages).toEqual([1, 2, 3, 4, 5]);
    const lastFull = await shop.get('/products?per_page=5&page=5');
    expect(lastFull.body.meta.next_cursor).toBeNull();
  });

  it.each([
    ['cursor=abc', 'a malformed cursor'],
    ['cursor=', 'an empty cursor'],
    [`cursor=${Buffer.from('[1,"2024-01-01T00:00:00.000000Z","p01"]').toString('base64url')}`, 'a cursor to page 1'],
  ])('should answer 400 invalid_parameters cursor for %s (%s)', async (query) => {
    const response = await shop.get(`/products?${query}`);
    expect(response.status).toBe(400);
    expect(response.body.error.invalid_parameters).toEqual(['cursor']);
  });

  it('should refuse page and cursor together, and cursor on the languages list', async () => {
    const next = (await shop.get('/products?per_page=2')).body.meta.next_cursor as string;
    const both = await shop.get(`/products?page=2&cursor=${encodeURIComponent(next)}`);
    expect(both.status).toBe(400);
    expect(both.body.error.invalid_parameters).toEqual(['cursor']);
    const languages = await shop.request('GET', `/api/v2/languages?cursor=${encodeURIComponent(next)}`);
    expect(languages.status).toBe(400);
    expect(languages.body.error.unknown_parameters).toEqual(['cursor']);
  });
});

describe('when any v2 list is asked for a page', () => {
  const LISTS = [
    '/products',
    '/categories',
    '/brands',
    '/variants',
    '/reviews',
    '/orders',
    '/shopping_carts',
    '/profiles',
    '/products/p01/variants',
    '/products/p01/categories',
    '/categories/c/products',
    '',
  ];
  const url = (list: string, query: string) =>
    list === '' ? `/api/v2/languages?${query}` : `/api/v2/languages/${shop.lang}${list}?${query}`;

  it.each(LISTS)('should answer %j with data and meta, and refuse bad pagination', async (list) => {
    const page = await shop.request('GET', url(list, 'page=1&per_page=1'));
    expect(page.status).toBe(200);
    expect(page.body.data.length).toBe(1);
    const { next_cursor: next, ...meta } = page.body.meta;
    expect(meta).toEqual({ current_page: 1, per_page: 1, total: expect.any(Number) });
    // Record lists also page by cursor; the languages list by page only.
    if (list === '') expect(next).toBeUndefined();
    else expect(next).toEqual(page.body.meta.total > 1 ? expect.any(String) : null);
    const beyond = await shop.request('GET', url(list, `page=${page.body.meta.total + 1}&per_page=1`));
    expect(beyond.body.data).toEqual([]);
    for (const [query, errorClass, names] of [
      ['per_page=251', 'invalid_parameters', ['per_page']],
      ['page=0', 'invalid_parameters', ['page']],
      ['created_after=later', 'invalid_parameters', ['created_after']],
      ['x=1', 'unknown_parameters', ['x']],
    ] as const) {
      const response = await shop.request('GET', url(list, query));
      expect(response.status, `${list}?${query}`).toBe(400);
      expect(response.body.error[errorClass]).toEqual(names);
    }
  });
});

describe('when the languages of the account are listed', () => {
  it('should list only the live languages of the account, in creation order', async () => {
    const mine = await openShop(env);
    const other = await openShop(env);
    for (const id of ['second', 'third', 'fourth']) {
      expect((await mine.request('POST', '/api/v1/languages', { language: { id, name: id, code: 'xx' } })).status).toBe(200);
    }
    expect((await mine.request('DELETE', '/api/v1/languages/third')).status).toBe(200);
    const response = await mine.request('GET', '/api/v2/languages');
    expect(response.status).toBe(200);
    expect(response.body).toEqual({
      data: [
        { id: mine.lang, name: mine.lang, code: 'xx', active: null, url: null },
        { id: 'second', name: 'second', code: 'xx', active: null, url: null },
        { id: 'fourth', name: 'fourth', code: 'xx', active: null, url: null },
      ],
      meta: { current_page: 1, per_page: 10, total: 3 },
    });
    expect(ids((await mine.request('GET', '/api/v2/languages?per_page=1&page=3')).body.data)).toEqual(['fourth']);
    expect(ids((await other.request('GET', '/api/v2/languages')).body.data)).toEqual([other.lang]);
  });
});
