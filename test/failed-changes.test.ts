import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { startEnvironment, type TestEnvironment } from './support/harness.js';

let env: TestEnvironment;
let token: string;

beforeAll(async () => {
  env = await startEnvironment();
  token = await env.token();
  await env.request('POST', '/api/v1/languages', { token, body: { language: { id: 'nl', name: 'Dutch', code: 'nl' } } });
  await env.drain();
});
afterAll(() => env.close());

describe('when a queued change can never be applied', () => {
  it('should set it aside as failed, keep applying the changes after it, and report it in sync-status', async () => {
    // A change no API request can produce: an assignment without its category.
    await env.db.query(sql.unsafe`
      INSERT INTO outbox (seq, lang_key, account_id, language_id, kind, action, record_id, payload, actor, request_id)
      SELECT nextval('write_seq'), lang_key, account_id, id, 'product', 'assign', 'P1', '{}'::jsonb, 'test', 'poison'
      FROM languages WHERE id = 'nl' AND deleted_at IS NULL
    `);
    const after = await env.request('POST', '/api/v1/languages/nl/products', {
      token,
      body: { product: { id: 'P2', name: 'Later', category_ids: ['C1'] } },
    });
    expect(after.status).toBe(200);

    const deadline = Date.now() + 30_000;
    let status: { pending: number; failed: number } = { pending: -1, failed: 0 };
    while (Date.now() < deadline) {
      status = (await env.request('GET', '/admin/api/sync-status', { headers: env.adminHeaders })).body;
      if (status.pending === 0 && status.failed > 0) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(status.pending).toBe(0);
    expect(status.failed).toBeGreaterThanOrEqual(1);
    const poisoned = await env.db.one(sql.type(z.object({ attempts: z.number(), failed: z.boolean(), last_error: z.string().nullable() }))`
      SELECT attempts, failed_at IS NOT NULL AS failed, last_error FROM outbox WHERE request_id = 'poison'
    `);
    expect(poisoned).toEqual({ attempts: 3, failed: true, last_error: expect.any(String) });
    const links = await env.db.anyFirst(sql.type(z.object({ b: z.string() }))`SELECT b FROM links WHERE a = 'P2'`);
    expect(links).toEqual(['C1']);
  });
});
