import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEnvironment, type TestEnvironment } from './support/harness.js';
import { auditOf } from './support/state.js';
import { at, ids, openShop, type Shop } from './support/v2-client.js';

/** v2 categories (interface §8): PUT, GET, DELETE, the products sub-listing, parent stubs. */

let env: TestEnvironment;

beforeAll(async () => {
  env = await startEnvironment();
});
afterAll(async () => {
  await env.close();
});

describe('when a category is PUT through v2', () => {
  let shop: Shop;
  beforeAll(async () => {
    shop = await openShop(env);
  });

  it('should create it and answer 200 with the bare saved record, absent values null', async () => {
    const response = await shop.put('category', { id: 'c1', name: 'Chairs', created_at: at(5) });
    expect(response.status).toBe(200);
    expect(response.body).toEqual({
      id: 'c1',
      name: 'Chairs',
      parent_category_id: null,
      product_ids: [],
      url: null,
      visible: null,
      created_at: at(5),
      updated_at: expect.any(String),
      custom_attributes: [],
    });
    expect((await shop.get('/categories/c1')).body).toEqual(response.body);
  });

  it('should store every v2 field and merge updates', async () => {
    const first = await shop.save('category', {
      id: 'c2',
      name: 'Tables',
      url: 'https://shop.test/c2',
      visible: false,
      custom_attributes: [{ name: 'order', integer_value: 2 }],
      updated_at: at(7),
    });
    expect(first).toMatchObject({ url: 'https://shop.test/c2', visible: false, updated_at: at(7) });
    const second = await shop.save('category', { id: 'c2', name: 'Big tables', visible: null });
    expect(second).toMatchObject({
      name: 'Big tables',
      url: 'https://shop.test/c2',
      visible: null,
      custom_attributes: [{ name: 'order', integer_value: 2 }],
      created_at: first['created_at'],
    });
  });

  it('should create a stub parent for parent_category_id once the queue has drained', async () => {
    const saved = await shop.save('category', { id: 'child', name: 'Child', parent_category_id: 'parent' });
    expect(saved['parent_category_id']).toBe('parent');
    await env.drain();
    const parent = await shop.get('/categories/parent');
    expect(parent.status).toBe(200);
    expect(parent.body).toMatchObject({ id: 'parent', name: null, parent_category_id: null, product_ids: [], custom_attributes: [] });
    const audit = await auditOf(env, shop.lang, { kind: 'category', recordId: 'parent', account: shop.account });
    expect(audit.map((entry) => entry.action)).toEqual(['stub']);
  });

  it('should make a category top-level with parent_category_id null', async () => {
    await shop.save('category', { id: 'top', name: 'Top', parent_category_id: 'somewhere' });
    const saved = await shop.save('category', { id: 'top', name: 'Top', parent_category_id: null });
    expect(saved['parent_category_id']).toBeNull();
  });

  it('should refuse product_ids with 400 unknown_parameters pointing to the assignment endpoints', async () => {
    const response = await shop.put('category', { id: 'c1', name: 'Chairs', product_ids: ['p1'] });
    expect(response.status).toBe(400);
    expect(response.body.error.unknown_parameters).toEqual(['product_ids']);
    expect(response.body.error.message).toContain('/api/v2/languages/{language_id}/products/{product_id}/categories/{category_id}');
  });

  it.each([
    ['no body', undefined, 'missing_parameters', ['category']],
    ['no name', { category: { id: 'x' } }, 'missing_parameters', ['name']],
    ['neither id nor name', { category: {} }, 'missing_parameters', ['id', 'name']],
    ['a null name', { category: { id: 'x', name: null } }, 'missing_parameters', ['name']],
    ['an unknown field', { category: { id: 'x', name: 'n', colour: 1 } }, 'unknown_parameters', ['colour']],
    [
      'an integer parent_category_id',
      { category: { id: 'x', name: 'n', parent_category_id: 3 } },
      'invalid_parameters',
      ['parent_category_id'],
    ],
    ['an empty name', { category: { id: 'x', name: '' } }, 'invalid_parameters', ['name']],
    ['a bad url', { category: { id: 'x', name: 'n', url: 'nope' } }, 'invalid_parameters', ['url']],
    [
      'custom_attributes that are not an array',
      { category: { id: 'x', name: 'n', custom_attributes: {} } },
      'invalid_parameters',
      ['custom_attributes'],
    ],
  ])('should answer 400 for %s', async (_label, body, errorClass, names) => {
    const response = await shop.request('PUT', `/api/v2/languages/${shop.lang}/categories`, body);
    expect(response.status).toBe(400);
    expect(response.body.error[errorClass as string]).toEqual(names);
  });

  it('should answer 404 with the language body for an unknown language', async () => {
    const response = await shop.request('PUT', '/api/v2/languages/nope/categories', { category: { id: 'x', name: 'n' } });
    expect(response.status).toBe(404);
    expect(response.body).toEqual({ error: { message: "Language 'nope' not found" } });
  });
});

describe('when a category is read through v2', () => {
  let shop: Shop;
  beforeAll(async () => {
    shop = await openShop(env);
    await shop.save('category', { id: 'b', name: 'B', created_at: at(2) });
    await shop.save('category', { id: 'a', name: 'A', created_at: at(1) });
    await shop.v1('category', { id: 'b', name: 'B', product_ids: ['p2', 'p1'] });
    await env.drain();
  });

  it('should list the categories in created_at order with their current product_ids', async () => {
    const response = await shop.get('/categories');
    expect(response.status).toBe(200);
    expect(response.body.meta).toEqual({ current_page: 1, per_page: 10, total: 2, next_cursor: null });
    expect(ids(response.body.data)).toEqual(['a', 'b']);
    expect(response.body.data[0].product_ids).toEqual([]);
    expect(response.body.data[1].product_ids).toEqual(['p1', 'p2']);
  });

  it('should answer 404 {"error":"Category not found"} for a missing category', async () => {
    const response = await shop.get('/categories/missing');
    expect(response.status).toBe(404);
    expect(response.body).toEqual({ error: 'Category not found' });
  });
});

describe('when the products of a category are listed', () => {
  let shop: Shop;
  beforeAll(async () => {
    shop = await openShop(env);
    await shop.save('category', { id: 'c', name: 'C' });
    await shop.save('product', { id: 'p2', name: 'Second', url: 'https://shop.test/2', price: 2, created_at: at(2) });
    await shop.save('product', { id: 'p1', name: 'First', created_at: at(1) });
    await shop.save('product', { id: 'p3', name: 'Not in c', created_at: at(0) });
    for (const product of ['p1', 'p2']) {
      expect((await shop.request('PUT', `/api/v2/languages/${shop.lang}/products/${product}/categories/c`)).status).toBe(204);
    }
    await env.drain();
  });

  it('should list them as summaries: id, name, url, in created_at order', async () => {
    const response = await shop.get('/categories/c/products');
    expect(response.status).toBe(200);
    expect(response.body).toEqual({
      data: [
        { id: 'p1', name: 'First', url: null },
        { id: 'p2', name: 'Second', url: 'https://shop.test/2' },
      ],
      meta: { current_page: 1, per_page: 10, total: 2, next_cursor: null },
    });
  });

  it('should answer 404 {"error":"Category not found"} for a missing category', async () => {
    const response = await shop.get('/categories/none/products');
    expect(response.status).toBe(404);
    expect(response.body).toEqual({ error: 'Category not found' });
  });

  it('should drop a product deleted through v1 from the listing', async () => {
    expect((await shop.v1Delete('product', 'p2')).status).toBe(200);
    expect(ids((await shop.get('/categories/c/products')).body.data)).toEqual(['p1']);
    await env.drain();
    expect((await shop.get('/categories/c')).body.product_ids).toEqual(['p1']);
  });
});

describe('when a category is deleted through v2', () => {
  let shop: Shop;
  beforeAll(async () => {
    shop = await openShop(env);
    await shop.save('category', { id: 'parent', name: 'Parent' });
    await shop.save('category', { id: 'doomed', name: 'Doomed', parent_category_id: 'parent' });
    await shop.save('category', { id: 'kid', name: 'Kid', parent_category_id: 'doomed' });
    await shop.save('product', { id: 'p', name: 'P' });
    await env.drain();
    expect((await shop.request('PUT', `/api/v2/languages/${shop.lang}/products/p/categories/doomed`)).status).toBe(204);
    await env.drain();
  });

  it('should answer 204 with no body', async () => {
    const response = await shop.del('/categories/doomed');
    expect(response.status).toBe(204);
    expect(response.text).toBe('');
    expect((await shop.get('/categories/doomed')).status).toBe(404);
  });

  it('should remove its assignments and set its children top-level; parent and products stay', async () => {
    await env.drain();
    expect((await shop.get('/products/p')).body.category_ids).toEqual([]);
    expect((await shop.get('/categories/kid')).body.parent_category_id).toBeNull();
    expect((await shop.get('/categories/parent')).status).toBe(200);
    expect((await shop.get('/products/p')).status).toBe(200);
  });

  it('should answer 404 {"error":"Category not found"} the second time', async () => {
    const response = await shop.del('/categories/doomed');
    expect(response.status).toBe(404);
    expect(response.body).toEqual({ error: 'Category not found' });
  });

  it('should delete a v2-written category through v1', async () => {
    await shop.save('category', { id: 'v2-made', name: 'Made in v2', custom_attributes: [{ name: 'a', boolean_value: true }] });
    const response = await shop.v1Delete('category', 'v2-made');
    expect(response.status).toBe(200);
    expect(response.body.category).toMatchObject({ id: 'v2-made', name: 'Made in v2' });
    expect((await shop.get('/categories/v2-made')).status).toBe(404);
  });
});
