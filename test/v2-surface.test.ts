import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type HttpResponse, startEnvironment, type TestEnvironment } from './support/harness.js';
import { auditOf, liveRecord } from './support/state.js';
import { ids, openShop, SEGMENT, type Shop } from './support/v2-client.js';

/*
 * interface §13-21, rule by rule, where the files per topic (v2-kinds,
 * v2-sub-resources, v2-account-data, v2-pagination, ...) leave a rule
 * untested: every v2 operation of the served document (401, 405, 413, 415,
 * tenancy), every new list, every v2-only field against v1, ids, validation
 * order and timestamps of every kind, the cascades of a v2 delete of every
 * kind with their audit entries, and the edges of sections 2 to 8.
 */

let env: TestEnvironment;
let shop: Shop;

beforeAll(async () => {
  env = await startEnvironment();
  shop = await openShop(env);
});
afterAll(async () => {
  await env?.close();
});

/** The collection a v2 body key is PUT on. */
const COLLECTION: Record<string, string> = { ...SEGMENT, global_unsubscribe: 'global_unsubscribes', purchase_event: 'purchase_events' };

const putIn = (target: Shop, key: string, record: unknown) =>
  target.request('PUT', `/api/v2/languages/${encodeURIComponent(target.lang)}/${COLLECTION[key]}`, { [key]: record });

async function save(target: Shop, key: string, record: Record<string, unknown>): Promise<Record<string, any>> {
  const response = await putIn(target, key, record);
  if (response.status !== 200) throw new Error(`PUT ${key}: ${response.status} ${response.text}`);
  return response.body;
}

async function ok(response: Promise<HttpResponse>, status = 204): Promise<HttpResponse> {
  const answer = await response;
  if (answer.status !== status) throw new Error(`expected ${status}: ${answer.status} ${answer.text}`);
  return answer;
}

const languageNotFound = (id: string) => ({ error: { message: `Language '${id}' not found` } });

/**
 * A small shop with one record of every kind and every relation between
 * them: brand B; categories CP > C > CC; products P (brand B, in C, related
 * to P2) and P2 (in C, related to P); variants V (of P) and V2 (of P2);
 * profile U; review R (of P by U); order O (of U: lines P with variant V and
 * P2); cart S (of U: P, P2); the purchase event of O; an unsubscribe of U's
 * email. Drained.
 */
async function buildShop(target: Shop): Promise<void> {
  const lang = `/api/v2/languages/${encodeURIComponent(target.lang)}`;
  await save(target, 'brand', { id: 'B', name: 'Acme', custom_attributes: [{ name: 'tier', string_value: 'gold' }] });
  await save(target, 'category', { id: 'CP', name: 'Top' });
  await save(target, 'category', { id: 'C', name: 'Shoes', parent_category_id: 'CP' });
  await save(target, 'category', { id: 'CC', name: 'Boots', parent_category_id: 'C' });
  await save(target, 'product', { id: 'P', name: 'Boot', brand_id: 'B', price: 89.5 });
  await save(target, 'product', { id: 'P2', name: 'Sock', price: 5 });
  for (const product of ['P', 'P2']) await ok(target.request('PUT', `${lang}/products/${product}/categories/C`));
  await ok(target.request('PUT', `${lang}/products/P/relevant_products/P2`));
  await ok(target.request('PUT', `${lang}/products/P2/relevant_products/P`));
  await save(target, 'variant', { id: 'V', product_id: 'P', title: '42', url: 'https://shop.test/v' });
  await save(target, 'variant', { id: 'V2', product_id: 'P2', title: 'One size' });
  await save(target, 'profile', { id: 'U', email: 'u@example.test', first_name: 'Ann' });
  await save(target, 'review', { id: 'R', product_id: 'P', profile_id: 'U', score: 5, description: 'Warm' });
  await save(target, 'order', {
    id: 'O',
    profile_id: 'U',
    ordered_at: '2024-05-01T10:00:00Z',
    shopping_cart_id: 'S',
    products: [{ id: 'P', quantity: 1, variant_id: 'V', custom_attributes: [{ name: 'gift', boolean_value: true }] }, { id: 'P2' }],
  });
  await save(target, 'shopping_cart', { id: 'S', profile_id: 'U', product_ids: ['P', 'P2'] });
  await save(target, 'purchase_event', { order_id: 'O', profile_id: 'U', visitor_token: 'visitor-1' });
  await save(target, 'global_unsubscribe', { email: 'u@example.test', unsubscribed: true });
  await env.drain();
}

/** Every read of the shop built by buildShop, by path under the language. */
const SHOP_READS = [
  '/brands/B',
  '/categories/CP',
  '/categories/C',
  '/categories/CC',
  '/products/P',
  '/products/P2',
  '/variants/V',
  '/variants/V2',
  '/profiles/U',
  '/reviews/R',
  '/orders/O',
  '/orders/O/products',
  '/shopping_carts/S',
  '/shopping_carts/S/products',
  '/purchase_events/O',
  '/global_unsubscribes',
  '/brands/B/products',
  '/products/P/relevant_products',
  '/products/P/variants',
  '/products/P/categories',
  '/categories/C/products',
];

/** path -> [status, body] of every read of the shop. */
async function snapshot(target: Shop): Promise<Record<string, [number, unknown]>> {
  const result: Record<string, [number, unknown]> = {};
  for (const path of SHOP_READS) {
    const response = await target.get(path);
    result[path] = [response.status, response.body];
  }
  return result;
}

describe('when every v2 operation of the API description is called (interface §13.1, §21)', () => {
  type Operation = { method: string; template: string; operationId: string; json: boolean; ndjson: boolean };
  let operations: Operation[] = [];
  let jobId = '';
  let owner: Shop;

  beforeAll(async () => {
    const document = (await env.request('GET', '/openapi.json')).body;
    operations = Object.entries<Record<string, any>>(document.paths)
      .filter(([template]) => template.startsWith('/api/v2/'))
      .flatMap(([template, item]) =>
        Object.entries<any>(item)
          .filter(([method]) => ['get', 'put', 'post', 'delete'].includes(method))
          .map(([method, operation]) => ({
            method: method.toUpperCase(),
            template,
            operationId: operation.operationId as string,
            json: Boolean(operation.requestBody?.content?.['application/json']),
            ndjson: Boolean(operation.requestBody?.content?.['application/x-ndjson']),
          })),
      );
    owner = await openShop(env);
    await buildShop(owner);
    const bulk = await env.request('POST', `/api/v2/languages/${owner.lang}/bulk`, {
      token: owner.token,
      raw: '{"brand":{"id":"B","name":"Acme"}}\n',
      headers: { 'content-type': 'application/x-ndjson' },
    });
    expect(bulk.status, bulk.text).toBe(202);
    jobId = bulk.body.id;
    await env.drain();
  });

  /** The record a path parameter names, from the segment before it. */
  const ID_AFTER: Record<string, string> = {
    brands: 'B',
    categories: 'C',
    products: 'P',
    relevant_products: 'P2',
    variants: 'V',
    reviews: 'R',
    profiles: 'U',
    orders: 'O',
    shopping_carts: 'S',
    purchase_events: 'O',
    // The account's webhooks and their deliveries are not in a language: their paths name ids of their own.
    webhooks: 'W',
    deliveries: '1',
    // An erasure is named by the id the service gave it; none of the account's own is needed to check the paths.
    erasures: '00000000-0000-4000-8000-000000000000',
  };

  const pathOf = (template: string, language: string) => {
    const segments = template.split('/');
    return segments
      .map((segment, index) => {
        if (!segment.startsWith('{')) return segment;
        if (segment === '{language_id}') return encodeURIComponent(language);
        const before = segments[index - 1]!;
        return before === 'bulk' ? jobId : ID_AFTER[before]!;
      })
      .join('/');
  };

  /** A body the owner's request would be accepted with. */
  const BODIES: Record<string, unknown> = {
    v2SaveLanguage: { language: { id: 'other' } },
    v2SaveCustomAttribute: { custom_attribute: { name: 'Tier', description: 'd', datatype: 'string', resource: 'brand' } },
    v2SaveBrand: { brand: { id: 'B', name: 'Changed' } },
    v2SaveCategory: { category: { id: 'C', name: 'Changed' } },
    v2SaveProduct: { product: { id: 'P', name: 'Changed' } },
    v2SaveVariant: { variant: { id: 'V', product_id: 'P', title: 'Changed' } },
    v2SaveReview: { review: { id: 'R', product_id: 'P', profile_id: 'U', score: 1 } },
    v2SaveProfile: { profile: { id: 'U', email: 'u@example.test', first_name: 'Changed' } },
    v2SaveOrder: { order: { id: 'O', profile_id: 'U', ordered_at: '2024-05-02T10:00:00Z' } },
    v2SaveShoppingCart: { shopping_cart: { id: 'S', profile_id: 'U', product_ids: [] } },
    v2SaveGlobalUnsubscribe: { global_unsubscribe: { email: 'u@example.test', unsubscribed: false } },
    v2SavePurchaseEvent: { purchase_event: { order_id: 'O', profile_id: 'U', visitor_token: 'changed' } },
    v2PutOrderLine: { quantity: 9 },
    v2SaveWebhook: { webhook: { id: 'W', url: 'https://hooks.example.com/commerce' } },
    v2CreateErasure: { erasure: { email: 'nobody@example.test' } },
  };

  const call = (operation: Operation, token: string | null, language = owner.lang) =>
    operation.ndjson
      ? env.request(operation.method, pathOf(operation.template, language), {
          token,
          raw: '{"brand":{"id":"B","name":"Changed"}}\n',
          headers: { 'content-type': 'application/x-ndjson' },
        })
      : env.request(operation.method, pathOf(operation.template, language), { token, body: BODIES[operation.operationId] });

  const languageScoped = () => operations.filter((operation) => operation.template.startsWith('/api/v2/languages/{language_id}'));

  it('should know every operation it calls (a new operation needs a row here)', () => {
    expect(operations.length).toBeGreaterThan(50);
    for (const operation of operations.filter((item) => item.json))
      expect(BODIES, operation.operationId).toHaveProperty(operation.operationId);
  });

  it("should show the owner every record its reads name (so the other accounts' 404s below mean something)", async () => {
    for (const operation of languageScoped().filter((item) => item.method === 'GET')) {
      const response = await call(operation, owner.token);
      expect(response.status, `${operation.operationId} ${response.text}`).toBe(200);
    }
  });

  it('should answer 401 with a Bearer challenge on every operation without a token', async () => {
    for (const operation of operations) {
      const response = await call(operation, null);
      expect(response.status, operation.operationId).toBe(401);
      expect(response.body, operation.operationId).toEqual({ error: expect.stringContaining('/oauth/token') });
      expect(response.headers.get('www-authenticate'), operation.operationId).toMatch(/^Bearer/);
    }
  });

  it("should answer 404 with the language body on every path of another account's language, and change nothing", async () => {
    const before = await snapshot(owner);
    const stranger = await openShop(env);
    for (const operation of languageScoped()) {
      const response = await call(operation, stranger.token);
      expect(response.status, operation.operationId).toBe(404);
      expect(response.body, operation.operationId).toEqual(languageNotFound(owner.lang));
    }
    await env.drain();
    expect(await snapshot(owner)).toEqual(before);
  });

  it('should neither show nor change any record or line to an account with a language of the same id', async () => {
    const before = await snapshot(owner);
    const twin = await openShop(env, owner.lang);
    for (const operation of languageScoped().filter((item) =>
      /\{(record_id|parent_id|brand_id|product_id|category_id|job_id)\}/.test(item.template),
    )) {
      // The twin's own writes (its PUTs create records in its own language) are never the owner's.
      if (operation.method === 'PUT' && !/\{parent_id\}|\{other_id\}/.test(operation.template)) continue;
      const response = await call(operation, twin.token);
      expect(response.status, `${operation.operationId} ${response.text}`).toBe(404);
      expect(JSON.stringify(response.body), operation.operationId).not.toContain('Acme');
    }
    for (const list of ['/brands', '/products', '/orders', '/global_unsubscribes', '/purchase_events', '/bulk']) {
      expect((await twin.get(list)).body.meta.total, list).toBe(0);
    }
    await env.drain();
    expect(await snapshot(owner)).toEqual(before);
  });

  it('should answer 405 naming the allowed methods, in Allow and in the message, for every other method of every v2 path', async () => {
    const paths = new Map<string, Set<string>>();
    for (const operation of operations) paths.set(operation.template, (paths.get(operation.template) ?? new Set()).add(operation.method));
    for (const [template, methods] of paths) {
      for (const method of ['GET', 'PUT', 'POST', 'DELETE', 'PATCH'].filter((name) => !methods.has(name))) {
        const response = await env.request(method, pathOf(template, owner.lang), {
          token: owner.token,
          body: method === 'GET' ? undefined : {},
        });
        const where = `${method} ${template}`;
        expect(response.status, where).toBe(405);
        const allow = (response.headers.get('allow') ?? '').split(',').map((name) => name.trim());
        for (const documented of methods) expect(allow, where).toContain(documented);
        expect(allow, where).not.toContain(method);
        // HEAD comes with GET; the message names the methods a client writes.
        const named = allow.filter((name) => name !== 'HEAD').join(', ');
        expect(response.body, where).toEqual({ error: { message: `Method not allowed: this path allows ${named}` } });
      }
    }
  });

  it('should answer 415 for a body that is not JSON, 413 over 1 MiB and 400 for malformed JSON on every JSON write', async () => {
    const big = JSON.stringify({ x: 'x'.repeat(1024 * 1024) });
    for (const operation of operations.filter((item) => item.json)) {
      const path = pathOf(operation.template, owner.lang);
      const send = (raw: string, contentType: string) =>
        env.request(operation.method, path, { token: owner.token, raw, headers: { 'content-type': contentType } });
      const notJson = await send(JSON.stringify(BODIES[operation.operationId]), 'text/plain');
      expect(notJson.status, operation.operationId).toBe(415);
      expect(notJson.body.error, operation.operationId).toBeDefined();
      expect((await send(big, 'application/json')).status, operation.operationId).toBe(413);
      const malformed = await send('{"x":', 'application/json');
      expect(malformed.status, operation.operationId).toBe(400);
      expect(malformed.body, operation.operationId).toEqual({ error: { message: expect.any(String) } });
    }
  });
});

describe('when the lists of interface §13-21 are paged and filtered (interface §13.7, §15-18)', () => {
  let owner: Shop;
  const lists: Array<[string, () => string, boolean]> = [
    ['global unsubscribes', () => `/api/v2/languages/${owner.lang}/global_unsubscribes`, true],
    ['purchase events', () => `/api/v2/languages/${owner.lang}/purchase_events`, true],
    ['products of a brand', () => `/api/v2/languages/${owner.lang}/brands/B/products`, true],
    ['relevant products', () => `/api/v2/languages/${owner.lang}/products/P/relevant_products`, true],
    ['order lines', () => `/api/v2/languages/${owner.lang}/orders/O/products`, false],
    ['cart products', () => `/api/v2/languages/${owner.lang}/shopping_carts/S/products`, false],
    ['attribute definitions', () => '/api/v2/custom_attributes', false],
    ['bulk jobs', () => `/api/v2/languages/${owner.lang}/bulk`, false],
  ];

  beforeAll(async () => {
    owner = await openShop(env);
    await buildShop(owner);
    await save(owner, 'product', { id: 'P3', name: 'Lace', brand_id: 'B' });
    await ok(owner.request('PUT', `/api/v2/languages/${owner.lang}/products/P/relevant_products/P3`));
    await save(owner, 'global_unsubscribe', { email: 'z@example.test', unsubscribed: false });
    await save(owner, 'order', { id: 'O2', profile_id: 'U', ordered_at: '2024-05-03T10:00:00Z' });
    await save(owner, 'purchase_event', { order_id: 'O2', profile_id: 'U', visitor_token: 'visitor-2' });
    for (const name of ['Tier', 'Size'])
      await ok(
        owner.request('PUT', '/api/v2/custom_attributes', {
          custom_attribute: { name, description: name, datatype: 'string', resource: 'product' },
        }),
        200,
      );
    for (let job = 0; job < 2; job += 1)
      await ok(
        env.request('POST', `/api/v2/languages/${owner.lang}/bulk`, {
          token: owner.token,
          raw: `{"brand":{"id":"B${job}","name":"B"}}\n`,
          headers: { 'content-type': 'application/x-ndjson' },
        }),
        202,
      );
    await env.drain();
  });

  describe.each(lists)('when the %s are listed', (_label, path, timestamped) => {
    const get = (query: string) => owner.request('GET', `${path()}?${query}`);

    it('should page them with data and meta, every item once whatever the page size', async () => {
      const all = await get('per_page=250');
      expect(all.status, all.text).toBe(200);
      const total = all.body.meta.total as number;
      expect(total).toBeGreaterThanOrEqual(2);
      expect(all.body.data).toHaveLength(total);
      const walked: unknown[] = [];
      for (let page = 1; page <= total + 1; page += 1) {
        const one = await get(`page=${page}&per_page=1`);
        expect(one.body.meta).toMatchObject({ current_page: page, per_page: 1, total });
        walked.push(...one.body.data);
      }
      expect(walked).toEqual(all.body.data);
      expect((await get('')).body.meta).toMatchObject({ current_page: 1, per_page: 10, total });
    });

    it.each([
      ['per_page=251', 'invalid_parameters', ['per_page']],
      ['per_page=0', 'invalid_parameters', ['per_page']],
      ['page=0', 'invalid_parameters', ['page']],
      ['page=x', 'invalid_parameters', ['page']],
      ['colour=red', 'unknown_parameters', ['colour']],
    ])('should refuse %s (400 %s)', async (query, errorClass, names) => {
      const response = await get(query);
      expect(response.status).toBe(400);
      expect(response.body.error[errorClass]).toEqual(names);
    });

    it.each(['created_after', 'created_before', 'updated_after', 'updated_before'])(
      timestamped ? 'should filter by %s, strictly' : 'should refuse %s: its items have no timestamps (400 unknown_parameters)',
      async (filter) => {
        if (!timestamped) {
          const response = await get(`${filter}=2024-01-01T00:00:00Z`);
          expect(response.status).toBe(400);
          expect(response.body.error.unknown_parameters).toEqual([filter]);
          return;
        }
        const all = (await get('per_page=250')).body.data as Array<Record<string, string>>;
        const field = filter.startsWith('created') ? 'created_at' : 'updated_at';
        const pivot = all[0]![field]!;
        const after = filter.endsWith('after');
        const expected = all.filter((item) => (after ? item[field]! > pivot : item[field]! < pivot));
        const filtered = await get(`per_page=250&${filter}=${encodeURIComponent(pivot)}`);
        expect(filtered.status).toBe(200);
        expect(filtered.body.data).toEqual(expected);
        expect(filtered.body.meta.total).toBe(expected.length);
        expect((await get(`${filter}=yesterday`)).body.error.invalid_parameters).toEqual([filter]);
      },
    );
  });

  it('should order global unsubscribes by created_at, then profile_email, and purchase events by created_at, then order_id', async () => {
    const entries = (await owner.get('/global_unsubscribes')).body.data as Array<Record<string, string>>;
    const sortedBy = (items: Array<Record<string, string>>, key: string) =>
      [...items].sort((x, y) =>
        x['created_at'] === y['created_at'] ? (x[key]! < y[key]! ? -1 : 1) : x['created_at']! < y['created_at']! ? -1 : 1,
      );
    expect(entries.map((entry) => entry['profile_email'])).toEqual(['u@example.test', 'z@example.test']);
    expect(entries).toEqual(sortedBy(entries, 'profile_email'));
    const events = (await owner.get('/purchase_events')).body.data as Array<Record<string, string>>;
    expect(events.map((event) => event['order_id'])).toEqual(['O', 'O2']);
    expect(events).toEqual(sortedBy(events, 'order_id'));
  });

  it("should list a brand's live products and a product's related products as whole v2 products", async () => {
    const brand = (await owner.get('/brands/B/products')).body.data;
    expect(ids(brand)).toEqual(['P', 'P3']);
    expect(brand[0]).toEqual((await owner.get('/products/P')).body);
    await ok(owner.del('/products/P3'));
    await env.drain();
    expect(ids((await owner.get('/brands/B/products')).body.data)).toEqual(['P']);
    expect(ids((await owner.get('/products/P/relevant_products')).body.data)).toEqual(['P2']);
    expect((await owner.get('/products/P/relevant_products')).body.data[0]).toEqual((await owner.get('/products/P2')).body);
  });
});

const ATTRS = [{ name: 'colour', string_value: 'red' }];

describe('when v1 meets every v2-only field (interface §13.6)', () => {
  type Row = { kind: string; v2: Record<string, unknown>; v1: Record<string, unknown>; only: string[] };
  const ROWS: Row[] = [
    { kind: 'brand', v2: { id: 'b', name: 'B', custom_attributes: ATTRS }, v1: { id: 'b', name: 'B1' }, only: ['custom_attributes'] },
    {
      kind: 'category',
      v2: { id: 'c', name: 'C', custom_attributes: ATTRS },
      v1: { id: 'c', name: 'C1' },
      only: ['custom_attributes'],
    },
    {
      kind: 'product',
      v2: { id: 'p', name: 'P', brand_id: 'b', custom_attributes: ATTRS },
      v1: { id: 'p', name: 'P1' },
      only: ['brand_id', 'custom_attributes'],
    },
    {
      kind: 'variant',
      v2: { id: 'v', product_id: 'p', url: 'https://shop.test/v', old_price_excl: 10, old_price_incl: 12.1, custom_attributes: ATTRS },
      v1: { id: 'v', product_id: 'p', title: 'V1' },
      only: ['url', 'old_price_excl', 'old_price_incl', 'custom_attributes'],
    },
    {
      kind: 'review',
      v2: { id: 'r', product_id: 'p', profile_id: 'u', description: 'Long', custom_attributes: ATTRS },
      v1: { id: 'r', product_id: 'p', profile_id: 'u', name: 'R1' },
      only: ['description', 'custom_attributes'],
    },
    {
      kind: 'profile',
      v2: {
        id: 'u',
        email: 'u@example.test',
        unsubscribed: true,
        double_opt_in: true,
        is_company: true,
        is_registered: false,
        company_name: 'Acme',
        custom_attributes: ATTRS,
      },
      // With its email: a v1 profile write needs it unless the profile exists (interface §4.5).
      v1: { id: 'u', first_name: 'Ann', email: 'u@example.test' },
      only: ['unsubscribed', 'double_opt_in', 'is_company', 'is_registered', 'company_name', 'custom_attributes'],
    },
    {
      kind: 'order',
      v2: {
        id: 'o',
        profile_id: 'u',
        ordered_at: '2024-05-01T00:00:00Z',
        checkout_id: 'chk',
        discount_code: 'SPRING',
        is_discount_applied: true,
        custom_attributes: ATTRS,
      },
      v1: { id: 'o', profile_id: 'u', products: [{ id: 'p', quantity: 1 }], number: 'N1' },
      only: ['checkout_id', 'discount_code', 'is_discount_applied', 'custom_attributes'],
    },
    {
      kind: 'shopping_cart',
      v2: { id: 's', profile_id: 'u', recovery_token: 'tok', deleted: true, custom_attributes: ATTRS },
      v1: { id: 's', profile_id: 'u', product_ids: ['p'], currency: 'EUR' },
      only: ['recovery_token', 'deleted', 'custom_attributes'],
    },
  ];
  const v1Path = (kind: string) => `/api/v1/languages/${shop.lang}/${COLLECTION[kind]}`;

  describe.each(ROWS)('when a $kind is written through both', (row) => {
    it.each(row.only)('should refuse %s in a v1 body (400 unknown_parameters)', async (field) => {
      const response = await shop.request('POST', v1Path(row.kind), { [row.kind]: { ...row.v1, [field]: row.v2[field] } });
      expect(response.status, response.text).toBe(400);
      expect(response.body.error, response.text).toHaveProperty('unknown_parameters');
      expect(response.body.error.unknown_parameters).toEqual([field]);
    });

    it('should keep the v2-only values through a v1 write, and never show them in v1 answers', async () => {
      await save(shop, row.kind, row.v2);
      const written = await shop.request('POST', v1Path(row.kind), { [row.kind]: row.v1 });
      expect(written.status, written.text).toBe(200);
      for (const field of row.only) expect(written.body[row.kind], field).not.toHaveProperty(field);
      const v2 = (await shop.get(`/${COLLECTION[row.kind]}/${row.v2['id']}`)).body;
      for (const field of row.only) expect(v2[field], field).toEqual(row.v2[field]);
      const [changed] = Object.entries(row.v1).filter(
        ([field]) => !['id', 'profile_id', 'product_id', 'products', 'product_ids'].includes(field),
      );
      expect(v2[changed![0]]).toEqual(changed![1]);
      const deleted = await shop.request('DELETE', `${v1Path(row.kind)}/${row.v2['id']}`);
      expect(deleted.status).toBe(200);
      for (const field of row.only) expect(deleted.body[row.kind], field).not.toHaveProperty(field);
    });
  });

  it("should refuse a v2 order line's variant_id and custom_attributes in a v1 order", async () => {
    for (const [line, name] of [
      [{ id: 'p', variant_id: 'v' }, 'products[0].variant_id'],
      [{ id: 'p', custom_attributes: ATTRS }, 'products[0].custom_attributes'],
    ] as const) {
      const response = await shop.request('POST', v1Path('order'), { order: { id: 'o', profile_id: 'u', products: [line] } });
      expect(response.body.error.unknown_parameters).toEqual([name]);
    }
  });
});

/** The kinds a v2 PUT writes under a language, with a body that creates one (`id` replaced per test). */
const WRITES: Array<{ key: string; minimal: Record<string, unknown>; refs: string[] }> = [
  { key: 'brand', minimal: { id: 'x', name: 'X' }, refs: [] },
  { key: 'category', minimal: { id: 'x', name: 'X' }, refs: ['parent_category_id'] },
  { key: 'product', minimal: { id: 'x' }, refs: ['brand_id'] },
  { key: 'variant', minimal: { id: 'x', product_id: 'xp' }, refs: ['product_id'] },
  { key: 'review', minimal: { id: 'x', product_id: 'xp', profile_id: 'xu' }, refs: ['product_id', 'profile_id'] },
  { key: 'profile', minimal: { id: 'x', email: 'x@example.test' }, refs: [] },
  {
    key: 'order',
    minimal: { id: 'x', profile_id: 'xu', ordered_at: '2024-05-01T00:00:00Z', products: [{ id: 'xp', variant_id: 'xv' }] },
    refs: ['profile_id', 'shopping_cart_id', 'checkout_id', 'products[0].id', 'products[0].variant_id'],
  },
  { key: 'shopping_cart', minimal: { id: 'x', profile_id: 'xu', product_ids: ['xp'] }, refs: ['profile_id', 'product_ids[0]'] },
];

/** Sets `path` (`a`, `a[0]`, `a[0].b`) of a copy of `record` to `value`. */
function withValue(record: Record<string, unknown>, path: string, value: unknown): Record<string, unknown> {
  const copy = structuredClone(record);
  const keys = path.split(/[.[\]]+/).filter(Boolean);
  let target: any = copy;
  for (const key of keys.slice(0, -1)) target = target[key];
  target[keys.at(-1)!] = value;
  return copy;
}

describe('when ids are sent (interface §13.2)', () => {
  describe.each(WRITES)('when a $key is PUT', ({ key, minimal, refs }) => {
    it('should take an id of 255 characters and read it back by its path', async () => {
      const id = `${key}-${'i'.repeat(255 - key.length - 1)}`;
      const email = key === 'profile' ? { email: `${key}255@example.test` } : {};
      const saved = await save(shop, key, { ...minimal, ...email, id });
      expect(saved['id']).toBe(id);
      expect((await shop.get(`/${COLLECTION[key]}/${id}`)).body.id).toBe(id);
    });

    it.each([
      ['an id of 256 characters', 'x'.repeat(256)],
      ['an empty id', ''],
      ['an integer id', 12],
      ['a boolean id', true],
    ])('should refuse %s (400 invalid_parameters id)', async (_case, value) => {
      const response = await putIn(shop, key, { ...minimal, id: value });
      expect(response.status).toBe(400);
      expect(response.body.error.invalid_parameters).toEqual(['id']);
    });

    it.each(refs.flatMap((ref) => [[ref, 7] as const, [ref, 'r'.repeat(256)] as const]))(
      'should refuse %s = %j (400 invalid_parameters)',
      async (ref, value) => {
        const base =
          ref === 'shopping_cart_id' || ref === 'checkout_id' || ref === 'parent_category_id' || ref === 'brand_id'
            ? { ...minimal, [ref]: 'r' }
            : minimal;
        const response = await putIn(shop, key, withValue(base, ref, value));
        expect(response.status, response.text).toBe(400);
        expect(response.body.error.invalid_parameters).toEqual([ref]);
      },
    );
  });

  it.each([
    ['global_unsubscribe', { email: 'g@example.test', unsubscribed: true }, 'email', 7],
    ['purchase_event', { order_id: 'po', profile_id: 'pu', visitor_token: 't' }, 'order_id', 7],
    ['purchase_event', { order_id: 'po', profile_id: 'pu', visitor_token: 't' }, 'profile_id', 'x'.repeat(256)],
  ])('should refuse a %s whose %s is %j', async (key, record, field, value) => {
    const response = await putIn(shop, key, { ...record, [field]: value });
    expect(response.status).toBe(400);
    expect(response.body.error.invalid_parameters).toEqual([field]);
  });

  it.each([
    ['an order line', (id: string) => `/orders/lo/products/${id}`],
    ['a cart product', (id: string) => `/shopping_carts/ls/products/${id}`],
    ['a related product', (id: string) => `/products/lp/relevant_products/${id}`],
    ['a category assignment', (id: string) => `/products/lp/categories/${id}`],
  ])('should not store %s whose id in the path is over 255 characters', async (_case, path) => {
    await save(shop, 'order', { id: 'lo', profile_id: 'lu', ordered_at: '2024-01-01' });
    await save(shop, 'shopping_cart', { id: 'ls', profile_id: 'lu' });
    await save(shop, 'product', { id: 'lp' });
    const long = 'l'.repeat(256);
    const response = await shop.request('PUT', `/api/v2/languages/${shop.lang}${path(long)}`);
    expect([400, 404], response.text).toContain(response.status);
    await env.drain();
    expect(await liveRecord(env, shop.lang, 'product', long, shop.account)).toBeNull();
    expect((await shop.get('/orders/lo')).body.product_ids).toEqual([]);
    expect((await shop.get('/shopping_carts/ls')).body.product_ids).toEqual([]);
  });
});

describe('when a v2 body is wrong in several ways (interface §13.3, §4)', () => {
  it.each([
    ['brand', { id: 'vo', name: 'X' }, 'name', ['url', 'not a url']],
    ['category', { id: 'vo', name: 'X' }, 'name', ['visible', 'yes']],
    ['product', { id: 'vo' }, 'id', ['price', 'ten']],
    ['variant', { id: 'vo', product_id: 'p' }, 'product_id', ['old_price_incl', 'ten']],
    ['review', { id: 'vo', product_id: 'p', profile_id: 'u' }, 'profile_id', ['score', 1.5]],
    ['profile', { id: 'vo', email: 'vo@example.test' }, 'email', ['is_company', 'yes']],
    ['order', { id: 'vo', profile_id: 'u', ordered_at: '2024-01-01' }, 'ordered_at', ['is_discount_applied', 'yes']],
    ['shopping_cart', { id: 'vo', profile_id: 'u' }, 'profile_id', ['deleted', 'yes']],
    ['global_unsubscribe', { email: 'vo@example.test', unsubscribed: true }, 'email', ['unsubscribed', 'yes']],
    ['purchase_event', { order_id: 'vo', profile_id: 'u', visitor_token: 't' }, 'visitor_token', ['profile_id', 5]],
  ] as const)(
    'should report a %s: missing fields first, then unknown ones, then invalid ones',
    async (key, minimal, missing, [field, bad]) => {
      const { [missing]: _, ...without } = minimal as Record<string, unknown>;
      const first = await putIn(shop, key, { ...without, zz: 1, [field]: bad });
      expect(first.status).toBe(400);
      expect(first.body.error).toEqual({ message: expect.any(String), missing_parameters: [missing] });
      const second = await putIn(shop, key, { ...minimal, zz: 1, [field]: bad });
      expect(second.body.error).toEqual({ message: expect.any(String), unknown_parameters: ['zz'] });
      const third = await putIn(shop, key, { ...minimal, [field]: bad });
      expect(third.body.error).toEqual({ message: expect.stringContaining(field), invalid_parameters: [field] });
    },
  );
});

describe('when timestamps are sent or left to the service (interface §13.3, §4)', () => {
  const stamped = WRITES.filter(({ key }) => key !== 'profile');
  const within = (value: string, from: number, to: number) => {
    const time = Date.parse(value);
    expect(value).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(time).toBeGreaterThanOrEqual(from - 1_000);
    expect(time).toBeLessThanOrEqual(to + 1_000);
  };

  it.each(stamped)('should date a new $key at its write and keep created_at on an update', async ({ key, minimal }) => {
    const id = `ts-${key}`;
    const from = Date.now();
    const created = await save(shop, key, { ...minimal, id });
    within(created['created_at'], from, Date.now());
    const updatedToo = key !== 'order';
    if (updatedToo) within(created['updated_at'], from, Date.now());
    else expect(created).not.toHaveProperty('updated_at');
    await new Promise((resolve) => setTimeout(resolve, 5));
    const updated = await save(shop, key, { ...minimal, id });
    expect(updated['created_at']).toBe(created['created_at']);
    if (updatedToo) expect(updated['updated_at'] > created['updated_at']).toBe(true);
  });

  it.each(stamped)('should store the created_at (and updated_at) a $key write sends, in UTC', async ({ key, minimal }) => {
    const id = `ts-sent-${key}`;
    const updatedToo = key !== 'order';
    const sent = { created_at: '2020-01-02T03:04:05+02:00', ...(updatedToo ? { updated_at: '2021-06-07' } : {}) };
    const saved = await save(shop, key, { ...minimal, id, ...sent });
    expect(saved['created_at']).toBe('2020-01-02T01:04:05.000Z');
    if (updatedToo) expect(saved['updated_at']).toBe('2021-06-07T00:00:00.000Z');
    expect((await shop.get(`/${COLLECTION[key]}/${id}`)).body).toEqual(saved);
  });

  it('should show profiles without timestamps and refuse them in a profile write', async () => {
    const saved = await save(shop, 'profile', { id: 'ts-u', email: 'ts-u@example.test' });
    expect(Object.keys(saved).filter((name) => name.endsWith('_at'))).toEqual(['subscribed_to_newsletter_at']);
    expect(
      (await putIn(shop, 'profile', { id: 'ts-u', email: 'ts-u@example.test', created_at: '2020-01-01' })).body.error.unknown_parameters,
    ).toEqual(['created_at']);
  });

  it.each([
    ['global_unsubscribe', { email: 'ts@example.test', unsubscribed: true }],
    ['purchase_event', { order_id: 'ts-order', profile_id: 'u', visitor_token: 't' }],
  ])('should stamp a %s itself: created_at kept, updated_at moved by a repeat, neither taken from the body', async (key, record) => {
    await save(shop, 'order', { id: 'ts-order', profile_id: 'u', ordered_at: '2024-01-01' });
    const from = Date.now();
    const first = await save(shop, key, record);
    within(first['created_at'], from, Date.now());
    await new Promise((resolve) => setTimeout(resolve, 5));
    const again = await save(shop, key, record);
    expect(again['created_at']).toBe(first['created_at']);
    expect(again['updated_at'] > first['updated_at']).toBe(true);
    expect((await putIn(shop, key, { ...record, created_at: '2020-01-01' })).body.error.unknown_parameters).toEqual(['created_at']);
  });
});

describe('when a record of any kind is deleted through v2 (interface §13.4, §14; §6)', () => {
  type Snapshot = Record<string, [number, any]>;
  const gone = (resource: string): [number, unknown] => [404, { error: `${resource} not found` }];
  const dropFromData = (entry: [number, any], id: string): [number, any] => [
    entry[0],
    { data: entry[1].data.filter((item: { id: string }) => item.id !== id), meta: { ...entry[1].meta, total: entry[1].meta.total - 1 } },
  ];

  /** What the delete changes in the shop's reads, and the audit entries it leaves, [kind, record, action, actor]. */
  const CASES: Array<{ path: string; kind: string; id: string; expect: (before: Snapshot) => Snapshot; audit: string[][] }> = [
    {
      path: '/products/P',
      kind: 'product',
      id: 'P',
      expect: (before) => {
        const after = structuredClone(before);
        for (const path of [
          '/products/P',
          '/variants/V',
          '/products/P/relevant_products',
          '/products/P/variants',
          '/products/P/categories',
        ])
          after[path] = gone('Product');
        after['/variants/V'] = gone('Variant');
        after['/products/P2']![1].relevant_product_ids = [];
        after['/categories/C']![1].product_ids = ['P2'];
        after['/categories/C/products'] = dropFromData(before['/categories/C/products']!, 'P');
        after['/brands/B']![1].product_ids = [];
        after['/brands/B/products'] = dropFromData(before['/brands/B/products']!, 'P');
        // Reviews, orders (their lines) and carts keep naming the product (interface §6, §14).
        return after;
      },
      audit: [
        ['product', 'P', 'delete', 'client'],
        ['variant', 'V', 'cascade_delete', 'system'],
        ['product', 'P', 'unlink', 'system'],
        ['product', 'P', 'unlink', 'system'],
        ['product', 'P2', 'unlink', 'system'],
      ],
    },
    {
      path: '/categories/C',
      kind: 'category',
      id: 'C',
      expect: (before) => {
        const after = structuredClone(before);
        after['/categories/C'] = gone('Category');
        after['/categories/C/products'] = gone('Category');
        after['/categories/CC']![1].parent_category_id = null;
        after['/products/P']![1].category_ids = [];
        after['/products/P2']![1].category_ids = [];
        after['/products/P/categories'] = dropFromData(before['/products/P/categories']!, 'C');
        after['/brands/B/products']![1].data[0].category_ids = [];
        after['/products/P/relevant_products']![1].data[0].category_ids = [];
        return after;
      },
      audit: [
        ['category', 'C', 'delete', 'client'],
        ['category', 'CC', 'unlink', 'system'],
        ['category', 'C', 'unlink', 'system'],
        ['category', 'C', 'unlink', 'system'],
      ],
    },
    {
      path: '/brands/B',
      kind: 'brand',
      id: 'B',
      expect: (before) => {
        const after = structuredClone(before);
        after['/brands/B'] = gone('Brand');
        after['/brands/B/products'] = gone('Brand');
        after['/products/P']![1].brand_id = null;
        return after;
      },
      audit: [
        ['brand', 'B', 'delete', 'client'],
        ['product', 'P', 'unlink', 'system'],
      ],
    },
    ...(
      [
        ['/variants/V', 'variant', 'V', 'Variant', ['/products/P/variants']],
        ['/reviews/R', 'review', 'R', 'Review', []],
        ['/orders/O', 'order', 'O', 'Order', ['/orders/O/products']],
        ['/shopping_carts/S', 'shopping_cart', 'S', 'Shopping cart', ['/shopping_carts/S/products']],
      ] as const
    ).map(([path, kind, id, resource, lists]) => ({
      path,
      kind,
      id,
      expect: (before: Snapshot) => {
        const after = structuredClone(before);
        after[path] = gone(resource);
        for (const list of lists) after[list] = list === '/products/P/variants' ? dropFromData(before[list]!, id) : gone(resource);
        // Nothing else changes: the order line keeps its variant_id, the purchase event its order, the order its shopping_cart_id.
        return after;
      },
      audit: [[kind, id, 'delete', 'client']],
    })),
    {
      path: '/profiles/U',
      kind: 'profile',
      id: 'U',
      expect: (before) => {
        const after = structuredClone(before);
        after['/profiles/U'] = gone('Profile');
        // Reviews, orders, carts and the purchase event keep profile_id; the unsubscribe stays, naming no profile now.
        after['/global_unsubscribes']![1].data[0].profile_id = null;
        return after;
      },
      audit: [['profile', 'U', 'delete', 'client']],
    },
  ];

  it.each(CASES)('should apply interface §6 when $kind $id is deleted, and audit the delete and each cascade', async (item) => {
    const target = await openShop(env);
    await buildShop(target);
    const before = await snapshot(target);
    const seen = (await auditOf(env, target.lang, { account: target.account })).length;
    const deleted = await target.del(item.path);
    expect(deleted.status).toBe(204);
    expect(deleted.text).toBe('');
    await env.drain();
    expect(await snapshot(target)).toEqual(item.expect(before));
    const audit = (await auditOf(env, target.lang, { account: target.account })).slice(seen);
    // One entry per change; their order among a delete's effects is the applier's (docs/decisions.md, "Audit order").
    const entries = audit.map((entry) => [entry.kind, entry.record_id, entry.action, entry.actor === 'system' ? 'system' : 'client']);
    expect(entries[0]).toEqual(item.audit[0]);
    expect(entries.slice(1).sort()).toEqual(item.audit.slice(1).sort());
  });
});

describe('when the v2-only fields are written (interface §14)', () => {
  it.each([
    ['brand', { id: 'f', name: 'F' }, 'url', 'ftp://x.test/'],
    ['variant', { id: 'f', product_id: 'p' }, 'url', 'not a url'],
    ['variant', { id: 'f', product_id: 'p' }, 'old_price_excl', 'ten'],
    ['variant', { id: 'f', product_id: 'p' }, 'old_price_incl', '12.5'],
    ['review', { id: 'f', product_id: 'p', profile_id: 'u' }, 'description', 5],
    ['review', { id: 'f', product_id: 'p', profile_id: 'u' }, 'score', 4.5],
    ['profile', { id: 'f', email: 'f@example.test' }, 'unsubscribed', 'yes'],
    ['profile', { id: 'f', email: 'f@example.test' }, 'double_opt_in', 1],
    ['profile', { id: 'f', email: 'f@example.test' }, 'is_registered', 'no'],
    ['profile', { id: 'f', email: 'f@example.test' }, 'company_name', 5],
    ['profile', { id: 'f', email: 'f@example.test' }, 'email', 'not-an-email'],
    ['order', { id: 'f', profile_id: 'u', ordered_at: '2024-01-01' }, 'ordered_at', 'yesterday'],
    ['order', { id: 'f', profile_id: 'u', ordered_at: '2024-01-01' }, 'discount_code', 5],
    ['order', { id: 'f', profile_id: 'u', ordered_at: '2024-01-01' }, 'status', ''],
    ['order', { id: 'f', profile_id: 'u', ordered_at: '2024-01-01' }, 'products', [{ id: 'p', quantity: 1.5 }], 'products[0].quantity'],
    ['order', { id: 'f', profile_id: 'u', ordered_at: '2024-01-01' }, 'products', [{ id: 'p', quantity: '2' }], 'products[0].quantity'],
    ['shopping_cart', { id: 'f', profile_id: 'u' }, 'recovery_token', 't'.repeat(256)],
    ['shopping_cart', { id: 'f', profile_id: 'u' }, 'price', '9.50'],
    ['shopping_cart', { id: 'f', profile_id: 'u' }, 'deleted', 'false'],
    ['shopping_cart', { id: 'f', profile_id: 'u' }, 'recovery_url', 'javascript:alert(1)'],
  ])('should refuse a %s whose %s is %j (400 invalid_parameters)', async (key, minimal, field, value, name = field) => {
    const response = await putIn(shop, key, { ...minimal, [field]: value });
    expect(response.status, response.text).toBe(400);
    expect(response.body.error.invalid_parameters).toEqual([name]);
  });

  it.each([
    ['review', { id: 'g', product_id: 'p', profile_id: 'u' }, 'score', -3],
    ['review', { id: 'g', product_id: 'p', profile_id: 'u' }, 'score', 1000],
    ['order', { id: 'g', profile_id: 'u', ordered_at: '2024-01-01' }, 'status', 'x'.repeat(64)],
    ['order', { id: 'g', profile_id: 'u', ordered_at: '2024-01-01' }, 'status', 'awaiting_pickup'],
    ['shopping_cart', { id: 'g', profile_id: 'u' }, 'recovery_token', 't'.repeat(255)],
    ['shopping_cart', { id: 'g', profile_id: 'u' }, 'recovery_token', ''],
    ['shopping_cart', { id: 'g', profile_id: 'u' }, 'price', 0],
  ])('should store a %s whose %s is %j as sent', async (key, minimal, field, value) => {
    const saved = await save(shop, key, { ...minimal, [field]: value });
    expect(saved[field]).toEqual(value);
    expect((await shop.get(`/${COLLECTION[key]}/${minimal['id']}`)).body[field]).toEqual(value);
  });

  it.each([
    ...WRITES.map(({ key, minimal }) => [key, minimal, 'custom_attributes'] as const),
    ['order line', WRITES[6]!.minimal, 'products[0].custom_attributes'] as const,
  ])("should hold a %s's custom attributes to interface §8's rules", async (label, minimal, field) => {
    const key = label === 'order line' ? 'order' : label;
    const record = { ...minimal, id: 'ca-rules' };
    for (const [attributes, name] of [
      [[{ name: 'a', string_value: 'x', integer_value: 1 }], `${field}[0]`],
      [[{ name: 'a' }], `${field}[0]`],
      [
        [
          { name: 'a', string_value: 'x' },
          { name: 'a', boolean_value: true },
        ],
        `${field}[1].name`,
      ],
      [[{ name: 'a', date_value: '2023-02-29' }], `${field}[0].date_value`],
    ] as const) {
      const response = await putIn(shop, key, withValue(record, field, attributes));
      expect(response.status, `${label} ${JSON.stringify(attributes)}`).toBe(400);
      expect(response.body.error.invalid_parameters).toEqual([name]);
    }
    const typed = [
      { name: 's', string_value: 'x' },
      { name: 'i', integer_value: -2 },
      { name: 'b', boolean_value: false },
      { name: 'd', date_value: '2024-02-29' },
      { name: 't', datetime_value: '2024-05-01T12:00:00+02:00' },
    ];
    const shown = [...typed.slice(0, 4), { name: 't', datetime_value: '2024-05-01T10:00:00.000Z' }];
    await save(shop, key, withValue(record, field, typed));
    const read =
      label === 'order line'
        ? (await shop.get('/orders/ca-rules/products')).body.data[0]
        : (await shop.get(`/${COLLECTION[key]}/ca-rules`)).body;
    expect(read.custom_attributes).toEqual(shown);
  });

  it('should check line attributes sent to the line writer too', async () => {
    await save(shop, 'order', { id: 'la', profile_id: 'u', ordered_at: '2024-01-01' });
    const response = await shop.request('PUT', `/api/v2/languages/${shop.lang}/orders/la/products/p`, {
      custom_attributes: [{ name: 'a', string_value: 'x', integer_value: 1 }],
    });
    expect(response.status).toBe(400);
    expect(response.body.error.invalid_parameters).toEqual(['custom_attributes[0]']);
  });

  it('should stub the products of order lines and carts, but not variants, carts or checkouts an order names', async () => {
    const target = await openShop(env);
    await save(target, 'order', {
      id: 'o',
      profile_id: 'ou',
      ordered_at: '2024-01-01',
      shopping_cart_id: 'sc',
      checkout_id: 'chk',
      products: [{ id: 'op', variant_id: 'ov' }],
    });
    await save(target, 'shopping_cart', { id: 's', profile_id: 'su', product_ids: ['sp1', 'sp2'] });
    await env.drain();
    for (const [kind, id] of [
      ['profile', 'ou'],
      ['product', 'op'],
      ['profile', 'su'],
      ['product', 'sp1'],
      ['product', 'sp2'],
    ] as const) {
      expect(await liveRecord(env, target.lang, kind, id, target.account), `${kind} ${id}`).not.toBeNull();
      expect((await target.get(`/${COLLECTION[kind]}/${id}`)).status).toBe(200);
    }
    for (const [kind, id] of [
      ['variant', 'ov'],
      ['shopping_cart', 'sc'],
      ['shopping_cart', 'chk'],
    ] as const)
      expect(await liveRecord(env, target.lang, kind, id, target.account), `${kind} ${id}`).toBeNull();
    expect((await target.get('/orders/o')).body).toMatchObject({ shopping_cart_id: 'sc', checkout_id: 'chk' });
    const stubs = (await auditOf(env, target.lang, { account: target.account })).filter((entry) => entry.action === 'stub');
    expect(stubs.map((entry) => `${entry.kind} ${entry.record_id}`).sort()).toEqual([
      'product op',
      'product sp1',
      'product sp2',
      'profile ou',
      'profile su',
    ]);
  });

  it("should replace an order's lines and a cart's products as a whole when sent, and keep them when not", async () => {
    await save(shop, 'order', { id: 'rw', profile_id: 'u', ordered_at: '2024-01-01', products: [{ id: 'a' }, { id: 'b', quantity: 2 }] });
    await save(shop, 'shopping_cart', { id: 'rw', profile_id: 'u', product_ids: ['a', 'b'] });
    expect((await save(shop, 'order', { id: 'rw', profile_id: 'u', ordered_at: '2024-01-01', number: 'N' }))['product_ids']).toEqual([
      'a',
      'b',
    ]);
    expect((await save(shop, 'shopping_cart', { id: 'rw', profile_id: 'u', currency: 'EUR' }))['product_ids']).toEqual(['a', 'b']);
    const order = await save(shop, 'order', {
      id: 'rw',
      profile_id: 'u',
      ordered_at: '2024-01-01',
      products: [{ id: 'c' }, { id: 'a', quantity: 4 }],
    });
    expect(order['products']).toEqual([
      { id: 'c', quantity: null, variant_id: null },
      { id: 'a', quantity: 4, variant_id: null },
    ]);
    expect(order['product_ids']).toEqual(['c', 'a']);
    expect((await save(shop, 'shopping_cart', { id: 'rw', profile_id: 'u', product_ids: ['c'] }))['product_ids']).toEqual(['c']);
    expect((await save(shop, 'shopping_cart', { id: 'rw', profile_id: 'u', product_ids: null }))['product_ids']).toEqual([]);
    expect((await save(shop, 'order', { id: 'rw', profile_id: 'u', ordered_at: '2024-01-01', products: [] }))['product_ids']).toEqual([]);
  });
});

describe('when a sub-resource names a parent or a product that is not there (interface §15)', () => {
  it.each([
    ['GET', '/shopping_carts/none/products', 'Shopping cart'],
    ['DELETE', '/shopping_carts/none/products/p', 'Shopping cart'],
    ['PUT', '/shopping_carts/none/products/p', 'Shopping cart'],
    ['GET', '/orders/none/products', 'Order'],
    ['PUT', '/orders/none/products/p', 'Order'],
    ['DELETE', '/orders/none/products/p', 'Order'],
    ['GET', '/brands/none/products', 'Brand'],
    ['GET', '/products/none/relevant_products', 'Product'],
    ['PUT', '/products/none/relevant_products/sr', 'Product'],
    ['DELETE', '/products/none/relevant_products/sr', 'Product'],
    ['PUT', '/products/sr/relevant_products/none', 'Product'],
    ['DELETE', '/products/sr/relevant_products/none', 'Product'],
    ['GET', '/purchase_events/none', 'Purchase event'],
  ])('should answer %s %s with 404 and its record body, and make no stub', async (method, path, resource) => {
    await save(shop, 'product', { id: 'sr' });
    const response = await shop.request(method, `/api/v2/languages/${shop.lang}${path}`);
    expect(response.status).toBe(404);
    expect(response.body).toEqual({ error: `${resource} not found` });
    await env.drain();
    for (const kind of ['product', 'order', 'shopping_cart', 'brand'] as const)
      expect(await liveRecord(env, shop.lang, kind, 'none', shop.account)).toBeNull();
  });

  it('should stub a missing product of an order line or a cart, as their PUTs do', async () => {
    await save(shop, 'order', { id: 'sl', profile_id: 'u', ordered_at: '2024-01-01' });
    await save(shop, 'shopping_cart', { id: 'sl', profile_id: 'u' });
    await ok(shop.request('PUT', `/api/v2/languages/${shop.lang}/orders/sl/products/line-stub`), 200);
    await ok(shop.request('PUT', `/api/v2/languages/${shop.lang}/shopping_carts/sl/products/cart-stub`));
    await env.drain();
    for (const id of ['line-stub', 'cart-stub']) {
      expect((await shop.get(`/products/${id}`)).body).toMatchObject({ id, name: null });
      expect(
        (await auditOf(env, shop.lang, { kind: 'product', recordId: id, account: shop.account })).map((entry) => entry.action),
      ).toEqual(['stub']);
    }
  });

  it.each([
    ['text/plain', 'hello'],
    ['application/json', '{"x":'],
    ['application/json', '{"quantity":"two"}'],
  ])('should not read a body (%s %s) sent to the cart-product writer', async (contentType, raw) => {
    await save(shop, 'shopping_cart', { id: 'nb', profile_id: 'u' });
    const response = await env.request('PUT', `/api/v2/languages/${shop.lang}/shopping_carts/nb/products/nbp`, {
      token: shop.token,
      raw,
      headers: { 'content-type': contentType },
    });
    expect(response.status, response.text).toBe(204);
    expect((await shop.get('/shopping_carts/nb')).body.product_ids).toEqual(['nbp']);
  });

  it('should show the same lines through the order, its lines list and its line writer', async () => {
    await save(shop, 'order', {
      id: 'same',
      profile_id: 'u',
      ordered_at: '2024-01-01',
      products: [{ id: 'a', quantity: 2, variant_id: 'va' }],
    });
    await ok(shop.request('PUT', `/api/v2/languages/${shop.lang}/orders/same/products/b`, { variant_id: 'vb' }), 200);
    const order = (await shop.get('/orders/same')).body;
    const lines = (await shop.get('/orders/same/products')).body.data;
    expect(lines.map((line: any) => ({ id: line.product_id, quantity: line.quantity, variant_id: line.variant_id }))).toEqual(
      order.products,
    );
    expect(order.products).toEqual([
      { id: 'a', quantity: 2, variant_id: 'va' },
      { id: 'b', quantity: 1, variant_id: 'vb' },
    ]);
  });
});

describe('when global unsubscribes meet several languages and late profiles (interface §16)', () => {
  it('should keep one entry per language and change only the profiles of its own language', async () => {
    const target = await openShop(env);
    const second = { ...target, lang: `${target.lang}-2` } as Shop;
    await ok(target.request('PUT', '/api/v2/languages', { language: { id: second.lang } }), 200);
    const secondGet = (path: string) => target.request('GET', `/api/v2/languages/${second.lang}${path}`);
    await save(target, 'profile', { id: 'a', email: 'Same@Example.test' });
    await save(second, 'profile', { id: 'a', email: 'same@example.test' });
    await save(target, 'global_unsubscribe', { email: 'same@example.test', unsubscribed: true });
    await env.drain();
    expect((await target.get('/profiles/a')).body.unsubscribed).toBe(true);
    expect((await secondGet('/profiles/a')).body.unsubscribed).toBeNull();
    expect((await secondGet('/global_unsubscribes')).body.data).toEqual([]);
    await save(second, 'global_unsubscribe', { email: 'SAME@example.test', unsubscribed: false });
    await env.drain();
    expect((await target.get('/global_unsubscribes')).body.data.map((entry: any) => entry.unsubscribed)).toEqual([true]);
    expect((await secondGet('/profiles/a')).body.unsubscribed).toBe(false);
    expect((await target.get('/profiles/a')).body.unsubscribed).toBe(true);
  });

  it('should name the profile an entry matches when it is read, also one written after the entry', async () => {
    const target = await openShop(env);
    const entry = await save(target, 'global_unsubscribe', { email: 'late@example.test', unsubscribed: true });
    expect(entry['profile_id']).toBeNull();
    await save(target, 'profile', { id: 'late', email: 'LATE@example.test' });
    expect((await target.get('/global_unsubscribes')).body.data[0].profile_id).toBe('late');
  });
});

describe('when a purchase event names an order of another account (interface §17, §21)', () => {
  it("should answer 404 Order not found and leave the other account's order alone", async () => {
    const owner = await openShop(env);
    await save(owner, 'order', { id: 'po', profile_id: 'pu', ordered_at: '2024-01-01' });
    const twin = await openShop(env, owner.lang);
    const response = await putIn(twin, 'purchase_event', { order_id: 'po', profile_id: 'pu', visitor_token: 't' });
    expect(response.status).toBe(404);
    expect(response.body).toEqual({ error: 'Order not found' });
    expect((await owner.get('/purchase_events')).body.meta.total).toBe(0);
  });
});

describe('when attribute definitions are written (interface §18)', () => {
  const define = (target: Shop, definition: Record<string, unknown>) =>
    target.request('PUT', '/api/v2/custom_attributes', { custom_attribute: definition });
  const DATATYPES = ['string', 'integer', 'float', 'boolean', 'date', 'datetime'];
  const RESOURCES = ['profile', 'product', 'order', 'shopping_cart', 'category', 'review', 'variant', 'brand'];

  it('should take every datatype on every resource, list them by first creation, then resource, then handle, and page them', async () => {
    const target = await openShop(env);
    const written: Array<{ resource: string; handle: string }> = [];
    for (const resource of RESOURCES)
      for (const datatype of DATATYPES) {
        const saved = await define(target, { name: `Kind ${datatype}`, description: `${datatype} of ${resource}`, datatype, resource });
        expect(saved.status, saved.text).toBe(200);
        expect(saved.body).toEqual({
          handle: `kind_${datatype}`,
          name: `Kind ${datatype}`,
          description: `${datatype} of ${resource}`,
          datatype,
          resource,
        });
        written.push({ resource, handle: `kind_${datatype}` });
      }
    // An update keeps the definition's place.
    await ok(define(target, { name: 'KIND string', description: 'again', datatype: 'float', resource: 'profile' }), 200);
    const all = await target.request('GET', '/api/v2/custom_attributes?per_page=250');
    expect(all.body.meta).toEqual({ current_page: 1, per_page: 250, total: RESOURCES.length * DATATYPES.length });
    expect(all.body.data.map((item: any) => ({ resource: item.resource, handle: item.handle }))).toEqual(written);
    expect(all.body.data[0]).toEqual({
      handle: 'kind_string',
      name: 'KIND string',
      description: 'again',
      datatype: 'float',
      resource: 'profile',
    });
    const page = await target.request('GET', '/api/v2/custom_attributes?resource=review&per_page=4&page=2');
    expect(page.body.meta).toEqual({ current_page: 2, per_page: 4, total: DATATYPES.length });
    expect(page.body.data.map((item: any) => item.handle)).toEqual(['kind_date', 'kind_datetime']);
  });

  it.each([
    ['  Shoe Size (EU)  ', 'shoe_size_eu'],
    ['__Already_Snake__', 'already_snake'],
    ['A--B  c', 'a_b_c'],
    ['Größe', 'gr_e'],
    ['123', '123'],
    ['x'.repeat(255), 'x'.repeat(255)],
  ])('should derive the handle of %j as %j', async (name, handle) => {
    const saved = await define(shop, { name, description: '', datatype: 'string', resource: 'brand' });
    expect(saved.status, saved.text).toBe(200);
    expect(saved.body.handle).toBe(handle);
    expect(saved.body.name).toBe(name);
  });

  it.each([
    [{ name: '', description: '', datatype: 'string', resource: 'brand' }, 'name'],
    [{ name: '---', description: '', datatype: 'string', resource: 'brand' }, 'name'],
    [{ name: 'x'.repeat(256), description: '', datatype: 'string', resource: 'brand' }, 'name'],
    [{ name: 'x', description: 5, datatype: 'string', resource: 'brand' }, 'description'],
    [{ name: 'x', description: '', datatype: 'String', resource: 'brand' }, 'datatype'],
    [{ name: 'x', description: '', datatype: 'string', resource: 'shopping_carts' }, 'resource'],
  ])('should refuse %j (400 invalid_parameters %s)', async (definition, name) => {
    const response = await define(shop, definition);
    expect(response.status).toBe(400);
    expect(response.body.error.invalid_parameters).toEqual([name]);
  });

  it('should refuse a list query with timestamp filters or unknown parameters, and have no delete', async () => {
    expect((await shop.request('GET', '/api/v2/custom_attributes?created_after=2024-01-01')).body.error.unknown_parameters).toEqual([
      'created_after',
    ]);
    expect((await shop.request('DELETE', '/api/v2/custom_attributes')).status).toBe(405);
  });
});

describe('when languages are written through v2 (interface §19)', () => {
  it.each([
    ['active', 'yes'],
    ['url', 'not a url'],
    ['name', 5],
    ['code', false],
    ['id', 'x'.repeat(256)],
    ['id', ''],
  ])('should refuse %s = %j (400 invalid_parameters)', async (field, value) => {
    const response = await shop.request('PUT', '/api/v2/languages', { language: { id: 'lv', [field]: value } });
    expect(response.status).toBe(400);
    expect(response.body.error.invalid_parameters).toEqual([field]);
  });

  it('should refuse a body without a language id or with another key', async () => {
    expect((await shop.request('PUT', '/api/v2/languages', { language: { name: 'x' } })).body.error.missing_parameters).toEqual(['id']);
    expect((await shop.request('PUT', '/api/v2/languages', { language: { id: 'lv', colour: 1 } })).body.error.unknown_parameters).toEqual([
      'colour',
    ]);
    expect((await shop.request('PUT', '/api/v2/languages', { lang: { id: 'lv' } })).body.error.missing_parameters).toEqual(['language']);
  });

  it('should merge into a language v1 created, show v2-created ones to v1 with nulls, and list both', async () => {
    const target = await openShop(env);
    const merged = await target.request('PUT', '/api/v2/languages', { language: { id: target.lang, active: true } });
    expect(merged.body).toEqual({ id: target.lang, name: target.lang, code: 'xx', active: true, url: null });
    await ok(target.request('PUT', '/api/v2/languages', { language: { id: 'v2-only' } }), 200);
    const v1 = await target.request('POST', '/api/v1/languages', { language: { id: 'v2-only', name: 'V', code: 'v' } });
    expect(v1.body.language).toMatchObject({ id: 'v2-only', name: 'V', code: 'v' });
    const list = await target.request('GET', '/api/v2/languages');
    expect(ids(list.body.data)).toEqual([target.lang, 'v2-only']);
    expect((await target.request('GET', '/api/v2/languages/v2-only')).body).toEqual({
      id: 'v2-only',
      name: 'V',
      code: 'v',
      active: null,
      url: null,
    });
  });
});

describe('when profiles are listed by email with other filters (interface §20)', () => {
  it('should combine emails[] with the timestamp filters and paging, collapse repeats and take 250 values', async () => {
    const target = await openShop(env);
    await save(target, 'profile', { id: 'e1', email: 'one@example.test' });
    await new Promise((resolve) => setTimeout(resolve, 20));
    const pivot = new Date().toISOString();
    await new Promise((resolve) => setTimeout(resolve, 20));
    await save(target, 'profile', { id: 'e2', email: 'two@example.test' });
    await save(target, 'profile', { id: 'e3', email: 'three@example.test' });
    const both = 'emails[]=one@example.test&emails[]=TWO@example.test';
    expect(ids((await target.get(`/profiles?${both}`)).body.data)).toEqual(['e1', 'e2']);
    const after = await target.get(`/profiles?${both}&created_after=${encodeURIComponent(pivot)}`);
    expect(ids(after.body.data)).toEqual(['e2']);
    expect(after.body.meta.total).toBe(1);
    const before = await target.get(`/profiles?${both}&updated_before=${encodeURIComponent(pivot)}`);
    expect(ids(before.body.data)).toEqual(['e1']);
    const repeated = await target.get('/profiles?emails[]=one@example.test&emails[]=ONE@example.test');
    expect(ids(repeated.body.data)).toEqual(['e1']);
    const many = Array.from({ length: 249 }, (_, index) => `emails[]=p${index}@example.test`).join('&');
    const full = await target.get(`/profiles?${many}&emails[]=three@example.test`);
    expect(full.status).toBe(200);
    expect(ids(full.body.data)).toEqual(['e3']);
  });
});
