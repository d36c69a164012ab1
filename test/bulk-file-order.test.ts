import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitForBulkJob } from './support/bulk-jobs.js';
import { startEnvironment, type TestEnvironment } from './support/harness.js';

/*
 * A bulk file gives one result on one starting state, whatever else writes to
 * its language meanwhile (docs/consistency.md, "A file's lines see the
 * effects of the lines before them"): a line that looks a record up (a link
 * writer, a delete) finds the stubs and cascades of the file's earlier lines,
 * even when another client's writes keep the file's changes from being the
 * language's next to apply, so that they are queued for the applier.
 */

let env: TestEnvironment;
let token: string;

const NDJSON = { 'content-type': 'application/x-ndjson' };
const LANGUAGE = 'busy';
const v2 = `/api/v2/languages/${LANGUAGE}`;

/** Lines whose outcome depends on the effects of the lines before them; ids carry the round, so rounds do not meet. */
const fileOf = (round: number) =>
  [
    // A review stubs its product; the link writer needs the product live.
    { review: { id: `r1-${round}`, product_id: `p1-${round}`, profile_id: `u1-${round}` } },
    { category: { id: `c1-${round}`, name: 'Category' } },
    { put: `products/p1-${round}/categories/c1-${round}` },
    // A product's delete cascades to its variant: deleting the variant afterwards is 404.
    { product: { id: `p2-${round}`, name: 'Product' } },
    { variant: { id: `v2-${round}`, product_id: `p2-${round}` } },
    { delete: `products/p2-${round}` },
    { delete: `variants/v2-${round}` },
    // A stub can be deleted.
    { review: { id: `r3-${round}`, product_id: `p3-${round}`, profile_id: `u1-${round}` } },
    { delete: `products/p3-${round}` },
    // A purchase event needs its order; the order's line stubs its product, which the line writer then finds.
    { order: { id: `o1-${round}`, profile_id: `u1-${round}`, ordered_at: '2026-01-01T00:00:00Z', products: [{ id: `p4-${round}` }] } },
    { purchase_event: { order_id: `o1-${round}`, profile_id: `u1-${round}`, visitor_token: 't' } },
    { put: `products/p4-${round}/categories/c1-${round}` },
  ].map((line) => JSON.stringify(line));

/** The errors the lines sent one by one get, each after the one before has taken effect. */
const EXPECTED_ERRORS = [{ line: 7, error: { error: 'Variant not found' } }];

beforeAll(async () => {
  env = await startEnvironment();
  token = await env.token();
  for (const id of [LANGUAGE, 'quiet']) {
    const response = await env.request('PUT', '/api/v2/languages', { token, body: { language: { id } } });
    expect(response.status).toBe(200);
  }
});

afterAll(async () => {
  await env?.close();
});

describe('when the lines of a file are sent one by one, each after the one before took effect', () => {
  it('should refuse only the delete of the variant its product took with it', async () => {
    const errors: Array<{ line: number; error: unknown }> = [];
    for (const [index, text] of fileOf(0).entries()) {
      const line = JSON.parse(text);
      const target =
        typeof line.put === 'string'
          ? { method: 'PUT', path: `/api/v2/languages/quiet/${line.put}` }
          : typeof line.delete === 'string'
            ? { method: 'DELETE', path: `/api/v2/languages/quiet/${line.delete}` }
            : {
                method: 'PUT',
                path: `/api/v2/languages/quiet/${{ review: 'reviews', category: 'categories', product: 'products', variant: 'variants', order: 'orders', purchase_event: 'purchase_events' }[Object.keys(line)[0]!]}`,
                body: line,
              };
      const response = await env.request(target.method, target.path, { token, body: target.body });
      expect(response.status).toBeLessThan(500);
      if (response.status >= 300) errors.push({ line: index + 1, error: response.body });
      await env.drain();
    }
    expect(errors).toEqual(EXPECTED_ERRORS);
  });
});

describe('when another client writes to the language while its files run', () => {
  it('should give every file the result of its lines sent one by one', async () => {
    let writing = true;
    let written = 0;
    // Unrelated products, two at a time, so the files' changes are seldom the language's next to apply.
    const writers = Array.from({ length: 2 }, async (_, writer) => {
      while (writing) {
        const response = await env.request('PUT', `${v2}/products`, {
          token,
          body: { product: { id: `other-${writer}-${written}`, name: 'Unrelated' } },
        });
        expect(response.status).toBe(200);
        written += 1;
      }
    });
    try {
      for (let round = 1; round <= 3; round += 1) {
        const response = await env.request('POST', `${v2}/bulk`, { token, raw: fileOf(round).join('\n'), headers: NDJSON });
        expect(response.status, response.text).toBe(202);
        const job = await waitForBulkJob(env, token, response.headers.get('location')!);
        expect({ round, status: job.status, errors: job.errors }).toEqual({ round, status: 'completed', errors: EXPECTED_ERRORS });
        const category = await env.request('GET', `${v2}/categories/c1-${round}/products`, { token });
        expect(category.body.data.map((product: { id: string }) => product.id).sort()).toEqual([`p1-${round}`, `p4-${round}`]);
      }
    } finally {
      writing = false;
      await Promise.all(writers);
    }
    expect(written).toBeGreaterThan(0);
  }, 240_000);
});
