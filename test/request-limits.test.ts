import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_LIST_ITEMS } from '../catalogue/primitives.schema.js';
import { startEnvironment, type TestEnvironment } from './support/harness.js';
import { pollUntil } from './support/poll.js';

/*
 * What one request may cost. Lists in a body hold at most
 * MAX_LIST_ITEMS (100,000) items, on every interface and in bulk lines alike,
 * and the document says so. (The 1 MiB body, per_page, audit limit and bulk
 * limits have their tests in errors, v2-pagination, admin and bulk tests.)
 */

let env: TestEnvironment;
let token: string;

beforeAll(async () => {
  env = await startEnvironment({ worker: false });
  token = await env.token();
  expect((await env.request('POST', '/api/v1/languages', { token, body: { language: { id: 'nl', name: 'NL', code: 'nl' } } })).status).toBe(
    200,
  );
});
afterAll(() => env?.close());

/** One more id than a list may hold, as short as ids go (integers in v1), so the body stays under 1 MiB. */
const tooMany = (asString: boolean) => Array.from({ length: MAX_LIST_ITEMS + 1 }, (_, index) => (asString ? String(index) : index));
const refusedList = (field: string) => ({
  error: { message: expect.stringContaining(`${field} (expected at most ${MAX_LIST_ITEMS} items)`), invalid_parameters: [field] },
});

describe('when a body holds a list longer than any list may be', () => {
  it.each([
    [
      'a v1 product',
      'POST',
      '/api/v1/languages/nl/products',
      { product: { id: 'P1', name: 'p', category_ids: tooMany(false) } },
      'category_ids',
    ],
    [
      'a v1 category',
      'POST',
      '/api/v1/languages/nl/categories',
      { category: { id: 'C1', name: 'c', product_ids: tooMany(false) } },
      'product_ids',
    ],
    [
      'a v2 shopping cart',
      'PUT',
      '/api/v2/languages/nl/shopping_carts',
      { shopping_cart: { id: 'S1', profile_id: 'U1', product_ids: tooMany(true) } },
      'product_ids',
    ],
  ])('should refuse %s with 400 invalid_parameters naming the list', async (_name, method, path, body, field) => {
    const response = await env.request(method, path, { token, body });
    expect(response.status, response.text.slice(0, 300)).toBe(400);
    expect(response.body).toEqual(refusedList(field));
  });

  it('should still take a list of exactly the largest size', async () => {
    const ids = tooMany(false).slice(1);
    const response = await env.request('POST', '/api/v1/languages/nl/categories', {
      token,
      body: { category: { id: 'C2', name: 'c', product_ids: ids } },
    });
    expect(response.status, response.text.slice(0, 300)).toBe(200);
  });

  it('should refuse such a bulk line with the same error, and go on with the file', async () => {
    const lines = [
      JSON.stringify({ product: { id: 'P1', name: 'p', category_ids: tooMany(false) } }),
      JSON.stringify({ product: { id: 'P2', name: 'p' } }),
    ];
    const upload = await env.request('POST', '/api/v1/languages/nl/bulk', {
      token,
      raw: `${lines.join('\n')}\n`,
      headers: { 'content-type': 'application/x-ndjson' },
    });
    expect(upload.status, upload.text).toBe(202);
    // No worker in this environment: start one for the file.
    const { startWorker } = await import('../worker/worker.js');
    const worker = await startWorker(env.config);
    try {
      const job = await pollUntil(
        async () => (await env.request('GET', upload.headers.get('location')!, { token })).body.bulk_job,
        (value) => value?.status === 'completed',
        { timeoutMs: 30_000, intervalMs: 100 },
      );
      expect(job).toMatchObject({ status: 'completed', saved: 1, failed: 1 });
      expect(job.errors).toEqual([{ line: 1, error: refusedList('category_ids') }]);
    } finally {
      await worker.close();
    }
  });
});

describe('when the API description is read', () => {
  it('should state the largest size of every list a write body takes', async () => {
    const schemas = (await env.request('GET', '/openapi.json')).body.components.schemas as Record<string, unknown>;
    const writes = Object.entries(schemas).filter(([name]) => name.endsWith('Write'));
    expect(writes.length).toBeGreaterThan(10);
    /** Every array inside a schema, with the path to it. */
    const arrays = (node: unknown, path: string): Array<[string, Record<string, unknown>]> => {
      if (node === null || typeof node !== 'object') return [];
      const object = node as Record<string, unknown>;
      const type = object['type'];
      const own: Array<[string, Record<string, unknown>]> =
        type === 'array' || (Array.isArray(type) && type.includes('array')) ? [[path, object]] : [];
      return [...own, ...Object.entries(object).flatMap(([key, child]) => arrays(child, `${path}.${key}`))];
    };
    const found = writes.flatMap(([name, schema]) => arrays(schema, name));
    expect(found.map(([path]) => path)).toEqual(
      expect.arrayContaining([
        'ProductV1Write.properties.category_ids',
        'OrderV2Write.properties.products',
        'ProfileV1Write.properties.tags',
      ]),
    );
    for (const [path, array] of found) {
      const bound = array['maxItems'];
      expect(bound, path).toBeDefined();
      expect(bound, path).toBeLessThanOrEqual(MAX_LIST_ITEMS);
    }
  });
});
