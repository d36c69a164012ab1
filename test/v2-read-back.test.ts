import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AnyZodObject } from 'zod';
import { page } from '../api/openapi/v2.openapi.js';
import { recordSchema, summaries } from '../api/openapi/v2-records.openapi.js';
import { startEnvironment, type TestEnvironment } from './support/harness.js';
import { langKeyOf } from './support/state.js';
import { at, ids, type KindName, openShop, SEGMENT, type Shop } from './support/v2-client.js';

/** interface §8.10 read-back: GET list and GET one of every kind, in the v1 field tables' shapes. */

let env: TestEnvironment;
let shop: Shop;

beforeAll(async () => {
  env = await startEnvironment();
  shop = await openShop(env);
  await shop.v1('brand', { id: 'b1', name: 'Acme', url: 'https://acme.test', content: 'About', created_at: at(1), updated_at: at(2) });
  await shop.v1('product', { id: 'p1', name: 'Chair', created_at: at(1) });
  await shop.v1('brand', { id: 'b1', name: 'Acme', product_ids: ['p1', 'p2'] });
  await shop.v1('variant', {
    id: 'v1',
    product_id: 'p1',
    title: 'Red',
    article_code: 'A-1',
    default: true,
    ean: '123',
    main_image: 'https://img.test/v1.jpg',
    price_cost: 1,
    price_excl: 2,
    price_incl: 2.42,
    unit_price: 0.5,
    unit_unit: 'kg',
    sku: 'S1',
    stock_level: 7,
    created_at: at(3),
    updated_at: at(4),
  });
  await shop.v1('review', {
    id: 'r1',
    product_id: 'p1',
    profile_id: 'u1',
    name: 'Nice',
    score: 5,
    visible: true,
    created_at: at(5),
    updated_at: at(6),
  });
  await shop.v1('profile', {
    id: 'u1',
    email: 'u1@example.test',
    first_name: 'Ann',
    last_name: 'Smith',
    city: 'Utrecht',
    gender: 'female',
    tags: ['vip'],
    subscribed_to_newsletter: true,
  });
  await shop.v1('order', {
    id: 'o1',
    profile_id: 'u1',
    products: [{ id: 'p1', quantity: 2 }],
    currency: 'EUR',
    number: 'N-1',
    price: 10,
    paid: true,
    status: 'shipped',
    ordered_at: at(7),
    shopping_cart_id: 'sc1',
    created_at: at(8),
  });
  await shop.v1('shopping_cart', {
    id: 'sc1',
    profile_id: 'u1',
    product_ids: ['p1'],
    currency: 'EUR',
    price: 10,
    recovery_url: 'https://shop.test/cart',
    created_at: at(9),
    updated_at: at(10),
  });
  await env.drain();
});
afterAll(async () => {
  await env.close();
});

const EXPECTED: Record<Exclude<KindName, 'product' | 'category'>, Record<string, unknown>> = {
  brand: {
    id: 'b1',
    name: 'Acme',
    url: 'https://acme.test',
    content: 'About',
    product_ids: ['p1', 'p2'],
    custom_attributes: [],
    created_at: at(1),
    updated_at: expect.any(String),
  },
  variant: {
    id: 'v1',
    product_id: 'p1',
    title: 'Red',
    article_code: 'A-1',
    default: true,
    ean: '123',
    main_image: 'https://img.test/v1.jpg',
    price_cost: 1,
    price_excl: 2,
    price_incl: 2.42,
    unit_price: 0.5,
    unit_unit: 'kg',
    sku: 'S1',
    stock_level: 7,
    url: null,
    old_price_excl: null,
    old_price_incl: null,
    custom_attributes: [],
    created_at: at(3),
    updated_at: at(4),
  },
  review: {
    id: 'r1',
    product_id: 'p1',
    profile_id: 'u1',
    name: 'Nice',
    description: null,
    score: 5,
    visible: true,
    custom_attributes: [],
    created_at: at(5),
    updated_at: at(6),
  },
  profile: {
    id: 'u1',
    email: 'u1@example.test',
    birthdate: null,
    city: 'Utrecht',
    province: null,
    street: null,
    housenumber: null,
    zipcode: null,
    country_code: null,
    first_name: 'Ann',
    middle_name: null,
    last_name: 'Smith',
    gender: 'female',
    active: null,
    subscribed_to_newsletter: true,
    subscribed_to_newsletter_at: null,
    tags: ['vip'],
    telephone: null,
    unsubscribed: null,
    double_opt_in: null,
    is_company: null,
    is_registered: null,
    company_name: null,
    custom_attributes: [],
  },
  order: {
    id: 'o1',
    profile_id: 'u1',
    products: [{ id: 'p1', quantity: 2, variant_id: null }],
    product_ids: ['p1'],
    currency: 'EUR',
    number: 'N-1',
    price: 10,
    paid: true,
    status: 'shipped',
    deliver_date: null,
    ordered_at: at(7),
    shopping_cart_id: 'sc1',
    checkout_id: null,
    discount_code: null,
    is_discount_applied: null,
    custom_attributes: [],
    created_at: at(8),
  },
  shopping_cart: {
    id: 'sc1',
    profile_id: 'u1',
    product_ids: ['p1'],
    currency: 'EUR',
    price: 10,
    recovery_url: 'https://shop.test/cart',
    recovery_token: null,
    deleted: null,
    custom_attributes: [],
    created_at: at(9),
    updated_at: at(10),
  },
};

const RESOURCE: Record<KindName, string> = {
  brand: 'Brand',
  category: 'Category',
  product: 'Product',
  variant: 'Variant',
  review: 'Review',
  profile: 'Profile',
  order: 'Order',
  shopping_cart: 'Shopping cart',
};

describe('when a record of any kind is read back', () => {
  it.each(Object.keys(EXPECTED) as Array<keyof typeof EXPECTED>)(
    'should show a %s in its v2 shape (the v1 field table and the v2 fields)',
    async (kind) => {
      const expected = EXPECTED[kind];
      const one = await shop.get(`/${SEGMENT[kind]}/${expected['id']}`);
      expect(one.status).toBe(200);
      expect(one.body).toEqual(expected);
      expect(Object.keys(one.body).sort()).toEqual(Object.keys(expected).sort());
    },
  );

  it.each(Object.keys(EXPECTED) as Array<keyof typeof EXPECTED>)('should list %s records with data and meta', async (kind) => {
    const list = await shop.get(`/${SEGMENT[kind]}`);
    expect(list.status).toBe(200);
    expect(list.body.meta).toMatchObject({ current_page: 1, per_page: 10, total: expect.any(Number) });
    const item = list.body.data.find((entry: { id: string }) => entry.id === EXPECTED[kind]['id']);
    const summary = { id: 'u1', email: 'u1@example.test', first_name: 'Ann', last_name: 'Smith' };
    expect(item).toEqual(kind === 'profile' ? summary : EXPECTED[kind]);
  });

  it('should list stubs like any other record', async () => {
    expect(ids((await shop.get('/products')).body.data)).toEqual(['p1', 'p2']);
    expect((await shop.get('/products/p2')).body).toMatchObject({ id: 'p2', name: null, brand_id: 'b1' });
    expect((await shop.get('/profiles')).body.meta.total).toBe(1);
  });

  it.each(Object.keys(RESOURCE) as KindName[])('should answer 404 "<Resource> not found" for a missing %s', async (kind) => {
    const response = await shop.get(`/${SEGMENT[kind]}/missing`);
    expect(response.status).toBe(404);
    expect(response.body).toEqual({ error: `${RESOURCE[kind]} not found` });
  });

  it('should answer 404 with the language body on every read of an unknown language', async () => {
    for (const path of ['/brands', '/brands/b1', '/profiles', '/profiles/u1', '/products/p1/variants', '/categories/c/products']) {
      const response = await shop.request('GET', `/api/v2/languages/unknown${path}`);
      expect(response.status, path).toBe(404);
      expect(response.body).toEqual({ error: { message: "Language 'unknown' not found" } });
    }
  });

  it('should answer 401 without a valid token', async () => {
    for (const path of ['/api/v2/languages', `/api/v2/languages/${shop.lang}/brands`, `/api/v2/languages/${shop.lang}/brands/b1`]) {
      const response = await env.request('GET', path, { token: 'not-a-token' });
      expect(response.status).toBe(401);
      expect(response.headers.get('www-authenticate')).toMatch(/^Bearer/);
    }
  });

  it('should not show another account anything, even with the same language id', async () => {
    const other = await openShop(env, shop.lang);
    for (const kind of Object.keys(EXPECTED) as Array<keyof typeof EXPECTED>) {
      expect((await other.get(`/${SEGMENT[kind]}/${EXPECTED[kind]['id']}`)).status).toBe(404);
      expect((await other.get(`/${SEGMENT[kind]}`)).body.meta.total).toBe(0);
    }
  });
});

describe('when v2 answers are checked against the API description', () => {
  const strict = (schema: unknown) => (schema as AnyZodObject).strict();
  it.each(['brand', 'category', 'product', 'variant', 'review', 'profile', 'order', 'shopping_cart'] as KindName[])(
    'should answer GET one and GET list of %s exactly as documented',
    async (kind) => {
      await shop.save('category', { id: 'doc-c', name: 'Documented', custom_attributes: [{ name: 'a', date_value: '2024-01-01' }] });
      await shop.save('product', { id: 'doc-p', custom_attributes: [{ name: 'a', integer_value: 1 }] });
      const list = await shop.get(`/${SEGMENT[kind]}`);
      const item = kind === 'profile' ? summaries.profile : recordSchema(kind);
      const parsedList = page(strict(item)).strict().safeParse(list.body);
      expect(parsedList.success, JSON.stringify(parsedList.error?.issues)).toBe(true);
      const one = await shop.get(`/${SEGMENT[kind]}/${list.body.data[0].id}`);
      const parsedOne = strict(recordSchema(kind)).safeParse(one.body);
      expect(parsedOne.success, JSON.stringify(parsedOne.error?.issues)).toBe(true);
    },
  );

  it('should answer the sub-listings exactly as documented', async () => {
    for (const [path, item] of [
      ['/products/p1/variants', summaries.variant],
      ['/products/doc-p/categories', summaries.category],
      ['/categories/doc-c/products', summaries.product],
    ] as const) {
      const parsed = page(strict(item))
        .strict()
        .safeParse((await shop.get(path)).body);
      expect(parsed.success, `${path} ${JSON.stringify(parsed.error?.issues)}`).toBe(true);
    }
  });
});

describe('when a brand is read back', () => {
  it('should show as product_ids the live products whose brand_id is the brand', async () => {
    await shop.save('product', { id: 'p3', brand_id: 'b1', created_at: at(0) });
    await shop.save('product', { id: 'p4', brand_id: 'b2' });
    expect((await shop.get('/brands/b1')).body.product_ids).toEqual(['p3', 'p1', 'p2']);
    expect((await shop.del('/products/p3')).status).toBe(204);
    expect((await shop.get('/brands/b1')).body.product_ids).toEqual(['p1', 'p2']);
    await env.drain();
    expect((await shop.get('/brands/b2')).body).toMatchObject({ name: null, product_ids: ['p4'] });
  });
});

describe('when a language is read back', () => {
  it('should show one language of the account, or 404', async () => {
    const response = await shop.request('GET', `/api/v2/languages/${shop.lang}`);
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ id: shop.lang, name: shop.lang, code: 'xx', active: null, url: null });
    const missing = await shop.request('GET', '/api/v2/languages/none');
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({ error: { message: "Language 'none' not found" } });
  });
});

describe('when records come and go', () => {
  it('should keep each list total equal to the number of live records', async () => {
    const counted = await openShop(env);
    const total = async (kind: KindName) => (await counted.get(`/${SEGMENT[kind]}`)).body.meta.total as number;
    const actual = async (kind: KindName) => {
      const key = await langKeyOf(env, counted.lang, counted.account);
      return Number(await env.db.oneFirst(sql.unsafe`SELECT count(*) FROM records WHERE lang_key = ${key} AND kind = ${kind} AND live`));
    };
    for (let index = 0; index < 30; index += 1) await counted.save('product', { id: `p${index}` });
    expect(await total('product')).toBe(30);
    for (let index = 0; index < 10; index += 1) expect((await counted.del(`/products/p${index}`)).status).toBe(204);
    expect(await total('product')).toBe(20);
    await counted.save('product', { id: 'p0', name: 'back again' });
    expect(await total('product')).toBe(21);
    await counted.v1('category', { id: 'c', name: 'C', product_ids: ['p100', 'p101'], parent_category_id: 'top' });
    await counted.v1('variant', { id: 'v', product_id: 'p102' });
    await env.drain();
    expect(await total('product')).toBe(24);
    expect(await total('category')).toBe(2);
    await counted.del('/products/p102');
    await env.drain();
    expect(await total('variant')).toBe(0);
    for (const kind of ['product', 'category', 'variant'] as const) expect(await total(kind)).toBe(await actual(kind));
    expect((await counted.request('DELETE', `/api/v1/languages/${counted.lang}`)).status).toBe(200);
    await counted.request('POST', '/api/v1/languages', { language: { id: counted.lang, name: 'again', code: 'xx' } });
    expect(await total('product')).toBe(0);
  });
});
