import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEnvironment, type TestEnvironment } from './support/harness.js';
import { openShop, type Shop } from './support/v2-client.js';

/*
 * A `cursor` is the meta.next_cursor of a previous page; any other value is
 * refused with 400 invalid_parameters naming `cursor` before a statement
 * runs, whatever it decodes to (a date that does not exist, a NUL in an id,
 * the wrong shape), on every list that pages by cursor.
 */

let env: TestEnvironment;
let shop: Shop;

beforeAll(async () => {
  env = await startEnvironment({ worker: false });
  shop = await openShop(env, 'empty');
  // A second language whose sub-lists' parents exist, every list in it still empty.
  expect((await shop.request('POST', '/api/v1/languages', { language: { id: 'parents', name: 'P', code: 'xx' } })).status).toBe(200);
  for (const [segment, body] of [
    ['products', { product: { id: 'p1', name: 'P1' } }],
    ['categories', { category: { id: 'c1', name: 'C1' } }],
    ['brands', { brand: { id: 'b1', name: 'B1' } }],
  ] as const) {
    expect((await shop.request('PUT', `/api/v2/languages/parents/${segment}`, body)).status).toBe(200);
  }
});
afterAll(() => env?.close());

const cursorOf = (value: unknown) => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');
const DAY = '2026-01-01T00:00:00.000000Z';

const FORGED: Array<[string, string]> = [
  ['a date that does not exist', cursorOf([2, '2026-02-30T00:00:00.000000Z', 'p1'])],
  ['a 13th month', cursorOf([2, '2026-13-01T00:00:00.000000Z', 'p1'])],
  ['hour 24', cursorOf([2, '2026-01-01T24:00:00.000000Z', 'p1'])],
  ['a 60th second', cursorOf([2, '2026-01-01T23:59:60.000000Z', 'p1'])],
  ['year 0', cursorOf([2, '0000-01-01T00:00:00.000000Z', 'p1'])],
  ['a NUL in the id', cursorOf([2, DAY, 'p\u0000'])],
  ['an unpaired surrogate in the id', cursorOf([2, DAY, 'p\ud800'])],
  ['an id over 255 characters', cursorOf([2, DAY, 'x'.repeat(256)])],
  ['an empty id', cursorOf([2, DAY, ''])],
  ['an id that is a number', cursorOf([2, DAY, 7])],
  ['page 1', cursorOf([1, DAY, 'p1'])],
  ['a page with a fraction', cursorOf([2.5, DAY, 'p1'])],
  ['a page as text', cursorOf(['2', DAY, 'p1'])],
  ['an object', cursorOf({ page: 2, created_at: DAY, id: 'p1' })],
  ['an element too many', cursorOf([2, DAY, 'p1', 'x'])],
  ['text that is not JSON', cursorOf('[2,')],
  ['bytes that are not UTF-8', Buffer.from([0x5b, 0x32, 0x2c, 0x22, 0xff, 0x22, 0x5d]).toString('base64url')],
  ['characters outside base64url', 'abc%24def'],
  ['a cursor too long to be one', 'A'.repeat(3_000)],
];

const LISTS = [
  '/products',
  '/categories',
  '/brands',
  '/variants',
  '/reviews',
  '/profiles',
  '/orders',
  '/shopping_carts',
  '/global_unsubscribes',
  '/purchase_events',
];
const SUB_LISTS = [
  '/products/p1/variants',
  '/products/p1/categories',
  '/products/p1/relevant_products',
  '/categories/c1/products',
  '/brands/b1/products',
];

describe('when a list is asked for a page after a forged cursor', () => {
  const cases = [...LISTS.map((list) => ['empty', list]), ...SUB_LISTS.map((list) => ['parents', list])];

  it.each(cases)('should answer 400 invalid_parameters cursor on %s%s for every forged cursor', async (language, list) => {
    for (const [name, cursor] of FORGED) {
      const response = await shop.request('GET', `/api/v2/languages/${language}${list}?cursor=${cursor}`);
      expect(response.status, `${name}: ${response.text}`).toBe(400);
      expect(response.body.error, name).toEqual({ message: expect.stringContaining('cursor'), invalid_parameters: ['cursor'] });
    }
  });

  it.each(SUB_LISTS)('should answer 404 for %s when its parent does not exist, whatever the cursor', async (list) => {
    for (const [name, cursor] of FORGED) {
      const response = await shop.request('GET', `/api/v2/languages/empty${list}?cursor=${cursor}`);
      expect(response.status, `${name}: ${response.text}`).toBe(404);
    }
  });

  it('should still page by a cursor the service made, to the end of the list', async () => {
    for (const id of ['p2', 'p3'])
      expect((await shop.request('PUT', '/api/v2/languages/parents/products', { product: { id, name: id } })).status).toBe(200);
    const first = await shop.request('GET', '/api/v2/languages/parents/products?per_page=2');
    const next = await shop.request('GET', `/api/v2/languages/parents/products?per_page=2&cursor=${first.body.meta.next_cursor}`);
    expect(next.status).toBe(200);
    expect(next.body.meta).toMatchObject({ current_page: 2, next_cursor: null });
    expect(next.body.data.map((item: { id: string }) => item.id)).toEqual(['p3']);
  });
});
