import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEnvironment, type TestEnvironment } from './support/harness.js';
import { auditOf, liveRecord } from './support/state.js';
import { type KindName, openShop, SEGMENT, type Shop } from './support/v2-client.js';

/** interface §13 and §14: PUT and DELETE of every record kind, their v2 shapes, stubs, audit, and v1 beside them. */

let env: TestEnvironment;
let shop: Shop;

beforeAll(async () => {
  env = await startEnvironment();
  shop = await openShop(env);
});
afterAll(async () => {
  await env.close();
});

const put = (kind: string, record: unknown) =>
  shop.request('PUT', `/api/v2/languages/${shop.lang}/${SEGMENT[kind as KindName]}`, { [kind]: record });

type Case = {
  kind: KindName;
  minimal: Record<string, unknown>;
  /** The v2 record of `minimal` (besides timestamps). */
  shape: Record<string, unknown>;
  full: Record<string, unknown>;
  required: string[];
  /** Stubs a PUT of `minimal` makes, as [kind, id]. */
  stubs: Array<[string, string]>;
};

const ATTRS = [{ name: 'colour', string_value: 'red' }];

const CASES: Case[] = [
  {
    kind: 'brand',
    minimal: { id: 'b1', name: 'Acme' },
    shape: { id: 'b1', name: 'Acme', url: null, content: null, custom_attributes: [], product_ids: [] },
    full: { id: 'b1', name: 'Acme', url: 'https://acme.test', content: 'About', custom_attributes: ATTRS },
    required: ['id', 'name'],
    stubs: [],
  },
  {
    kind: 'variant',
    minimal: { id: 'v1', product_id: 'vp' },
    shape: {
      id: 'v1',
      product_id: 'vp',
      title: null,
      article_code: null,
      default: null,
      ean: null,
      main_image: null,
      url: null,
      price_cost: null,
      price_excl: null,
      price_incl: null,
      old_price_excl: null,
      old_price_incl: null,
      unit_price: null,
      unit_unit: null,
      sku: null,
      stock_level: null,
      custom_attributes: [],
    },
    full: {
      id: 'v1',
      product_id: 'vp',
      title: 'Red',
      url: 'https://shop.test/v1',
      old_price_excl: 10,
      old_price_incl: 12.1,
      unit_price: 1,
      unit_unit: 'kg',
      custom_attributes: ATTRS,
    },
    required: ['id', 'product_id'],
    stubs: [['product', 'vp']],
  },
  {
    kind: 'review',
    minimal: { id: 'r1', product_id: 'rp', profile_id: 'ru' },
    shape: {
      id: 'r1',
      product_id: 'rp',
      profile_id: 'ru',
      name: null,
      description: null,
      score: null,
      visible: null,
      custom_attributes: [],
    },
    full: { id: 'r1', product_id: 'rp', profile_id: 'ru', description: 'Long text', score: 42, custom_attributes: ATTRS },
    required: ['id', 'product_id', 'profile_id'],
    stubs: [
      ['product', 'rp'],
      ['profile', 'ru'],
    ],
  },
  {
    kind: 'profile',
    minimal: { id: 'u1', email: 'U1@Example.test' },
    shape: {
      id: 'u1',
      email: 'U1@Example.test',
      birthdate: null,
      city: null,
      province: null,
      street: null,
      housenumber: null,
      zipcode: null,
      country_code: null,
      first_name: null,
      middle_name: null,
      last_name: null,
      gender: null,
      active: null,
      subscribed_to_newsletter: null,
      subscribed_to_newsletter_at: null,
      tags: null,
      telephone: null,
      unsubscribed: null,
      double_opt_in: null,
      is_company: null,
      is_registered: null,
      company_name: null,
      custom_attributes: [],
    },
    full: {
      id: 'u1',
      email: 'u1@example.test',
      unsubscribed: true,
      double_opt_in: false,
      is_company: true,
      is_registered: true,
      company_name: 'Acme BV',
      custom_attributes: ATTRS,
    },
    required: ['id', 'email'],
    stubs: [],
  },
  {
    kind: 'order',
    minimal: { id: 'o1', profile_id: 'ou', ordered_at: '2024-05-01T10:00:00Z' },
    shape: {
      id: 'o1',
      profile_id: 'ou',
      ordered_at: '2024-05-01T10:00:00.000Z',
      products: [],
      product_ids: [],
      currency: null,
      number: null,
      price: null,
      paid: null,
      status: null,
      deliver_date: null,
      shopping_cart_id: null,
      checkout_id: null,
      discount_code: null,
      is_discount_applied: null,
      custom_attributes: [],
    },
    full: {
      id: 'o1',
      profile_id: 'ou',
      ordered_at: '2024-05-01T10:00:00Z',
      products: [{ id: 'op1', quantity: 2, variant_id: 'ov1' }, { id: 'op2' }],
      status: 'pending',
      checkout_id: 'chk-9',
      shopping_cart_id: 'no-such-cart',
      discount_code: 'SPRING',
      is_discount_applied: true,
      custom_attributes: ATTRS,
    },
    required: ['id', 'profile_id', 'ordered_at'],
    stubs: [['profile', 'ou']],
  },
  {
    kind: 'shopping_cart',
    minimal: { id: 'c1', profile_id: 'cu' },
    shape: {
      id: 'c1',
      profile_id: 'cu',
      product_ids: [],
      currency: null,
      price: null,
      recovery_url: null,
      recovery_token: null,
      deleted: null,
      custom_attributes: [],
    },
    full: { id: 'c1', profile_id: 'cu', product_ids: ['cp1'], recovery_token: 'tok', deleted: true, price: 9.5, custom_attributes: ATTRS },
    required: ['id', 'profile_id'],
    stubs: [['profile', 'cu']],
  },
];

const TIMESTAMPS: Record<KindName, string[]> = {
  brand: ['created_at', 'updated_at'],
  category: ['created_at', 'updated_at'],
  product: ['created_at', 'updated_at'],
  variant: ['created_at', 'updated_at'],
  review: ['created_at', 'updated_at'],
  profile: [],
  order: ['created_at'],
  shopping_cart: ['created_at', 'updated_at'],
};

describe.each(CASES)('when a $kind is PUT through v2', (item) => {
  const path = () => `/${SEGMENT[item.kind]}/${item.minimal['id']}`;

  it('should create it with only the required fields and answer the same shape as GET one', async () => {
    const response = await put(item.kind, item.minimal);
    expect(response.status, response.text).toBe(200);
    const { created_at: _c, updated_at: _u, ...rest } = response.body;
    expect(rest).toEqual(item.shape);
    expect(Object.keys(response.body).filter((key) => key.endsWith('_at') && !(key in item.shape))).toEqual(TIMESTAMPS[item.kind]);
    expect((await shop.get(path())).body).toEqual(response.body);
  });

  it('should make the stubs of its references and audit a create, once drained', async () => {
    await env.drain();
    for (const [kind, id] of item.stubs) {
      expect(await liveRecord(env, shop.lang, kind as KindName, id, shop.account), `${kind} ${id}`).not.toBeNull();
      const audit = await auditOf(env, shop.lang, { kind, recordId: id, account: shop.account });
      expect(audit.map((entry) => entry.action)).toEqual(['stub']);
    }
    const own = await auditOf(env, shop.lang, { kind: item.kind, recordId: item.minimal['id'] as string, account: shop.account });
    expect(own.map((entry) => [entry.action, entry.actor])).toEqual([['create', expect.not.stringMatching(/^system$/)]]);
  });

  it('should merge an update: sent fields replace, omitted keep, and answer 200 again', async () => {
    const response = await put(item.kind, item.full);
    expect(response.status, response.text).toBe(200);
    const again = await put(item.kind, item.minimal);
    expect(again.status).toBe(200);
    for (const [field, value] of Object.entries(item.full)) {
      if (field === 'products' || field === 'email' || field === 'ordered_at') continue;
      expect(again.body[field], field).toEqual(value);
    }
    expect((await shop.get(path())).body).toEqual(again.body);
    await env.drain();
    const own = await auditOf(env, shop.lang, { kind: item.kind, recordId: item.minimal['id'] as string, account: shop.account });
    expect(own.map((entry) => entry.action)).toEqual(['create', 'update', 'update']);
  });

  it('should clear an optional field sent as null', async () => {
    const response = await put(item.kind, { ...item.minimal, custom_attributes: null });
    expect(response.body.custom_attributes).toEqual([]);
  });

  it.each(item.required)('should refuse a write without %s (400 missing_parameters)', async (field) => {
    const { [field]: _, ...body } = item.minimal;
    const response = await put(item.kind, body);
    expect(response.status).toBe(400);
    expect(response.body.error.missing_parameters).toEqual([field]);
  });

  it('should refuse an integer id (400 invalid_parameters)', async () => {
    const response = await put(item.kind, { ...item.minimal, id: 7 });
    expect(response.status).toBe(400);
    expect(response.body.error.invalid_parameters).toEqual(['id']);
  });

  it('should refuse an unknown field and a body with another key', async () => {
    expect((await put(item.kind, { ...item.minimal, colour: 'red' })).body.error.unknown_parameters).toEqual(['colour']);
    const other = await shop.request('PUT', `/api/v2/languages/${shop.lang}/${SEGMENT[item.kind]}`, {
      [item.kind]: item.minimal,
      extra: 1,
    });
    expect(other.body.error.unknown_parameters).toEqual(['extra']);
  });

  it('should check the language before the body', async () => {
    const response = await shop.request('PUT', `/api/v2/languages/nope/${SEGMENT[item.kind]}`, { [item.kind]: {} });
    expect(response.status).toBe(404);
    expect(response.body).toEqual({ error: { message: "Language 'nope' not found" } });
  });

  it('should delete it with 204 and an empty body, then answer 404 with its record body', async () => {
    const id = `${item.minimal['id']}-gone`;
    const email = item.kind === 'profile' ? { email: 'gone@example.test' } : {};
    expect((await put(item.kind, { ...item.minimal, ...email, id })).status).toBe(200);
    const deleted = await shop.del(`/${SEGMENT[item.kind]}/${id}`);
    expect(deleted.status).toBe(204);
    expect(deleted.text).toBe('');
    const again = await shop.del(`/${SEGMENT[item.kind]}/${id}`);
    expect(again.status).toBe(404);
    expect(again.body).toEqual({
      error: `${({ shopping_cart: 'Shopping cart' } as Record<string, string>)[item.kind] ?? item.kind[0]!.toUpperCase() + item.kind.slice(1)} not found`,
    });
    await env.drain();
    const audit = await auditOf(env, shop.lang, { kind: item.kind, recordId: id, account: shop.account });
    expect(audit.map((entry) => entry.action)).toEqual(['create', 'delete']);
  });

  it("should never show or change another account's record", async () => {
    const other = await openShop(env, shop.lang);
    const response = await other.request('GET', `/api/v2/languages/${shop.lang}${path()}`);
    expect(response.status).toBe(404);
    expect((await other.request('DELETE', `/api/v2/languages/${shop.lang}${path()}`)).status).toBe(404);
    expect((await shop.get(path())).status).toBe(200);
  });
});

describe('when a v2 write names a read-only field', () => {
  it.each([
    ['brand', { id: 'b9', name: 'B', product_ids: ['p'] }, 'product_ids', 'brand_id'],
    ['order', { id: 'o9', profile_id: 'u', ordered_at: '2024-01-01', product_ids: ['p'] }, 'product_ids', '/products/{product_id}'],
    ['product', { id: 'p9', relevant_product_ids: ['p'] }, 'relevant_product_ids', '/relevant_products/{relevant_id}'],
  ])('should refuse %s with unknown_parameters and a message naming the way to change it', async (kind, record, field, hint) => {
    const response = await put(kind, record);
    expect(response.status).toBe(400);
    expect(response.body.error.unknown_parameters).toEqual([field]);
    expect(response.body.error.message).toContain(hint);
  });
});

describe('when orders are written through v2', () => {
  it('should refuse a product in two lines, naming the repeat', async () => {
    const response = await put('order', {
      id: 'dup',
      profile_id: 'u',
      ordered_at: '2024-01-01',
      products: [{ id: 'p1' }, { id: 'p2' }, { id: 'p1', quantity: 3 }],
    });
    expect(response.status).toBe(400);
    expect(response.body.error.invalid_parameters).toEqual(['products[2].id']);
  });

  it('should show lines as {id, quantity, variant_id}, product_ids in line order, and stub each line product', async () => {
    const response = await put('order', {
      id: 'lines',
      profile_id: 'lu',
      ordered_at: '2024-01-01',
      products: [{ id: 'lp2', quantity: 1, variant_id: 'no-stub' }, { id: 'lp1' }],
    });
    expect(response.body.products).toEqual([
      { id: 'lp2', quantity: 1, variant_id: 'no-stub' },
      { id: 'lp1', quantity: null, variant_id: null },
    ]);
    expect(response.body.product_ids).toEqual(['lp2', 'lp1']);
    expect(response.body).not.toHaveProperty('updated_at');
    await env.drain();
    expect(await liveRecord(env, shop.lang, 'product', 'lp1', shop.account)).not.toBeNull();
    expect(await liveRecord(env, shop.lang, 'variant', 'no-stub', shop.account)).toBeNull();
  });

  it('should take any status of 1 to 64 characters in v2, keep the enumeration of interface §12.4 in v1, and keep a v2 status through a v1 write', async () => {
    expect((await put('order', { id: 'st', profile_id: 'u', ordered_at: '2024-01-01', status: 'pending' })).body.status).toBe('pending');
    expect((await put('order', { id: 'st', profile_id: 'u', ordered_at: '2024-01-01', status: 'x'.repeat(65) })).status).toBe(400);
    const v1Bad = await shop.request('POST', `/api/v1/languages/${shop.lang}/orders`, {
      order: { id: 'st', profile_id: 'u', products: [], status: 'pending' },
    });
    expect(v1Bad.status).toBe(400);
    expect(v1Bad.body.error.invalid_parameters).toEqual(['status']);
    const v1 = await shop.v1('order', { id: 'st', profile_id: 'u', products: [{ id: 'p1' }] });
    expect(v1.body.order.status).toBe('pending');
    expect(v1.body.order.products).toEqual([{ id: 'p1', quantity: null }]);
    expect((await shop.get('/orders/st')).body.status).toBe('pending');
  });
});

describe('when v1 meets v2-only fields', () => {
  it.each([
    ['brand', { id: 'vb', name: 'B', custom_attributes: [] }, ['custom_attributes']],
    ['variant', { id: 'vv', product_id: 'p', url: 'https://x.test' }, ['url']],
    ['review', { id: 'vr', product_id: 'p', profile_id: 'u', description: 'd' }, ['description']],
    ['profile', { id: 'vu', email: 'vu@example.test', is_company: true }, ['is_company']],
    ['order', { id: 'vo', profile_id: 'u', products: [], checkout_id: 'c' }, ['checkout_id']],
    ['order', { id: 'vo', profile_id: 'u', products: [{ id: 'p', variant_id: 'v' }] }, ['products[0].variant_id']],
    ['shopping_cart', { id: 'vc', profile_id: 'u', product_ids: [], deleted: true }, ['deleted']],
  ])('should refuse them in a v1 %s body (400 unknown_parameters)', async (kind, record, unknown) => {
    const response = await shop.request('POST', `/api/v1/languages/${shop.lang}/${SEGMENT[kind as KindName]}`, { [kind]: record });
    expect(response.status).toBe(400);
    expect(response.body.error.unknown_parameters).toEqual(unknown);
  });

  it('should neither show them in v1 answers nor lose them on a v1 write', async () => {
    await put('profile', { id: 'keep', email: 'keep@example.test', is_company: true, company_name: 'Acme', custom_attributes: ATTRS });
    const v1 = await shop.v1('profile', { id: 'keep', first_name: 'Kim' });
    expect(v1.body.profile).not.toHaveProperty('is_company');
    expect(v1.body.profile).not.toHaveProperty('custom_attributes');
    const lookup = await shop.request('GET', `/api/v1/languages/${shop.lang}/profiles?id=keep`);
    expect(lookup.body.profile).not.toHaveProperty('company_name');
    const v2 = (await shop.get('/profiles/keep')).body;
    expect(v2).toMatchObject({ first_name: 'Kim', is_company: true, company_name: 'Acme', custom_attributes: ATTRS });
    const deleted = await shop.v1Delete('profile', 'keep');
    expect(deleted.body.profile).not.toHaveProperty('is_company');
  });

  it('should match a v2 profile by email (case-insensitive) and keep its id', async () => {
    await put('profile', { id: 'first', email: 'match@example.test' });
    const response = await put('profile', { id: 'second', email: 'MATCH@example.test', first_name: 'Ann' });
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ id: 'first', email: 'MATCH@example.test', first_name: 'Ann' });
    expect((await shop.get('/profiles/second')).status).toBe(404);
  });

  it('should keep a flagged cart stored, listed and read', async () => {
    await put('shopping_cart', { id: 'flag', profile_id: 'u', deleted: true });
    expect((await shop.get('/shopping_carts/flag')).body.deleted).toBe(true);
    expect((await shop.all('/shopping_carts')).map((cart) => cart['id'])).toContain('flag');
  });
});

describe("when a client PUTs a record's own path (README, the v2 write shape)", () => {
  it('should answer 405 naming the allowed methods in Allow and in the message', async () => {
    const response = await shop.request('PUT', `/api/v2/languages/${shop.lang}/products/P-5`, { product: { id: 'P-5' } });
    expect(response.status).toBe(405);
    expect(response.headers.get('allow')).toMatch(/GET/);
    expect(response.headers.get('allow')).toMatch(/DELETE/);
    expect(response.body.error.message).toMatch(
      /^Method not allowed: this path allows .*GET.*DELETE|^Method not allowed: this path allows .*DELETE.*GET/,
    );
  });
});
