import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitForBulkJob } from './support/bulk-jobs.js';
import { startEnvironment, type TestEnvironment } from './support/harness.js';
import { type CapturedLogs, captureLogs } from './support/log-capture.js';
import { pollUntil } from './support/poll.js';
import { type Receiver, startReceiver } from './support/receiver.js';
import { openShop, type Shop } from './support/v2-client.js';

/*
 * Logs carry no personal data (docs/operations.md): a run that writes,
 * reads, rejects and delivers profiles over every path, logged at the most
 * verbose level by the API and the worker, leaves no email, request body,
 * secret, SQL or stack trace in any line.
 */

const EMAIL = 'Log.Person+1@Example.org';
const NDJSON = { 'content-type': 'application/x-ndjson' };

let env: TestEnvironment;
let logs: CapturedLogs;
let shop: Shop;
let receiver: Receiver;
let secret: string;

beforeAll(async () => {
  logs = captureLogs('trace');
  env = await startEnvironment({ logger: logs.logger, env: { LOG_LEVEL: 'trace', WEBHOOK_ALLOW_PRIVATE: 'true' } });
  shop = await openShop(env);
  // The receiver fails its first answers, so failed deliveries are logged too.
  receiver = await startReceiver((index) => (index < 2 ? 500 : 200));
  const hook = await shop.request('PUT', '/api/v2/webhooks', { webhook: { id: 'logs', url: receiver.url } });
  expect(hook.status, hook.text).toBe(200);
  secret = hook.body.secret;

  const v2 = `/api/v2/languages/${shop.lang}`;
  expect((await shop.v1('profile', { id: 'p1', email: EMAIL, first_name: 'Annelies', telephone: '+31 6 1234' })).status).toBe(200);
  expect((await shop.request('PUT', `${v2}/profiles`, { profile: { id: 'p2', email: EMAIL.toUpperCase(), city: 'Utrecht' } })).status).toBe(
    200,
  );
  // Rejected writes: a bad birth date beside the email, and an unknown field.
  expect((await shop.request('PUT', `${v2}/profiles`, { profile: { id: 'p3', email: EMAIL, birthdate: 'soon' } })).status).toBe(400);
  expect((await shop.request('POST', `/api/v1/languages/${shop.lang}/profiles`, { profile: { email: EMAIL, shoe: 1 } })).status).toBe(400);
  // Reads that name the person: by email, and by an id that is the email.
  expect((await shop.request('GET', `/api/v1/languages/${shop.lang}/profiles?email=${encodeURIComponent(EMAIL)}`)).status).toBe(200);
  expect((await shop.request('GET', `${v2}/profiles/${encodeURIComponent(EMAIL)}`)).status).toBe(404);
  expect(
    (await shop.request('PUT', `${v2}/global_unsubscribes`, { global_unsubscribe: { email: EMAIL, unsubscribed: true } })).status,
  ).toBe(200);
  // A bulk file with a good and a bad line about the person.
  const upload = await env.request('POST', `${v2}/bulk`, {
    token: shop.token,
    headers: NDJSON,
    raw: [
      JSON.stringify({ profile: { id: 'p5', email: EMAIL } }),
      JSON.stringify({ profile: { id: 'p6', email: EMAIL, gender: 'x' } }),
    ].join('\n'),
  });
  expect(upload.status, upload.text).toBe(202);
  const job = await waitForBulkJob(env, shop.token, upload.headers.get('location')!);
  expect(job).toMatchObject({ saved: 1, failed: 1 });
  await env.drain();
  await pollUntil(
    async () => receiver.accepted().length,
    (accepted) => accepted > 0,
    { timeoutMs: 30_000 },
  );
});

afterAll(async () => {
  await receiver?.close();
  await env?.close();
});

describe('when profiles are written, read, rejected and delivered', () => {
  it('should have logged requests, jobs and failed deliveries', () => {
    const messages = new Set(logs.lines.map((line) => line['msg']));
    expect(messages).toContain('request');
    expect(messages).toContain('webhook delivery failed');
  });

  it('should log no email, in any letter case', () => {
    const text = logs.lines
      .map((line) => JSON.stringify(line))
      .join('\n')
      .toLowerCase();
    expect(text).not.toContain(EMAIL.toLowerCase());
    expect(text).not.toContain(encodeURIComponent(EMAIL).toLowerCase());
    expect(text).not.toMatch(/[a-z0-9.+]+@example\.org/);
  });

  it('should log no request body, secret, SQL or stack trace', () => {
    const text = logs.lines.map((line) => JSON.stringify(line)).join('\n');
    for (const word of ['Utrecht', '+31 6 1234', 'Annelies', secret, shop.token, 'SELECT ', 'INSERT ', '"stack"', '    at ']) {
      expect(text, word).not.toContain(word);
    }
  });
});

describe('when the queues are read', () => {
  it('should hold no email in any job, failure or key of the run', async () => {
    const redis = new Redis(env.config.REDIS_URL);
    try {
      const keys = await redis.keys(`${env.config.QUEUE_PREFIX}:*`);
      expect(keys.length).toBeGreaterThan(0);
      let text = keys.join('\n');
      for (const key of keys) {
        const type = await redis.type(key);
        if (type === 'hash') text += JSON.stringify(await redis.hgetall(key));
        else if (type === 'list') text += JSON.stringify(await redis.lrange(key, 0, -1));
        else if (type === 'zset') text += JSON.stringify(await redis.zrange(key, 0, -1));
        else if (type === 'set') text += JSON.stringify(await redis.smembers(key));
        else if (type === 'string') text += (await redis.get(key)) ?? '';
        else if (type === 'stream') text += JSON.stringify(await redis.xrange(key, '-', '+'));
      }
      expect(text.toLowerCase()).not.toContain(EMAIL.toLowerCase());
      expect(text).not.toContain('Annelies');
    } finally {
      redis.disconnect();
    }
  });
});
