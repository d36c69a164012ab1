import { sql } from 'slonik';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEnvironment, type TestEnvironment } from './support/harness.js';
import { pollUntil } from './support/poll.js';
import { type Received, type Receiver, startReceiver } from './support/receiver.js';
import { openShop, type Shop } from './support/v2-client.js';

/*
 * Webhook deliveries (interface §23.2-23.4) against the real API, worker,
 * Postgres and Redis, to real HTTP receivers on 127.0.0.1
 * (WEBHOOK_ALLOW_PRIVATE, which also allows http). Retries start after 50 ms
 * here instead of 5 s.
 */

let env: TestEnvironment;
const receivers: Receiver[] = [];

beforeAll(async () => {
  env = await startEnvironment({ env: { WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_RETRY_BASE_MS: '50' } });
});
afterAll(async () => {
  for (const receiver of receivers) await receiver.close();
  await env.close();
});

async function receiver(answer?: Parameters<typeof startReceiver>[0]) {
  const started = await startReceiver(answer);
  receivers.push(started);
  return started;
}

async function createWebhook(shop: Shop, id: string, url: string, extra: Record<string, unknown> = {}) {
  const response = await shop.request('PUT', '/api/v2/webhooks', { webhook: { id, url, ...extra } });
  expect(response.status, response.text).toBe(200);
  return response.body.secret as string;
}

/** The feed's entry ids after `cursor`, following next_cursor to the end. */
async function feedIds(shop: Shop, cursor: string, kinds = ''): Promise<string[]> {
  const ids: string[] = [];
  let next = cursor;
  for (;;) {
    const page = await shop.get(`/changes?limit=1000&after=${next}${kinds}`);
    expect(page.status, page.text).toBe(200);
    ids.push(...page.body.data.map((entry: any) => entry.id));
    next = page.body.meta.next_cursor;
    if (!page.body.meta.has_more) return ids;
  }
}

const entryIds = (requests: Received[]) => requests.flatMap((request) => request.body.data.map((entry: any) => entry.id as string));

/** Where the feed stands once the language's own creation is applied: a webhook created now starts there. */
async function headCursor(shop: Shop): Promise<string> {
  await env.drain();
  return (await shop.get('/changes?from=now')).body.meta.next_cursor;
}

async function writeProducts(shop: Shop, prefix: string, count: number) {
  for (let start = 0; start < count; start += 10) {
    await Promise.all(
      Array.from({ length: Math.min(10, count - start) }, (_, offset) =>
        shop.save('product', { id: `${prefix}${start + offset}`, name: 'n' }),
      ),
    );
  }
  await env.drain();
}

describe('when the receiver fails, then recovers', () => {
  it('should deliver every entry once, in feed order, signed, retrying the same delivery', async () => {
    const shop = await openShop(env);
    const hook = await receiver((index) => (index < 3 ? 500 : 200));
    const cursor = await headCursor(shop);
    const secret = await createWebhook(shop, 'orders', hook.url);
    await writeProducts(shop, 'p', 130);
    const expected = await feedIds(shop, cursor);
    expect(expected.length).toBeGreaterThanOrEqual(130);

    const seen = await pollUntil(
      async () => entryIds(hook.accepted()),
      (ids) => ids.length >= expected.length,
      { timeoutMs: 30_000 },
    );
    expect(seen).toEqual(expected);

    const verifier = new Webhook(secret);
    for (const request of hook.requests) {
      expect(request.headers['content-type']).toBe('application/json');
      expect(() => verifier.verify(request.text, request.headers)).not.toThrow();
      expect(request.body).toMatchObject({ type: 'changes', webhook_id: 'orders', language_id: shop.lang });
      expect(request.body.data.length).toBeGreaterThanOrEqual(1);
      expect(request.body.data.length).toBeLessThanOrEqual(100);
    }
    // The failed attempts were the first delivery, sent again as itself.
    const firstId = hook.requests[0]!.headers['webhook-id'];
    expect(hook.requests.slice(0, 4).map((request) => request.headers['webhook-id'])).toEqual([firstId, firstId, firstId, firstId]);
    expect(hook.requests.slice(0, 4).map((request) => request.text)).toEqual(Array(4).fill(hook.requests[0]!.text));
    // next_cursor of one delivery is where the feed resumes after its last entry.
    const last = hook.accepted().at(-1)!.body;
    const after = await shop.get(`/changes?after=${last.next_cursor}`);
    expect(after.body.data).toEqual([]);

    const webhook = await pollUntil(
      async () => (await shop.request('GET', '/api/v2/webhooks/orders')).body,
      (body) => body.status === 'active',
      { timeoutMs: 10_000 },
    );
    expect(webhook).toMatchObject({ status: 'active', failing_since: null, active: true });
  });
});

describe('when a webhook filters by kinds', () => {
  it('should deliver only entries of those kinds, in order', async () => {
    const shop = await openShop(env);
    const hook = await receiver();
    const cursor = await headCursor(shop);
    await createWebhook(shop, 'cats', hook.url, { kinds: ['category'] });
    await shop.save('product', { id: 'x1', name: 'n' });
    await shop.save('category', { id: 'c1', name: 'n' });
    await shop.save('category', { id: 'c2', name: 'm' });
    await env.drain();
    const expected = await feedIds(shop, cursor, '&kinds=category');
    expect(expected.length).toBeGreaterThanOrEqual(2);
    const seen = await pollUntil(
      async () => entryIds(hook.accepted()),
      (ids) => ids.length >= expected.length,
      { timeoutMs: 20_000 },
    );
    expect(seen).toEqual(expected);
    expect(hook.accepted().flatMap((request) => request.body.data.map((entry: any) => entry.kind))).toEqual(expected.map(() => 'category'));
  });
});

describe('when the receiver answers 410', () => {
  it('should disable the webhook at once, and resume losing nothing when it is made active again', async () => {
    const shop = await openShop(env);
    const hook = await receiver(() => 410);
    const cursor = await headCursor(shop);
    await createWebhook(shop, 'gone', hook.url);
    await shop.save('product', { id: 'g1', name: 'n' });
    await env.drain();
    const disabled = await pollUntil(
      async () => (await shop.request('GET', '/api/v2/webhooks/gone')).body,
      (body) => body.status === 'disabled',
      { timeoutMs: 20_000 },
    );
    expect(disabled).toMatchObject({ status: 'disabled', active: false, disabled_reason: expect.stringContaining('410') });
    const sentBefore = hook.requests.length;
    expect(sentBefore).toBe(1);

    await shop.save('product', { id: 'g2', name: 'n' });
    await env.drain();
    hook.answer = () => 200;
    const enabled = await shop.request('PUT', '/api/v2/webhooks', { webhook: { id: 'gone', url: hook.url, active: true } });
    expect(enabled.body).toMatchObject({ status: 'active', disabled_reason: null });
    const expected = await feedIds(shop, cursor);
    const seen = await pollUntil(
      async () => entryIds(hook.accepted()),
      (ids) => ids.length >= expected.length,
      { timeoutMs: 20_000 },
    );
    expect(seen).toEqual(expected);
    // The delivery refused with 410 was sent again as itself.
    expect(hook.accepted()[0]!.headers['webhook-id']).toBe(hook.requests[0]!.headers['webhook-id']);
  });
});

describe('when a webhook has been failing for 24 hours', () => {
  it('should be disabled at its next failure, saying why', async () => {
    const shop = await openShop(env);
    const hook = await receiver(() => 500);
    await headCursor(shop);
    await createWebhook(shop, 'tired', hook.url);
    await shop.save('product', { id: 't1', name: 'n' });
    await pollUntil(
      async () => (await shop.request('GET', '/api/v2/webhooks/tired')).body.status,
      (status) => status === 'failing',
      { timeoutMs: 20_000 },
    );
    // The day of failures is set in Postgres rather than waited for.
    await env.db.query(sql.unsafe`UPDATE webhooks SET failing_since = now() - interval '24 hours 1 second' WHERE id = 'tired'`);
    const disabled = await pollUntil(
      async () => (await shop.request('GET', '/api/v2/webhooks/tired')).body,
      (body) => body.status === 'disabled',
      { timeoutMs: 20_000 },
    );
    expect(disabled).toMatchObject({ active: false, disabled_reason: 'deliveries failed for 24 hours' });
  });
});

describe('when one receiver never answers', () => {
  it("should not hold back another webhook's deliveries", async () => {
    const shop = await openShop(env);
    const hanging = await receiver(() => 'hang');
    const healthy = await receiver();
    const cursor = await headCursor(shop);
    await createWebhook(shop, 'slow', hanging.url);
    await createWebhook(shop, 'fast', healthy.url);
    await shop.save('product', { id: 'h1', name: 'n' });
    await env.drain();
    await pollUntil(
      async () => hanging.requests.length,
      (count) => count > 0,
      { timeoutMs: 20_000 },
    );
    // While the slow receiver holds its first delivery, more is written and the other webhook gets all of it.
    await writeProducts(shop, 'h-more-', 20);
    const expected = await feedIds(shop, cursor);
    const seen = await pollUntil(
      async () => entryIds(healthy.accepted()),
      (ids) => ids.length >= expected.length,
      { timeoutMs: 20_000 },
    );
    expect(seen).toEqual(expected);
    expect(hanging.requests.length).toBe(1);
    expect(hanging.requests[0]!.answered).toBeNull();
  });
});

describe('when the secret is rotated', () => {
  it('should sign with the new secret and, beside it, the old one', async () => {
    const shop = await openShop(env);
    const hook = await receiver();
    const old = await createWebhook(shop, 'rot', hook.url);
    const rotated = await shop.request('POST', '/api/v2/webhooks/rot/rotate-secret');
    expect(rotated.status, rotated.text).toBe(200);
    const secret = rotated.body.secret as string;
    expect(secret).toMatch(/^whsec_/);
    expect(secret).not.toBe(old);
    expect((await shop.request('GET', '/api/v2/webhooks/rot')).body.secret).toBeUndefined();
    await shop.save('product', { id: 'r1', name: 'n' });
    const [request] = await pollUntil(
      async () => hook.accepted(),
      (accepted) => accepted.length > 0,
      { timeoutMs: 20_000 },
    );
    expect(request!.headers['webhook-signature']!.split(' ')).toHaveLength(2);
    expect(() => new Webhook(secret).verify(request!.text, request!.headers)).not.toThrow();
    expect(() => new Webhook(old).verify(request!.text, request!.headers)).not.toThrow();
  });
});

describe('when a webhook is pinged', () => {
  it('should send a signed ping now and answer what came back', async () => {
    const shop = await openShop(env);
    const hook = await receiver(() => 204);
    const secret = await createWebhook(shop, 'pinged', hook.url);
    const response = await shop.request('POST', '/api/v2/webhooks/pinged/ping');
    expect(response.status, response.text).toBe(200);
    expect(response.body).toEqual({ status_code: 204, duration_ms: expect.any(Number), error: null });
    const ping = hook.requests.find((request) => request.body.type === 'ping')!;
    expect(ping.text).toBe('{"type":"ping"}');
    expect(() => new Webhook(secret).verify(ping.text, ping.headers)).not.toThrow();
  });

  it('should answer status_code null when nothing answers', async () => {
    const shop = await openShop(env);
    const gone = await receiver();
    await gone.close();
    await createWebhook(shop, 'nobody', gone.url);
    const response = await shop.request('POST', '/api/v2/webhooks/nobody/ping');
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ status_code: null, error: expect.any(String) });
  });
});

describe('when deliveries were made', () => {
  it('should list them newest first, and send a delivered one again as itself', async () => {
    const shop = await openShop(env);
    const hook = await receiver((index) => (index === 0 ? 503 : 200));
    await headCursor(shop);
    await createWebhook(shop, 'logged', hook.url);
    await shop.save('product', { id: 'l1', name: 'n' });
    await pollUntil(
      async () => hook.accepted(),
      (accepted) => accepted.length > 0,
      { timeoutMs: 20_000 },
    );
    await shop.save('product', { id: 'l2', name: 'n' });
    await pollUntil(
      async () => hook.accepted(),
      (accepted) => accepted.length > 1,
      { timeoutMs: 20_000 },
    );
    const list = await shop.request('GET', '/api/v2/webhooks/logged/deliveries');
    expect(list.status, list.text).toBe(200);
    expect(list.body.meta.total).toBe(2);
    const [newest, oldest] = list.body.data;
    expect(oldest).toMatchObject({
      type: 'changes',
      language_id: shop.lang,
      entries: 1,
      attempts: 2,
      status: 'delivered',
      last_status_code: 200,
      last_error: null,
      next_attempt_at: null,
    });
    expect(oldest.id).toBe(hook.requests[0]!.headers['webhook-id']);
    expect(oldest.first_cursor).toBe(hook.requests[0]!.body.data[0].cursor);
    expect(newest.first_cursor).toBe(hook.accepted()[1]!.body.data[0].cursor);

    const again = await shop.request('POST', `/api/v2/webhooks/logged/deliveries/${oldest.id}/redeliver`);
    expect(again.status, again.text).toBe(202);
    const resent = await pollUntil(
      async () => hook.accepted(),
      (accepted) => accepted.length > 2,
      { timeoutMs: 20_000 },
    );
    expect(resent[2]!.headers['webhook-id']).toBe(oldest.id);
    expect(resent[2]!.text).toBe(hook.requests[0]!.text);
    const missing = await shop.request('POST', '/api/v2/webhooks/logged/deliveries/00000000-0000-0000-0000-000000000000/redeliver');
    expect(missing.status).toBe(404);
  });
});

describe('when a bulk job finishes', () => {
  it('should send bulk_job.finished with the job as GET answers it, without errors', async () => {
    const shop = await openShop(env);
    const hook = await receiver();
    await headCursor(shop);
    await createWebhook(shop, 'bulk', hook.url, { events: ['bulk_job.finished'] });
    const lines = ['{"product":{"id":"B1","name":"x"}}', '{"product":{"id":"B2","name":"y"}}', '{"product":{}}'];
    const upload = await env.request('POST', `/api/v2/languages/${shop.lang}/bulk`, {
      token: shop.token,
      raw: `${lines.join('\n')}\n`,
      headers: { 'content-type': 'application/x-ndjson' },
    });
    expect(upload.status, upload.text).toBe(202);
    const jobId = upload.body.id ?? upload.body.bulk_job?.id;
    const [request] = await pollUntil(
      async () => hook.accepted(),
      (accepted) => accepted.length > 0,
      { timeoutMs: 30_000 },
    );
    const job = await env.request('GET', `/api/v2/languages/${shop.lang}/bulk/${jobId}`, { token: shop.token });
    const { errors, lines_applied: appliedNow, ...withoutErrors } = job.body;
    expect(errors).toBeDefined();
    // lines_applied as it was when the job ended: its changes may still have been applying then.
    const { lines_applied: appliedThen, ...sent } = request!.body.data;
    expect({ ...request!.body, data: sent }).toEqual({
      type: 'bulk_job.finished',
      webhook_id: 'bulk',
      language_id: shop.lang,
      data: withoutErrors,
    });
    expect(appliedThen).toBeLessThanOrEqual(appliedNow);
    expect(request!.body.data).toMatchObject({ status: 'completed', saved: 2, failed: 1 });
    // Only the event asked for: no changes were sent.
    expect(hook.requests.every((received) => received.body.type === 'bulk_job.finished')).toBe(true);
    const list = await shop.request('GET', '/api/v2/webhooks/bulk/deliveries');
    expect(list.body.data).toEqual([
      expect.objectContaining({ type: 'bulk_job.finished', entries: 0, first_cursor: null, status: 'delivered' }),
    ]);
  });
});
