import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEnvironment, type TestEnvironment } from './support/harness.js';
import { auditOf } from './support/state.js';
import { at, ids, openShop, type Shop } from './support/v2-client.js';

/** v2 products (interface §8): PUT, GET, DELETE, sub-listings and assignments, over HTTP with the real worker. */

let env: TestEnvironment;

beforeAll(async () => {
  env = await startEnvironment();
});
afterAll(async () => {
  await env.close();
});

const EMPTY_PRODUCT = {
  name: null,
  visible: null,
  main_image: null,
  url: null,
  short_description: null,
  price: null,
  brand_id: null,
  category_ids: [],
  relevant_product_ids: [],
  custom_attributes: [],
};

describe('when a product is PUT through v2', () => {
  let shop: Shop;
  beforeAll(async () => {
    shop = await openShop(env);
  });

  it('should create it and answer 200 with the bare saved record, absent values null', async () => {
    const response = await shop.put('product', {
      id: 'p1',
      name: 'Chair',
      visible: true,
      main_image: 'https://img.test/p1.jpg',
      url: 'https://shop.test/p1',
      short_description: 'A chair',
      price: 12.5,
      created_at: '2024-03-01T10:00:00Z',
      updated_at: '2024-03-02T10:00:00.123+02:00',
    });
    expect(response.status).toBe(200);
    expect(response.body).toEqual({
      id: 'p1',
      name: 'Chair',
      visible: true,
      main_image: 'https://img.test/p1.jpg',
      url: 'https://shop.test/p1',
      short_description: 'A chair',
      price: 12.5,
      brand_id: null,
      category_ids: [],
      relevant_product_ids: [],
      custom_attributes: [],
      created_at: '2024-03-01T10:00:00.000Z',
      updated_at: '2024-03-02T08:00:00.123Z',
    });
    expect((await shop.get('/products/p1')).body).toEqual(response.body);
  });

  it('should accept a product with only its id, every other value null', async () => {
    const response = await shop.put('product', { id: 'bare' });
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ id: 'bare', ...EMPTY_PRODUCT });
    expect(Date.parse(response.body.created_at)).not.toBeNaN();
    expect(response.body.updated_at).toBe(response.body.created_at);
  });

  it('should merge an update: omitted fields keep their values, null clears, created_at stays', async () => {
    const first = await shop.save('product', { id: 'p2', name: 'Table', price: 99, url: 'https://shop.test/p2' });
    const second = await shop.save('product', { id: 'p2', price: 89.99, url: null });
    expect(second).toMatchObject({ id: 'p2', name: 'Table', price: 89.99, url: null, created_at: first['created_at'] });
    expect(Date.parse(second['updated_at'])).toBeGreaterThanOrEqual(Date.parse(first['updated_at']));
  });

  it('should show the links as currently stored in the PUT response', async () => {
    await shop.v1('product', { id: 'linked', name: 'Linked', category_ids: ['c1'], relevant_product_ids: ['p1'] });
    await env.drain();
    const saved = await shop.save('product', { id: 'linked', price: 1 });
    expect(saved).toMatchObject({ category_ids: ['c1'], relevant_product_ids: ['p1'], price: 1, name: 'Linked' });
  });

  it('should create a stub brand for brand_id once the queue has drained', async () => {
    const saved = await shop.save('product', { id: 'branded', name: 'Branded', brand_id: 'b-new' });
    expect(saved['brand_id']).toBe('b-new');
    await env.drain();
    const brand = await shop.get('/brands/b-new');
    expect(brand.status).toBe(200);
    expect(brand.body).toMatchObject({ id: 'b-new', name: null, url: null, content: null, product_ids: ['branded'] });
    const audit = await auditOf(env, shop.lang, { kind: 'brand', recordId: 'b-new', account: shop.account });
    expect(audit.map((entry) => entry.action)).toEqual(['stub']);
  });

  it('should move the product to another brand and clear brand_id with null', async () => {
    await shop.save('product', { id: 'mover', brand_id: 'b-a' });
    await shop.save('product', { id: 'mover', brand_id: 'b-b' });
    await env.drain();
    expect((await shop.get('/brands/b-a')).body.product_ids).toEqual([]);
    expect((await shop.get('/brands/b-b')).body.product_ids).toEqual(['mover']);
    await shop.save('product', { id: 'mover', brand_id: null });
    await env.drain();
    expect((await shop.get('/brands/b-b')).body.product_ids).toEqual([]);
    expect((await shop.get('/products/mover')).body.brand_id).toBeNull();
  });

  it('should set brand_id to null when the brand is deleted', async () => {
    await shop.save('product', { id: 'orphan', brand_id: 'b-gone' });
    await env.drain();
    expect((await shop.v1Delete('brand', 'b-gone')).status).toBe(200);
    await env.drain();
    expect((await shop.get('/products/orphan')).body.brand_id).toBeNull();
  });

  it.each([
    [['category_ids'], { category_ids: ['c1'] }],
    [['relevant_product_ids'], { relevant_product_ids: ['p1'] }],
    [['category_ids', 'relevant_product_ids'], { category_ids: [], relevant_product_ids: [] }],
  ])('should refuse %j with 400 unknown_parameters pointing to the assignment endpoints', async (names, lists) => {
    const response = await shop.put('product', { id: 'p1', ...lists });
    expect(response.status).toBe(400);
    expect(response.body.error.unknown_parameters).toEqual(names);
    expect(response.body.error.message).toContain('PUT /api/v2/languages/{language_id}/products/{product_id}/categories/{category_id}');
  });

  it.each([
    ['no body', undefined, 'missing_parameters', ['product']],
    ['an empty object', {}, 'missing_parameters', ['product']],
    ['no id', { product: { name: 'x' } }, 'missing_parameters', ['id']],
    ['a null id', { product: { id: null } }, 'missing_parameters', ['id']],
    ['another top-level key', { product: { id: 'x' }, extra: 1 }, 'unknown_parameters', ['extra']],
    ['an unknown field', { product: { id: 'x', colour: 'red' } }, 'unknown_parameters', ['colour']],
    ['v1-only list fields', { product: { id: 'x', variant_ids: [] } }, 'unknown_parameters', ['variant_ids']],
    ['an integer id (v2 ids are strings)', { product: { id: 12 } }, 'invalid_parameters', ['id']],
    ['an empty id', { product: { id: '' } }, 'invalid_parameters', ['id']],
    ['a 256-character id', { product: { id: 'x'.repeat(256) } }, 'invalid_parameters', ['id']],
    ['a price that is a string', { product: { id: 'x', price: '12' } }, 'invalid_parameters', ['price']],
    ['a bad url', { product: { id: 'x', url: 'not a url' } }, 'invalid_parameters', ['url']],
    ['a bad main_image', { product: { id: 'x', main_image: 'ftp://img' } }, 'invalid_parameters', ['main_image']],
    ['visible as a string', { product: { id: 'x', visible: 'yes' } }, 'invalid_parameters', ['visible']],
    ['an integer brand_id', { product: { id: 'x', brand_id: 5 } }, 'invalid_parameters', ['brand_id']],
    ['a bad created_at', { product: { id: 'x', created_at: 'yesterday' } }, 'invalid_parameters', ['created_at']],
    ['a record that is an array', { product: [] }, 'invalid_parameters', ['product']],
  ])('should answer 400 for %s', async (_label, body, errorClass, names) => {
    const response = await shop.request('PUT', `/api/v2/languages/${shop.lang}/products`, body);
    expect(response.status).toBe(400);
    expect(response.body.error[errorClass as string]).toEqual(names);
    expect(typeof response.body.error.message).toBe('string');
  });

  it('should report missing fields before unknown ones and unknown before invalid ones', async () => {
    const response = await shop.put('product', { name: 5, category_ids: [] });
    expect(response.body.error.missing_parameters).toEqual(['id']);
    const unknown = await shop.put('product', { id: 'x', price: 'nope', category_ids: [] });
    expect(unknown.body.error.unknown_parameters).toEqual(['category_ids']);
  });

  it('should answer 415 for a body that is not JSON and 400 for malformed JSON', async () => {
    const form = await env.request('PUT', `/api/v2/languages/${shop.lang}/products`, {
      token: shop.token,
      raw: 'product=1',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(form.status).toBe(415);
    const malformed = await env.request('PUT', `/api/v2/languages/${shop.lang}/products`, {
      token: shop.token,
      raw: '{"product":',
      headers: { 'content-type': 'application/json' },
    });
    expect(malformed.status).toBe(400);
    expect(typeof malformed.body.error.message).toBe('string');
  });

  it('should answer 404 with the language body for an unknown language, even with a bad body', async () => {
    const response = await shop.request('PUT', '/api/v2/languages/nope/products', { product: { price: 'x' } });
    expect(response.status).toBe(404);
    expect(response.body).toEqual({ error: { message: "Language 'nope' not found" } });
  });

  it('should answer 401 without a valid token', async () => {
    const response = await env.request('PUT', `/api/v2/languages/${shop.lang}/products`, { body: { product: { id: 'x' } } });
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toMatch(/^Bearer/);
    expect(response.body.error).toContain('/oauth/token');
  });

  it('should answer 405 with Allow for a method the path does not have', async () => {
    const response = await shop.request('POST', `/api/v2/languages/${shop.lang}/products`, { product: { id: 'x' } });
    expect(response.status).toBe(405);
    expect(response.headers.get('allow')).toContain('PUT');
    expect(response.headers.get('allow')).toContain('GET');
  });

  it('should audit the write like a v1 write', async () => {
    await shop.save('product', { id: 'audited', name: 'A' });
    await shop.save('product', { id: 'audited', name: 'B' });
    await env.drain();
    const audit = await auditOf(env, shop.lang, { kind: 'product', recordId: 'audited', account: shop.account });
    expect(audit.map((entry) => [entry.action, entry.changes])).toEqual([
      ['create', { name: 'A' }],
      ['update', { name: 'B' }],
    ]);
  });
});

describe('when a product is read through v2', () => {
  let shop: Shop;
  beforeAll(async () => {
    shop = await openShop(env);
    await shop.save('product', { id: 'r1', name: 'One', created_at: at(1) });
    await shop.save('product', { id: 'r2', name: 'Two', created_at: at(2) });
  });

  it('should list the products with their full records and meta', async () => {
    const response = await shop.get('/products');
    expect(response.status).toBe(200);
    expect(response.body.meta).toEqual({ current_page: 1, per_page: 10, total: 2, next_cursor: null });
    expect(response.body.data).toEqual([
      { id: 'r1', ...EMPTY_PRODUCT, name: 'One', created_at: at(1), updated_at: expect.any(String) },
      { id: 'r2', ...EMPTY_PRODUCT, name: 'Two', created_at: at(2), updated_at: expect.any(String) },
    ]);
  });

  it('should list a product whose record is stored compressed (a long description) as GET one shows it', async () => {
    const description = Array.from({ length: 400 }, (_, index) => `Line ${index} of a long description.`).join(' ');
    await shop.save('product', {
      id: 'r3',
      name: 'Three',
      short_description: description,
      url: 'https://shop.example/three',
      price: 12.5,
      visible: true,
      custom_attributes: [{ name: 'colour', string_value: 'red' }],
      created_at: at(3),
    });
    const list = await shop.get('/products');
    const one = await shop.get('/products/r3');
    expect(list.body.data.find((item: { id: string }) => item.id === 'r3')).toEqual(one.body);
    expect(one.body).toMatchObject({
      short_description: description,
      price: 12.5,
      custom_attributes: [{ name: 'colour', string_value: 'red' }],
    });
  });

  it('should answer 404 {"error":"Product not found"} for a missing product', async () => {
    const response = await shop.get('/products/missing');
    expect(response.status).toBe(404);
    expect(response.body).toEqual({ error: 'Product not found' });
  });

  it('should answer 404 for an id that Postgres cannot hold', async () => {
    const response = await shop.get('/products/a%00b');
    expect(response.status).toBe(404);
    expect(response.body).toEqual({ error: 'Product not found' });
  });

  it('should answer 404 with the language body for an unknown language', async () => {
    const response = await shop.request('GET', '/api/v2/languages/nope/products/r1');
    expect(response.status).toBe(404);
    expect(response.body).toEqual({ error: { message: "Language 'nope' not found" } });
  });

  it('should not show another account the product', async () => {
    const other = await openShop(env, shop.lang);
    expect((await other.get('/products/r1')).status).toBe(404);
    expect((await other.get('/products')).body.meta.total).toBe(0);
  });
});

describe('when a product is deleted through v2', () => {
  let shop: Shop;
  beforeAll(async () => {
    shop = await openShop(env);
    await shop.save('product', { id: 'doomed', name: 'Doomed', brand_id: 'brand' });
    await shop.save('category', { id: 'cat', name: 'Cat' });
    await shop.v1('variant', { id: 'v1', product_id: 'doomed', title: 'V1' });
    await shop.v1('review', { id: 'rev', product_id: 'doomed', profile_id: 'prof' });
    await shop.v1('product', { id: 'friend', name: 'Friend', relevant_product_ids: ['doomed'] });
    await env.drain();
    expect((await shop.request('PUT', `/api/v2/languages/${shop.lang}/products/doomed/categories/cat`)).status).toBe(204);
    await env.drain();
  });

  it('should answer 204 with no body', async () => {
    const response = await shop.del('/products/doomed');
    expect(response.status).toBe(204);
    expect(response.text).toBe('');
    expect((await shop.get('/products/doomed')).status).toBe(404);
  });

  it('should delete its variants and its assignments, and keep reviews, brand and categories', async () => {
    await env.drain();
    expect((await shop.get('/variants/v1')).status).toBe(404);
    expect((await shop.get('/categories/cat')).body.product_ids).toEqual([]);
    expect((await shop.get('/products/friend')).body.relevant_product_ids).toEqual([]);
    expect((await shop.get('/reviews/rev')).body.product_id).toBe('doomed');
    expect((await shop.get('/brands/brand')).body.product_ids).toEqual([]);
  });

  it('should answer 404 {"error":"Product not found"} the second time', async () => {
    const response = await shop.del('/products/doomed');
    expect(response.status).toBe(404);
    expect(response.body).toEqual({ error: 'Product not found' });
  });

  it('should answer 404 with the language body for an unknown language', async () => {
    const response = await shop.request('DELETE', '/api/v2/languages/nope/products/friend');
    expect(response.status).toBe(404);
    expect(response.body).toEqual({ error: { message: "Language 'nope' not found" } });
  });
});

describe('when products are assigned to categories', () => {
  let shop: Shop;
  const assign = (product: string, category: string) =>
    shop.request('PUT', `/api/v2/languages/${shop.lang}/products/${product}/categories/${category}`);
  const unassign = (product: string, category: string) =>
    shop.request('DELETE', `/api/v2/languages/${shop.lang}/products/${product}/categories/${category}`);
  const linkAudit = async () =>
    (await auditOf(env, shop.lang, { kind: 'product', recordId: 'p', account: shop.account }))
      .filter((entry) => entry.action === 'link' || entry.action === 'unlink')
      .map((entry) => [entry.action, entry.changes]);

  beforeAll(async () => {
    shop = await openShop(env);
    await shop.save('product', { id: 'p', name: 'P' });
    await shop.save('category', { id: 'c', name: 'C' });
    await shop.save('category', { id: 'd', name: 'D' });
  });

  it('should answer 204 and link them once the queue has drained', async () => {
    const response = await assign('p', 'c');
    expect(response.status).toBe(204);
    expect(response.text).toBe('');
    await env.drain();
    expect((await shop.get('/products/p')).body.category_ids).toEqual(['c']);
    expect((await shop.get('/categories/c')).body.product_ids).toEqual(['p']);
    expect(await linkAudit()).toEqual([['link', { category_ids: 'c' }]]);
  });

  it('should change nothing when assigned again (204, no second audit entry)', async () => {
    expect((await assign('p', 'c')).status).toBe(204);
    await env.drain();
    expect((await shop.get('/products/p')).body.category_ids).toEqual(['c']);
    expect(await linkAudit()).toEqual([['link', { category_ids: 'c' }]]);
  });

  it('should keep other assignments of the product', async () => {
    expect((await assign('p', 'd')).status).toBe(204);
    await env.drain();
    expect((await shop.get('/products/p')).body.category_ids).toEqual(['c', 'd']);
  });

  it('should remove only the assignment on DELETE (204), and answer 204 again when it is absent', async () => {
    expect((await unassign('p', 'c')).status).toBe(204);
    await env.drain();
    expect((await shop.get('/products/p')).body.category_ids).toEqual(['d']);
    expect((await shop.get('/categories/c')).status).toBe(200);
    expect((await unassign('p', 'c')).status).toBe(204);
    await env.drain();
    expect(await linkAudit()).toEqual([
      ['link', { category_ids: 'c' }],
      ['link', { category_ids: 'd' }],
      ['unlink', { category_ids: 'c' }],
    ]);
  });

  it.each([
    ['PUT', 'missing', 'c', 'Product not found'],
    ['PUT', 'p', 'missing', 'Category not found'],
    ['PUT', 'missing', 'missing', 'Product not found'],
    ['DELETE', 'missing', 'c', 'Product not found'],
    ['DELETE', 'p', 'missing', 'Category not found'],
  ])('should answer %s 404 when a record is missing (%s, %s)', async (method, product, category, message) => {
    const response = await shop.request(method, `/api/v2/languages/${shop.lang}/products/${product}/categories/${category}`);
    expect(response.status).toBe(404);
    expect(response.body).toEqual({ error: message });
  });

  it('should answer 404 with the language body for an unknown language', async () => {
    const response = await shop.request('PUT', '/api/v2/languages/nope/products/p/categories/c');
    expect(response.status).toBe(404);
    expect(response.body).toEqual({ error: { message: "Language 'nope' not found" } });
  });

  it('should answer 404 for a category that was deleted', async () => {
    await shop.save('category', { id: 'gone', name: 'Gone' });
    expect((await shop.del('/categories/gone')).status).toBe(204);
    const response = await assign('p', 'gone');
    expect(response.status).toBe(404);
    expect(response.body).toEqual({ error: 'Category not found' });
  });
});

describe('when the sub-listings of a product are read', () => {
  let shop: Shop;
  beforeAll(async () => {
    shop = await openShop(env);
    await shop.save('product', { id: 'p', name: 'P' });
    await shop.v1('variant', {
      id: 'v-full',
      product_id: 'p',
      title: 'Large',
      price_incl: 12.1,
      price_excl: 10,
      main_image: 'https://img.test/v.jpg',
      sku: 'SKU',
      created_at: at(1),
    });
    await shop.v1('variant', { id: 'v-bare', product_id: 'p', created_at: at(2) });
    await shop.v1('variant', { id: 'v-other', product_id: 'other', created_at: at(3) });
    await shop.save('category', { id: 'c2', name: 'Second', created_at: at(2) });
    await shop.save('category', { id: 'c1', name: 'First', created_at: at(1) });
    await shop.v1('product', { id: 'p', name: 'P', category_ids: ['c1', 'c2'] });
    await env.drain();
  });

  it('should list its variants as summaries: id, name (title), price (price_incl), main_image', async () => {
    const response = await shop.get('/products/p/variants');
    expect(response.status).toBe(200);
    expect(response.body).toEqual({
      data: [
        { id: 'v-full', name: 'Large', price: 12.1, main_image: 'https://img.test/v.jpg' },
        { id: 'v-bare', name: null, price: null, main_image: null },
      ],
      meta: { current_page: 1, per_page: 10, total: 2, next_cursor: null },
    });
  });

  it('should list its categories as summaries of their id, in list order', async () => {
    const response = await shop.get('/products/p/categories');
    expect(response.status).toBe(200);
    expect(response.body).toEqual({
      data: [{ id: 'c1' }, { id: 'c2' }],
      meta: { current_page: 1, per_page: 10, total: 2, next_cursor: null },
    });
  });

  it('should answer 404 {"error":"Product not found"} for a missing product', async () => {
    for (const path of ['/products/none/variants', '/products/none/categories']) {
      const response = await shop.get(path);
      expect(response.status).toBe(404);
      expect(response.body).toEqual({ error: 'Product not found' });
    }
  });

  it('should show a product without variants or categories with empty lists', async () => {
    await shop.save('product', { id: 'lonely' });
    expect((await shop.get('/products/lonely/variants')).body).toEqual({
      data: [],
      meta: { current_page: 1, per_page: 10, total: 0, next_cursor: null },
    });
    expect((await shop.get('/products/lonely/categories')).body).toEqual({
      data: [],
      meta: { current_page: 1, per_page: 10, total: 0, next_cursor: null },
    });
  });
});

describe('when v1 and v2 work on the same products', () => {
  let shop: Shop;
  beforeAll(async () => {
    shop = await openShop(env);
  });

  it('should show a v1-written product through v2 with its current links', async () => {
    await shop.v1('product', {
      id: 10,
      name: 'From v1',
      price: 5,
      category_ids: [1, 'c2'],
      relevant_product_ids: ['11'],
      variant_ids: ['v9'],
      review_ids: ['r9'],
    });
    await shop.v1('brand', { id: 'b', name: 'Brand', product_ids: [10] });
    await env.drain();
    const response = await shop.get('/products/10');
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({
      id: '10',
      name: 'From v1',
      price: 5,
      brand_id: 'b',
      category_ids: ['1', 'c2'],
      relevant_product_ids: ['11'],
      custom_attributes: [],
    });
    expect(Object.keys(response.body)).not.toContain('variant_ids');
    expect(ids((await shop.get('/products/10/variants')).body.data)).toEqual(['v9']);
    expect((await shop.get('/products/11')).body).toMatchObject({ id: '11', name: null });
  });

  it('should keep v2 fields when v1 updates the product', async () => {
    await shop.save('product', { id: 'mixed', name: 'v2', brand_id: 'bx', custom_attributes: [{ name: 'size', integer_value: 3 }] });
    await shop.v1('product', { id: 'mixed', name: 'v1 update' });
    const response = await shop.get('/products/mixed');
    expect(response.body).toMatchObject({ name: 'v1 update', brand_id: 'bx', custom_attributes: [{ name: 'size', integer_value: 3 }] });
  });

  it('should delete a v2-written product through v1 (200 with the v1 record)', async () => {
    await shop.save('product', { id: 'v2-made', name: 'Made in v2', price: 3, brand_id: 'bb' });
    await shop.v1('variant', { id: 'child', product_id: 'v2-made' });
    const response = await shop.v1Delete('product', 'v2-made');
    expect(response.status).toBe(200);
    expect(response.body.product).toMatchObject({ id: 'v2-made', name: 'Made in v2', price: 3 });
    expect(response.body.message).toBe('Product successfully deleted');
    expect((await shop.get('/products/v2-made')).status).toBe(404);
    await env.drain();
    expect((await shop.get('/variants/child')).status).toBe(404);
    expect((await shop.v1Delete('product', 'v2-made')).status).toBe(404);
  });
});
