import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWorker } from '../worker/worker.js';
import { startEnvironment, type TestEnvironment } from './support/harness.js';
import { pollUntil } from './support/poll.js';
import { startReceiver } from './support/receiver.js';
import { openShop } from './support/v2-client.js';

/*
 * Managing webhooks (interface §23.1) over HTTP against the real API and
 * Postgres. Every response is also checked against /openapi.json by the harness.
 */

let env: TestEnvironment;

beforeAll(async () => {
  env = await startEnvironment({ worker: false, env: { WEBHOOK_ALLOW_PRIVATE: 'true' } });
});
afterAll(async () => {
  await env.close();
});

const hook = (id: string, extra: Record<string, unknown> = {}) => ({ webhook: { id, url: 'http://127.0.0.1:9/hook', ...extra } });

describe('when a webhook is created', () => {
  it('should answer it with its secret once, and never again', async () => {
    const shop = await openShop(env);
    const created = await shop.request('PUT', '/api/v2/webhooks', hook('w1', { kinds: ['product'] }));
    expect(created.status, created.text).toBe(200);
    expect(created.body).toMatchObject({
      id: 'w1',
      url: 'http://127.0.0.1:9/hook',
      languages: null,
      kinds: ['product'],
      events: ['changes', 'bulk_job.finished'],
      active: true,
      status: 'active',
      failing_since: null,
      disabled_reason: null,
    });
    const secret = created.body.secret as string;
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
    expect(Buffer.from(secret.slice(6), 'base64').length).toBeGreaterThanOrEqual(24);

    const updated = await shop.request('PUT', '/api/v2/webhooks', hook('w1', { active: false }));
    expect(updated.status).toBe(200);
    expect(updated.body).toMatchObject({ kinds: null, active: false, status: 'disabled' });
    expect(updated.body.secret).toBeUndefined();
    const one = await shop.request('GET', '/api/v2/webhooks/w1');
    expect(one.status).toBe(200);
    expect(one.body.secret).toBeUndefined();
    const list = await shop.request('GET', '/api/v2/webhooks');
    expect(list.status).toBe(200);
    expect(list.body.meta).toEqual({ current_page: 1, per_page: expect.any(Number), total: 1 });
    expect(list.body.data.map((item: any) => item.id)).toEqual(['w1']);
    expect(list.text).not.toContain(secret.slice(6));
    expect(one.text).not.toContain(secret.slice(6));
  });

  it('should delete it (204), then answer 404', async () => {
    const shop = await openShop(env);
    await shop.request('PUT', '/api/v2/webhooks', hook('gone'));
    expect((await shop.request('DELETE', '/api/v2/webhooks/gone')).status).toBe(204);
    const after = await shop.request('GET', '/api/v2/webhooks/gone');
    expect(after.status).toBe(404);
    expect(after.body).toEqual({ error: 'Webhook not found' });
    expect((await shop.request('DELETE', '/api/v2/webhooks/gone')).status).toBe(404);
  });
});

describe('when the body is wrong', () => {
  it.each([
    [{ webhook: { url: 'http://127.0.0.1:9/' } }, 'missing_parameters', ['id']],
    [{ webhook: { id: 'x' } }, 'missing_parameters', ['url']],
    [{ webhook: { id: 'x', url: 'not a url' } }, 'invalid_parameters', ['url']],
    [{ webhook: { id: 'x', url: 'ftp://127.0.0.1/' } }, 'invalid_parameters', ['url']],
    [{ webhook: { id: 'x', url: 'http://127.0.0.1:9/', kinds: ['nope'] } }, 'invalid_parameters', ['kinds[0]']],
    [{ webhook: { id: 'x', url: 'http://127.0.0.1:9/', events: ['other'] } }, 'invalid_parameters', ['events[0]']],
    [{ webhook: { id: 'x', url: 'http://127.0.0.1:9/', colour: 'red' } }, 'unknown_parameters', ['colour']],
  ])('should answer 400 naming the parameter (%j)', async (body, errorClass, names) => {
    const shop = await openShop(env);
    const response = await shop.request('PUT', '/api/v2/webhooks', body);
    expect(response.status, response.text).toBe(400);
    expect(response.body.error[errorClass]).toEqual(names);
  });
});

describe("when another account's token is used", () => {
  it('should answer 404 on every webhook path and list nothing', async () => {
    const owner = await openShop(env);
    const other = await openShop(env);
    expect((await owner.request('PUT', '/api/v2/webhooks', hook('mine'))).status).toBe(200);
    expect((await other.request('GET', '/api/v2/webhooks/mine')).status).toBe(404);
    expect((await other.request('DELETE', '/api/v2/webhooks/mine')).status).toBe(404);
    expect((await other.request('GET', '/api/v2/webhooks')).body.data).toEqual([]);
    for (const [method, path] of [
      ['POST', '/api/v2/webhooks/mine/rotate-secret'],
      ['POST', '/api/v2/webhooks/mine/ping'],
      ['GET', '/api/v2/webhooks/mine/deliveries'],
      ['POST', '/api/v2/webhooks/mine/deliveries/00000000-0000-0000-0000-000000000000/redeliver'],
    ] as const) {
      const response = await other.request(method, path);
      expect(response.status, `${method} ${path}`).toBe(404);
      expect(response.body).toEqual({ error: 'Webhook not found' });
    }
    expect((await owner.request('GET', '/api/v2/webhooks/mine')).status).toBe(200);
  });
});

describe('when no worker ran while changes were written', () => {
  it('should deliver them all once a worker starts: what is owed is in Postgres, not in queued jobs', async () => {
    const shop = await openShop(env);
    const receiver = await startReceiver();
    try {
      const created = await shop.request('PUT', '/api/v2/webhooks', { webhook: { id: 'later', url: receiver.url } });
      expect(created.status).toBe(200);
      for (const id of ['a', 'b', 'c']) await shop.save('product', { id, name: id });
      const worker = await startWorker(env.config);
      try {
        const delivered = await pollUntil(
          async () =>
            receiver
              .accepted()
              .flatMap((request) =>
                request.body.data.filter((entry: any) => entry.kind === 'product').map((entry: any) => entry.record_id),
              ),
          (ids) => ids.length >= 3,
          { timeoutMs: 20_000 },
        );
        // (The language's own creation is applied by the worker too, so after the webhook: it is delivered first.)
        expect(delivered).toEqual(['a', 'b', 'c']);
      } finally {
        await worker.close();
      }
    } finally {
      await receiver.close();
    }
  });
});
