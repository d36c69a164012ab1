import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEnvironment, type TestEnvironment } from './support/harness.js';
import { auditOf, linksOf, liveRecord } from './support/state.js';
import { ids, openShop, type Shop } from './support/v2-client.js';

/** interface §15: order lines, cart products, brand products, relevant products and their writers. */

let env: TestEnvironment;
let shop: Shop;

beforeAll(async () => {
  env = await startEnvironment();
  shop = await openShop(env);
});
afterAll(async () => {
  await env.close();
});

const order = (id: string, products?: unknown[]) =>
  shop.request('PUT', `/api/v2/languages/${shop.lang}/orders`, {
    order: { id, profile_id: 'u1', ordered_at: '2024-01-01T00:00:00Z', ...(products ? { products } : {}) },
  });
const line = (orderId: string, productId: string, body?: unknown) =>
  shop.request('PUT', `/api/v2/languages/${shop.lang}/orders/${orderId}/products/${productId}`, body);

describe('when order lines are written one by one', () => {
  it('should append a line with quantity 1 unless sent, and stub the product', async () => {
    expect((await order('o1')).status).toBe(200);
    const first = await line('o1', 'p1');
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ order_id: 'o1', product_id: 'p1', quantity: 1, variant_id: null, custom_attributes: [] });
    const second = await line('o1', 'p2', { quantity: 3, variant_id: 'v2', custom_attributes: [{ name: 'gift', boolean_value: true }] });
    expect(second.body).toEqual({
      order_id: 'o1',
      product_id: 'p2',
      quantity: 3,
      variant_id: 'v2',
      custom_attributes: [{ name: 'gift', boolean_value: true }],
    });
    await env.drain();
    expect(await liveRecord(env, shop.lang, 'product', 'p1', shop.account)).not.toBeNull();
    expect(await liveRecord(env, shop.lang, 'variant', 'v2', shop.account)).toBeNull();
    const audit = await auditOf(env, shop.lang, { kind: 'order', recordId: 'o1', account: shop.account });
    expect(audit.map((entry) => entry.action)).toEqual(['create', 'update', 'update']);
  });

  it('should update a line in place: sent fields replace, omitted keep', async () => {
    const updated = await line('o1', 'p1', { variant_id: 'v1' });
    expect(updated.body).toMatchObject({ product_id: 'p1', quantity: 1, variant_id: 'v1' });
    const order = await shop.get('/orders/o1');
    expect(order.body.products).toEqual([
      { id: 'p1', quantity: 1, variant_id: 'v1' },
      { id: 'p2', quantity: 3, variant_id: 'v2' },
    ]);
    expect(order.body.product_ids).toEqual(['p1', 'p2']);
  });

  it('should list the lines with their custom attributes, in line order, paginated', async () => {
    const list = await shop.get('/orders/o1/products?per_page=1&page=2');
    expect(list.body).toEqual({
      data: [
        { order_id: 'o1', product_id: 'p2', quantity: 3, variant_id: 'v2', custom_attributes: [{ name: 'gift', boolean_value: true }] },
      ],
      meta: { current_page: 2, per_page: 1, total: 2 },
    });
    expect((await shop.get('/orders/o1/products?created_after=2024-01-01')).status).toBe(400);
  });

  it('should remove a line with 204, and answer 204 when there is none without writing', async () => {
    expect((await shop.del('/orders/o1/products/p1')).status).toBe(204);
    expect((await shop.del('/orders/o1/products/p1')).status).toBe(204);
    expect((await shop.get('/orders/o1')).body.product_ids).toEqual(['p2']);
    await env.drain();
    const audit = await auditOf(env, shop.lang, { kind: 'order', recordId: 'o1', account: shop.account });
    expect(audit.map((entry) => entry.action)).toEqual(['create', 'update', 'update', 'update', 'update']);
  });

  it("should keep one line, at the first one's place, where a v1 order repeats the product", async () => {
    await shop.v1('order', { id: 'rep', profile_id: 'u1', products: [{ id: 'a', quantity: 1 }, { id: 'b' }, { id: 'a', quantity: 5 }] });
    await line('rep', 'a', { quantity: 2 });
    expect((await shop.get('/orders/rep')).body.products).toEqual([
      { id: 'a', quantity: 2, variant_id: null },
      { id: 'b', quantity: null, variant_id: null },
    ]);
    await shop.v1('order', { id: 'rep', profile_id: 'u1', products: [{ id: 'a' }, { id: 'a' }] });
    await shop.del('/orders/rep/products/a');
    expect((await shop.get('/orders/rep')).body.products).toEqual([]);
  });

  it('should drop line custom attributes when the order is PUT with products', async () => {
    await order('o1', [{ id: 'p2', quantity: 3 }]);
    expect((await shop.get('/orders/o1/products')).body.data[0].custom_attributes).toEqual([]);
  });

  it('should answer 404 for a missing order, and 400 for a bad body', async () => {
    expect((await line('missing', 'p1')).body).toEqual({ error: 'Order not found' });
    expect((await shop.get('/orders/missing/products')).status).toBe(404);
    expect((await shop.del('/orders/missing/products/p1')).body).toEqual({ error: 'Order not found' });
    const bad = await line('o1', 'p1', { quantity: 'two' });
    expect(bad.status).toBe(400);
    expect(bad.body.error.invalid_parameters).toEqual(['quantity']);
    expect((await line('o1', 'p1', { colour: 1 })).body.error.unknown_parameters).toEqual(['colour']);
  });
});

describe('when cart products are written one by one', () => {
  it('should append with 204 unless present, list in cart order, remove with 204', async () => {
    await shop.request('PUT', `/api/v2/languages/${shop.lang}/shopping_carts`, { shopping_cart: { id: 'c1', profile_id: 'u1' } });
    for (const product of ['cp2', 'cp1', 'cp2']) {
      expect((await shop.request('PUT', `/api/v2/languages/${shop.lang}/shopping_carts/c1/products/${product}`)).status).toBe(204);
    }
    expect((await shop.get('/shopping_carts/c1')).body.product_ids).toEqual(['cp2', 'cp1']);
    expect((await shop.get('/shopping_carts/c1/products')).body).toEqual({
      data: [
        { shopping_cart_id: 'c1', product_id: 'cp2' },
        { shopping_cart_id: 'c1', product_id: 'cp1' },
      ],
      meta: { current_page: 1, per_page: 10, total: 2 },
    });
    expect((await shop.del('/shopping_carts/c1/products/cp2')).status).toBe(204);
    expect((await shop.del('/shopping_carts/c1/products/absent')).status).toBe(204);
    expect((await shop.get('/shopping_carts/c1')).body.product_ids).toEqual(['cp1']);
    await env.drain();
    expect(await liveRecord(env, shop.lang, 'product', 'cp2', shop.account)).not.toBeNull();
    const audit = await auditOf(env, shop.lang, { kind: 'shopping_cart', recordId: 'c1', account: shop.account });
    expect(audit.map((entry) => entry.action)).toEqual(['create', 'update', 'update', 'update', 'update']);
  });

  it('should answer 404 for a missing cart', async () => {
    const response = await shop.request('PUT', `/api/v2/languages/${shop.lang}/shopping_carts/none/products/p`);
    expect(response.body).toEqual({ error: 'Shopping cart not found' });
  });
});

describe('when a product is deleted', () => {
  it('should leave order lines and cart product_ids naming it as they are', async () => {
    await order('keep', [{ id: 'doomed', quantity: 1 }]);
    await shop.request('PUT', `/api/v2/languages/${shop.lang}/shopping_carts`, {
      shopping_cart: { id: 'keep', profile_id: 'u1', product_ids: ['doomed'] },
    });
    await env.drain();
    expect((await shop.del('/products/doomed')).status).toBe(204);
    await line('keep', 'other');
    await env.drain();
    expect((await shop.get('/orders/keep')).body.product_ids).toEqual(['doomed', 'other']);
    expect((await shop.get('/shopping_carts/keep')).body.product_ids).toEqual(['doomed']);
    // A later line write of another product does not bring the deleted product back.
    expect((await shop.get('/products/doomed')).status).toBe(404);
  });
});

describe('when products of a brand are listed', () => {
  it('should list whole v2 products whose brand_id is the brand, with timestamp filters', async () => {
    await shop.save('product', { id: 'bp2', name: 'Two', brand_id: 'br', created_at: '2024-01-02T00:00:00Z' });
    await shop.save('product', { id: 'bp1', name: 'One', brand_id: 'br', created_at: '2024-01-01T00:00:00Z' });
    await env.drain();
    const list = await shop.get('/brands/br/products');
    expect(ids(list.body.data)).toEqual(['bp1', 'bp2']);
    expect(list.body.data[0]).toMatchObject({ id: 'bp1', name: 'One', brand_id: 'br', category_ids: [], custom_attributes: [] });
    expect(ids((await shop.get('/brands/br/products?created_after=2024-01-01T12:00:00Z')).body.data)).toEqual(['bp2']);
    expect((await shop.get('/brands/none/products')).body).toEqual({ error: 'Brand not found' });
  });
});

describe('when related products are linked through v2', () => {
  it('should add a one-way link with 204, list whole products, and remove it', async () => {
    await shop.save('product', { id: 'r1', name: 'R1' });
    await shop.save('product', { id: 'r2', name: 'R2' });
    const path = '/products/r1/relevant_products/r2';
    expect((await shop.request('PUT', `/api/v2/languages/${shop.lang}${path}`)).status).toBe(204);
    expect((await shop.request('PUT', `/api/v2/languages/${shop.lang}${path}`)).status).toBe(204);
    await env.drain();
    expect((await shop.get('/products/r1')).body.relevant_product_ids).toEqual(['r2']);
    expect((await shop.get('/products/r2')).body.relevant_product_ids).toEqual([]);
    expect(ids((await shop.get('/products/r1/relevant_products')).body.data)).toEqual(['r2']);
    expect((await shop.get('/products/r1/relevant_products')).body.data[0]).toMatchObject({ id: 'r2', name: 'R2' });
    expect((await shop.del(path)).status).toBe(204);
    expect((await shop.del(path)).status).toBe(204);
    await env.drain();
    expect(await linksOf(env, shop.lang, 'relevant', shop.account)).toEqual([]);
    const audit = await auditOf(env, shop.lang, { kind: 'product', recordId: 'r1', account: shop.account });
    expect(audit.map((entry) => [entry.action, entry.changes])).toEqual([
      ['create', { name: 'R1' }],
      ['link', { relevant_product_ids: 'r2' }],
      ['unlink', { relevant_product_ids: 'r2' }],
    ]);
  });

  it('should answer 404 when either product is missing, and make no stub', async () => {
    expect((await shop.request('PUT', `/api/v2/languages/${shop.lang}/products/r1/relevant_products/ghost`)).body).toEqual({
      error: 'Product not found',
    });
    expect((await shop.request('DELETE', `/api/v2/languages/${shop.lang}/products/ghost/relevant_products/r1`)).body).toEqual({
      error: 'Product not found',
    });
    expect((await shop.get('/products/ghost/relevant_products')).status).toBe(404);
    await env.drain();
    expect(await liveRecord(env, shop.lang, 'product', 'ghost', shop.account)).toBeNull();
  });
});

describe('when another account uses the same language id', () => {
  it('should see none of these lines and links', async () => {
    const other = await openShop(env, shop.lang);
    expect((await other.get('/orders/o1/products')).status).toBe(404);
    expect((await other.request('PUT', `/api/v2/languages/${shop.lang}/orders/o1/products/p9`)).body).toEqual({ error: 'Order not found' });
    expect((await other.request('PUT', `/api/v2/languages/${shop.lang}/products/r1/relevant_products/r2`)).status).toBe(404);
  });
});
