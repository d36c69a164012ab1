import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitForBulkJob, waitForV1BulkJob } from './support/bulk-jobs.js';
import { type HttpResponse, startEnvironment, type TestEnvironment } from './support/harness.js';
import { generate, type Operation, rng } from './support/scenario.js';
import { comparableState } from './support/state.js';
import { SEGMENT } from './support/v2-client.js';

/*
 * POST /api/v2/languages/{language_id}/bulk (docs/decisions.md, "Bulk in
 * v2"): a file of v2 requests ends in the state of the same requests sent
 * one by one over HTTP (records, links, order and cart lines, audit entries),
 * and each refused line carries the body its request was answered with.
 */

let env: TestEnvironment;
let token: string;
let account: string;

const NDJSON = { 'content-type': 'application/x-ndjson' };
const v2 = (language: string) => `/api/v2/languages/${encodeURIComponent(language)}`;

async function createLanguage(id: string) {
  const response = await env.request('PUT', '/api/v2/languages', { token, body: { language: { id } } });
  expect(response.status).toBe(200);
}

async function upload(language: string, lines: string[], as = token) {
  return env.request('POST', `${v2(language)}/bulk`, { token: as, raw: lines.join('\n'), headers: NDJSON });
}

type Line = Record<string, any>;

/** The single v2 request a bulk line stands for (docs/decisions.md, "Bulk in v2"). */
function requestOf(language: string, line: Line): { method: string; path: string; body?: unknown } {
  if (typeof line['put'] === 'string') return { method: 'PUT', path: `${v2(language)}/${line['put']}`, body: line['body'] };
  if (typeof line['delete'] === 'string') return { method: 'DELETE', path: `${v2(language)}/${line['delete']}` };
  if (line['delete']) {
    const { kind, id } = line['delete'];
    return { method: 'DELETE', path: `${v2(language)}/${SEGMENT[kind as keyof typeof SEGMENT]}/${encodeURIComponent(id)}` };
  }
  const kind = Object.keys(line).find((key) => key !== 'extra')!;
  const segment = { ...SEGMENT, global_unsubscribe: 'global_unsubscribes', purchase_event: 'purchase_events' }[kind];
  return { method: 'PUT', path: `${v2(language)}/${segment}`, body: line };
}

/**
 * Sends the lines one by one as their requests and returns the errors the
 * bulk job must report for them: `{line, error}` for every answer that is not 2xx.
 */
async function sendOneByOne(language: string, lines: Line[]) {
  const errors: Array<{ line: number; error: unknown }> = [];
  for (const [index, line] of lines.entries()) {
    const request = requestOf(language, line);
    const response: HttpResponse = await env.request(request.method, request.path, { token, body: request.body });
    if (response.status >= 500) throw new Error(`${JSON.stringify(line)} answered ${response.status}: ${response.text}`);
    if (response.status >= 300) errors.push({ line: index + 1, error: response.body });
  }
  return errors;
}

/** Everything the two languages must agree on: live records, links, audit entries in order with their changes. */
const stateOf = (language: string) => comparableState(env, language, account);

beforeAll(async () => {
  env = await startEnvironment();
  const client = await env.newClient();
  const tokenResponse = await env.request('POST', '/oauth/token', {
    body: { grant_type: 'client_credentials', client_id: client.client_id, client_secret: client.client_secret },
  });
  token = tokenResponse.body.access_token;
  account = client.account;
});
afterAll(() => env?.close());

/** A whole shop in one file: every v2 kind, links, order and cart lines, deletes, and lines a request would refuse. */
const SHOP: Line[] = [
  { brand: { id: 'B2', name: 'Second' } },
  { brand: { id: 'B1', name: 'Acme', custom_attributes: [{ name: 'origin', string_value: 'NL' }] } },
  { category: { id: 'C1', name: 'Shoes', custom_attributes: [{ name: 'rank', integer_value: 1 }] } },
  { category: { id: 'C2', name: 'Boots', parent_category_id: 'C1' } },
  { product: { id: 'P1', name: 'Runner', brand_id: 'B1', price: 10.5, custom_attributes: [{ name: 'size', integer_value: 42 }] } },
  { product: { id: 'P2', name: 'Walker', brand_id: 'B2', created_at: '2024-01-01T00:00:00Z' } },
  { product: { id: 'P3', name: 'Hiker' } },
  { put: 'products/P1/categories/C1' },
  { put: 'products/P2/categories/C2' },
  { put: 'products/P1/relevant_products/P2' },
  { put: 'products/P1/categories/C9' },
  { variant: { id: 'V1', product_id: 'P1', url: 'https://shop.test/v1', old_price_incl: 12 } },
  { variant: { id: 'V2', product_id: 'P9' } },
  { profile: { id: 'u1', email: 'u1@example.test', is_company: true, company_name: 'Acme BV' } },
  { profile: { id: 'u2', email: 'U2@Example.test', unsubscribed: false } },
  { profile: { id: 'u3', email: 'u1@EXAMPLE.test', first_name: 'matched by email' } },
  { review: { id: 'R1', product_id: 'P1', profile_id: 'u1', description: 'Great', score: 5 } },
  {
    order: {
      id: 'O1',
      profile_id: 'u1',
      ordered_at: '2024-03-01T10:00:00+01:00',
      status: 'pending',
      checkout_id: 'CH1',
      products: [{ id: 'P1', quantity: 2, variant_id: 'V1', custom_attributes: [{ name: 'gift', boolean_value: true }] }, { id: 'P4' }],
    },
  },
  { put: 'orders/O1/products/P3', body: { quantity: 3 } },
  { put: 'orders/O1/products/P1', body: { variant_id: null } },
  { delete: 'orders/O1/products/P4' },
  { shopping_cart: { id: 'S1', profile_id: 'u2', product_ids: ['P1'], recovery_token: 'tok', deleted: false } },
  { put: 'shopping_carts/S1/products/P2' },
  { delete: 'shopping_carts/S1/products/P1' },
  { global_unsubscribe: { email: 'U2@example.test', unsubscribed: true } },
  { purchase_event: { order_id: 'O1', profile_id: 'u9', visitor_token: 'vt-1' } },
  { purchase_event: { order_id: 'O404', profile_id: 'u1', visitor_token: 'vt-2' } },
  { product: { id: 'P3', name: 'Hiker 2', custom_attributes: null } },
  { delete: 'products/P3' },
  { delete: { kind: 'brand', id: 'B2' } },
  { delete: 'reviews/nope' },
  { delete: 'products/P2/relevant_products/P1' },
  { delete: 'products/P1/categories/C2' },
  { product: { id: 5, name: 'integer id' } },
  { product: { id: 'P5', name: 'Read-only', category_ids: ['C1'] } },
  { brand: { id: 'B3', name: 'Brand', product_ids: ['P1'] } },
  { order: { id: 'O2', profile_id: 'u1', ordered_at: '2024-03-01', products: [{ id: 'P1' }, { id: 'P1' }] } },
  { order: { id: 'O3', profile_id: 'u1' } },
  { profile: { email: 'no-id@example.test' } },
  { put: 'orders/O1/products/P1', body: { quantity: 'two' } },
  { put: 'orders/O404/products/P1' },
  { put: 'shopping_carts/S404/products/P1' },
  { delete: 'products/P404/categories/C1' },
  { brand: { id: 'B3', name: 'Extra' }, extra: 1 },
  { global_unsubscribe: { email: 'not an email', unsubscribed: true } },
  { delete: { kind: 'order', id: 'O1' } },
  { delete: 'shopping_carts/S1' },
];

describe('when a v2 file syncs a whole shop', () => {
  let job: Record<string, any>;
  let expectedErrors: Array<{ line: number; error: unknown }>;

  beforeAll(async () => {
    await createLanguage('shop-bulk');
    const response = await upload(
      'shop-bulk',
      SHOP.map((line) => JSON.stringify(line)),
    );
    expect(response.status).toBe(202);
    job = await waitForBulkJob(env, token, response.headers.get('location')!);
    await createLanguage('shop-one-by-one');
    expectedErrors = await sendOneByOne('shop-one-by-one', SHOP);
    await env.drain(60_000);
  }, 240_000);

  it('should store every line its request would store and refuse every line its request would refuse, with the same body', () => {
    expect(job).toMatchObject({ status: 'completed', lines: SHOP.length, failed: expectedErrors.length });
    expect(job.saved).toBe(SHOP.length - expectedErrors.length);
    expect(job.errors).toEqual(expectedErrors);
    // The file exercises each way a request is refused: 404s of a required record and of a parent, and each class of 400.
    expect(expectedErrors.map(({ error }) => error)).toEqual(
      expect.arrayContaining([
        { error: 'Category not found' },
        { error: 'Order not found' },
        { error: 'Shopping cart not found' },
        { error: 'Review not found' },
        { error: 'Product not found' },
        { error: expect.objectContaining({ invalid_parameters: ['id'] }) },
        { error: expect.objectContaining({ unknown_parameters: ['category_ids'], message: expect.stringContaining('read-only') }) },
        { error: expect.objectContaining({ invalid_parameters: ['products[1].id'] }) },
        { error: expect.objectContaining({ missing_parameters: ['ordered_at'] }) },
        { error: expect.objectContaining({ invalid_parameters: ['quantity'] }) },
      ]),
    );
  });

  it('should end in the same records, links, lines and audit entries as the requests sent one by one', async () => {
    const bulk = await stateOf('shop-bulk');
    expect(bulk).toEqual(await stateOf('shop-one-by-one'));
    // What the file did, as a shop reads it back.
    const kinds = [...new Set(bulk.records.map((record) => record.kind))].sort();
    expect(kinds).toEqual(['brand', 'category', 'global_unsubscribe', 'product', 'profile', 'purchase_event', 'review', 'variant']);
    expect(bulk.links).toEqual(['product_category:P1>C1', 'product_category:P2>C2', 'relevant:P1>P2']);
  });

  it('should show the v2 data of the file through the v2 reads', async () => {
    const get = async (path: string) => (await env.request('GET', `${v2('shop-bulk')}/${path}`, { token })).body;
    expect(await get('products/P1')).toMatchObject({
      brand_id: 'B1',
      category_ids: ['C1'],
      relevant_product_ids: ['P2'],
      custom_attributes: [{ name: 'size', integer_value: 42 }],
    });
    expect(await get('profiles/u1')).toMatchObject({ is_company: true, company_name: 'Acme BV', first_name: 'matched by email' });
    expect(await get('profiles/u2')).toMatchObject({ unsubscribed: true });
    expect(await get('purchase_events/O1')).toMatchObject({ order_id: 'O1', profile_id: 'u9', visitor_token: 'vt-1' });
    expect((await get('global_unsubscribes')).data).toEqual([
      expect.objectContaining({ profile_email: 'u2@example.test', unsubscribed: true, profile_id: 'u2' }),
    ]);
    expect(await get('brands/B2')).toEqual({ error: 'Brand not found' });
    expect(await get('products/P2')).toMatchObject({ brand_id: null, category_ids: ['C2'] });
  });
});

describe('when a v2 file writes orders and carts line by line', () => {
  it('should keep the lines, their variants and attributes as the line requests do', async () => {
    const lines: Line[] = [
      { order: { id: 'O1', profile_id: 'u1', ordered_at: '2024-03-01T00:00:00Z', products: [{ id: 'P1', quantity: 1 }] } },
      {
        put: 'orders/O1/products/P2',
        body: { quantity: 4, variant_id: 'V2', custom_attributes: [{ name: 'engraving', string_value: 'A' }] },
      },
      { put: 'orders/O1/products/P1', body: { quantity: 5 } },
      { put: 'orders/O1/products/P3' },
      { shopping_cart: { id: 'S1', profile_id: 'u1' } },
      { put: 'shopping_carts/S1/products/P3' },
      { put: 'shopping_carts/S1/products/P1' },
      { put: 'shopping_carts/S1/products/P3' },
    ];
    await createLanguage('lines-bulk');
    const job = await waitForBulkJob(
      env,
      token,
      (
        await upload(
          'lines-bulk',
          lines.map((line) => JSON.stringify(line)),
        )
      ).headers.get('location')!,
    );
    expect(job).toMatchObject({ status: 'completed', saved: lines.length, failed: 0 });
    const orderLines = await env.request('GET', `${v2('lines-bulk')}/orders/O1/products`, { token });
    expect(orderLines.body.data).toEqual([
      { order_id: 'O1', product_id: 'P1', quantity: 5, variant_id: null, custom_attributes: [] },
      {
        order_id: 'O1',
        product_id: 'P2',
        quantity: 4,
        variant_id: 'V2',
        custom_attributes: [{ name: 'engraving', string_value: 'A' }],
      },
      { order_id: 'O1', product_id: 'P3', quantity: 1, variant_id: null, custom_attributes: [] },
    ]);
    const cart = await env.request('GET', `${v2('lines-bulk')}/shopping_carts/S1`, { token });
    expect(cart.body.product_ids).toEqual(['P3', 'P1']);
    await createLanguage('lines-one-by-one');
    expect(await sendOneByOne('lines-one-by-one', lines)).toEqual([]);
    await env.drain(60_000);
    expect(await stateOf('lines-bulk')).toEqual(await stateOf('lines-one-by-one'));
  }, 120_000);
});

/**
 * The v2 operations of the model test as bulk lines. Whether a record that
 * exists only as a stub (or is gone only by a cascade) is there when a
 * request arrives depends on the worker's pace (interface §7 promises it once
 * drained), for a file and for requests alike: deletes and links name only
 * records the file wrote itself, and that no cascade removes here.
 */
function linesOf(r: ReturnType<typeof rng>, operations: Operation[], written: Set<string>): Line[] {
  const lines: Line[] = [];
  const has = (kind: string, id: string) => written.has(`${kind}:${id}`);
  for (const operation of operations) {
    switch (operation.type) {
      case 'put':
        written.add(`${operation.kind}:${operation.body['id']}`);
        lines.push({ [operation.kind]: operation.body });
        break;
      case 'v2delete':
        if (!has(operation.kind, operation.id)) break;
        written.delete(`${operation.kind}:${operation.id}`);
        lines.push(
          r.chance(0.5) ? { delete: `${SEGMENT[operation.kind]}/${operation.id}` } : { delete: { kind: operation.kind, id: operation.id } },
        );
        break;
      case 'line': {
        const path = `${SEGMENT[operation.parent]}/${operation.id}/products/${operation.product}`;
        lines.push(operation.remove ? { delete: path } : { put: path, ...(operation.body ? { body: operation.body } : {}) });
        break;
      }
      case 'relate':
        if (!has('product', operation.product) || !has('product', operation.other)) break;
        lines.push({ [operation.present ? 'put' : 'delete']: `products/${operation.product}/relevant_products/${operation.other}` });
        break;
      case 'assign':
      case 'unassign':
        if (!has('product', operation.product) || !has('category', operation.category)) break;
        lines.push({ [operation.type === 'assign' ? 'put' : 'delete']: `products/${operation.product}/categories/${operation.category}` });
        break;
      case 'unsubscribe':
        lines.push({ global_unsubscribe: { email: operation.email, unsubscribed: operation.unsubscribed } });
        break;
      default:
        // v1 writes are not lines of a v2 file.
        break;
    }
  }
  return lines;
}

describe('when a long random v2 file repeats records, links, lines and deletes', () => {
  // Crosses a bulk batch (1,000 lines) and breaks runs of distinct records often (three ids per kind).
  it('should end in the state of the same requests sent one by one, refusing the same lines', async () => {
    const r = rng(Number(process.env['BULK_SEED'] ?? 20261122));
    const written = new Set<string>();
    const lines: Line[] = [];
    while (lines.length < 1_200) lines.push(...linesOf(r, generate(r, 100, undefined, { v2: true, v2Surface: true }), written));
    await createLanguage('random-bulk');
    const response = await upload(
      'random-bulk',
      lines.map((line) => JSON.stringify(line)),
    );
    expect(response.status).toBe(202);
    const job = await waitForBulkJob(env, token, response.headers.get('location')!, 180_000);
    await createLanguage('random-one-by-one');
    const expectedErrors = await sendOneByOne('random-one-by-one', lines);
    expect(job.errors).toEqual(expectedErrors);
    expect(job).toMatchObject({ status: 'completed', lines: lines.length, failed: expectedErrors.length });
    await env.drain(120_000);
    expect(await stateOf('random-bulk')).toEqual(await stateOf('random-one-by-one'));
  }, 360_000);
});

describe('when a v2 file is uploaded and followed', () => {
  it('should answer 202 with the bare job, a v2 Location, and list and show it with its errors', async () => {
    await createLanguage('follow');
    const v1Job = await env.request('POST', '/api/v1/languages/follow/bulk', {
      token,
      raw: '{"product":{"id":"P1","name":"v1 line"}}',
      headers: NDJSON,
    });
    expect(v1Job.status).toBe(202);
    const response = await upload('follow', ['{"product":{"id":"P2","name":"v2 line"}}', 'not json', '{"language":{"id":"de"}}']);
    expect(response.status).toBe(202);
    expect(response.body).toMatchObject({ id: expect.any(String), status: 'queued', lines: 3 });
    expect(response.body.bulk_job).toBeUndefined();
    const location = response.headers.get('location')!;
    expect(location).toBe(`/api/v2/languages/follow/bulk/${response.body.id}`);
    const job = await waitForBulkJob(env, token, location);
    expect(job).toMatchObject({ status: 'completed', saved: 1, failed: 2 });
    expect(job.errors).toEqual([
      { line: 2, error: { error: { message: 'Malformed JSON on this line' } } },
      {
        line: 3,
        error: {
          error: { message: expect.stringContaining('PUT /api/v2/languages'), unknown_parameters: ['language'] },
        },
      },
    ]);
    const errors = await env.request('GET', `${location}/errors`, { token });
    expect(errors.headers.get('content-type')).toContain('application/x-ndjson');
    expect(
      errors.text
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line)),
    ).toEqual(job.errors);
    // Both interfaces list the language's jobs, v1 and v2 files alike.
    for (const generation of ['v1', 'v2']) {
      const list = await env.request('GET', `/api/${generation}/languages/follow/bulk`, { token });
      expect(list.body.data.map((item: { id: string }) => item.id)).toEqual([response.body.id, v1Job.body.bulk_job.id]);
    }
    const asV1 = await env.request('GET', `/api/v1/languages/follow/bulk/${response.body.id}`, { token });
    expect(asV1.body.bulk_job).toMatchObject({ id: response.body.id, saved: 1 });
  });

  it('should read a v1 file as v1 bodies still: v2 keys and request lines are refused there', async () => {
    await createLanguage('v1-file');
    const response = await env.request('POST', '/api/v1/languages/v1-file/bulk', {
      token,
      raw: ['{"global_unsubscribe":{"email":"a@example.test","unsubscribed":true}}', '{"put":"products/P1/categories/C1"}'].join('\n'),
      headers: NDJSON,
    });
    const job = (await env.request('GET', response.headers.get('location')!, { token })).body.bulk_job;
    const done = job.status === 'completed' ? job : await waitForV1BulkJob(env, token, response.headers.get('location')!);
    expect(done.errors).toEqual([
      { line: 1, error: { error: expect.objectContaining({ unknown_parameters: ['global_unsubscribe'] }) } },
      { line: 2, error: { error: expect.objectContaining({ unknown_parameters: ['put'] }) } },
    ]);
  });

  it.each([
    ['an unknown language', 'nope', NDJSON, 404],
    ['another content type', 'follow', { 'content-type': 'application/json' }, 415],
  ])('should refuse an upload to %s', async (_case, language, headers, status) => {
    const response = await env.request('POST', `${v2(language)}/bulk`, { token, raw: '{}', headers });
    expect(response.status).toBe(status);
  });

  it("should keep another account's language and jobs out of reach", async () => {
    const other = await env.token();
    expect((await upload('follow', ['{"product":{"id":"X","name":"x"}}'], other)).body).toEqual({
      error: { message: "Language 'follow' not found" },
    });
    const jobs = await env.request('GET', `${v2('follow')}/bulk`, { token });
    const foreign = await env.request('GET', `${v2('follow')}/bulk/${jobs.body.data[0].id}`, { token: other });
    expect(foreign.status).toBe(404);
    const unknown = await env.request('GET', `${v2('follow')}/bulk/00000000-0000-0000-0000-000000000000`, { token });
    expect(unknown).toMatchObject({ status: 404, body: { error: 'Bulk job not found' } });
  });
});
