import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningWorker, startWorker } from '../worker/worker.js';
import { startEnvironment, type TestEnvironment } from './support/harness.js';

/*
 * A stub applied after the write that fills it (the worker behind the API):
 * in serial order the stub came first and the write updated it, so the write's
 * own created_at, when it gave one, is the record's (interface §4, §7).
 */

let env: TestEnvironment;
let worker: RunningWorker | undefined;
let token: string;

beforeAll(async () => {
  // No worker while writing: every stub is applied after the write that fills it.
  env = await startEnvironment({ worker: false });
  token = await env.token();
  await env.request('POST', '/api/v1/languages', { token, body: { language: { id: 'nl', name: 'nl', code: 'nl' } } });
});
afterAll(async () => {
  await worker?.close();
  await env.close();
});

describe('when a stub is applied after the write that fills it', () => {
  it('should keep the created_at the write gave, and date a write without one from the stub', async () => {
    const write = (path: string, body: unknown) => env.request('POST', `/api/v1/languages/nl/${path}`, { token, body });
    expect((await write('brands', { brand: { id: 'B1', name: 'Brand', product_ids: ['given', 'not-given'] } })).status).toBe(200);
    const given = await write('products', { product: { id: 'given', name: 'Given', created_at: '2020-01-02T03:04:05Z' } });
    expect(given.body.product.created_at).toBe('2020-01-02T03:04:05.000Z');
    const notGiven = await write('products', { product: { id: 'not-given', name: 'Not given' } });
    // Given by a later update: serially too, the update sets it.
    expect((await write('brands', { brand: { id: 'B2', name: 'Brand', product_ids: ['given-later'] } })).status).toBe(200);
    expect((await write('products', { product: { id: 'given-later', name: 'Created' } })).status).toBe(200);
    expect((await write('products', { product: { id: 'given-later', name: 'Dated', created_at: '2018-01-01T00:00:00Z' } })).status).toBe(
      200,
    );
    expect((await write('products', { product: { id: 'given-later', name: 'Renamed' } })).status).toBe(200);
    expect((await write('categories', { category: { id: 'child', name: 'Child', parent_category_id: 'parent' } })).status).toBe(200);
    expect((await write('categories', { category: { id: 'parent', name: 'Parent', created_at: '2019-05-06T07:08:09Z' } })).status).toBe(
      200,
    );

    worker = await startWorker(env.config);
    await env.drain(30_000);
    const read = async (path: string) => (await env.request('GET', `/api/v2/languages/nl/${path}`, { token })).body;
    expect((await read('products/given')).created_at).toBe('2020-01-02T03:04:05.000Z');
    expect((await read('categories/parent')).created_at).toBe('2019-05-06T07:08:09.000Z');
    expect(await read('products/given-later')).toMatchObject({ name: 'Renamed', created_at: '2018-01-01T00:00:00.000Z' });
    // Without a created_at of its own, the record dates from the stub: the brand's write, before this one.
    const stubbed = (await read('products/not-given')).created_at;
    expect(Date.parse(stubbed)).toBeLessThanOrEqual(Date.parse(notGiven.body.product.created_at));
    expect((await read('products/given')).brand_id).toBe('B1');
  });
});
