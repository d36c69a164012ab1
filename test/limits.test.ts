import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ApiProcess, spawnApi } from './support/api-process.js';
import { CLI_TIMEOUT, runCli } from './support/cli.js';
import { type Credentials, type HttpResponse, httpRequest, startEnvironment, type TestEnvironment } from './support/harness.js';
import { pollUntil } from './support/poll.js';
import { freePort, startRedis, stopProcess } from './support/processes.js';

/*
 * Per-account request limits, kept in Redis so that they
 * hold across API processes. Two API processes (spawned from the real entry
 * point) and a Redis of the test's own, which the last test stops.
 */

const RPS = 5;
const BURST = 20;

let redis: ChildProcess;
let env: TestEnvironment;
let apis: ApiProcess[] = [];

beforeAll(async () => {
  const port = await freePort();
  redis = await startRedis(port);
  env = await startEnvironment({
    worker: false,
    env: { REDIS_URL: `redis://127.0.0.1:${port}`, RATE_LIMIT_RPS: String(RPS), RATE_LIMIT_BURST: String(BURST) },
  });
  apis = await Promise.all([spawnApi(env.config), spawnApi(env.config)]);
}, 120_000);

afterAll(async () => {
  for (const api of apis) await stopProcess(api.child);
  await env?.close();
  if (redis) await stopProcess(redis);
});

async function tokenOf(client: Credentials): Promise<string> {
  const response = await env.request('POST', '/oauth/token', {
    body: { grant_type: 'client_credentials', client_id: client.client_id, client_secret: client.client_secret },
  });
  expect(response.status, response.text).toBe(200);
  return response.body.access_token;
}

/** `count` reads of the account's languages, sent at once, alternating between the two API processes. */
function burstOfReads(token: string, count: number): Promise<Array<{ api: number; response: HttpResponse }>> {
  return Promise.all(
    Array.from({ length: count }, async (_, index) => ({
      api: index % 2,
      response: await httpRequest(apis[index % 2]!.baseUrl, 'GET', '/api/v2/languages', { token }),
    })),
  );
}

const limitHeaders = (response: HttpResponse) => ({
  limit: response.headers.get('ratelimit-limit'),
  remaining: response.headers.get('ratelimit-remaining'),
  reset: response.headers.get('ratelimit-reset'),
});

describe('when an account sends more than its limit through two API processes', () => {
  it('should answer 429 with Retry-After and the RateLimit headers from both, while another account is unaffected', async () => {
    const [flooding, quiet] = await Promise.all([env.newClient().then(tokenOf), env.newClient().then(tokenOf)]);

    const [flood, others] = await Promise.all([burstOfReads(flooding, 60), burstOfReads(quiet, 4)]);

    const refused = flood.filter(({ response }) => response.status === 429);
    const served = flood.filter(({ response }) => response.status === 200);
    expect(served.length + refused.length).toBe(flood.length);
    // The limit holds across processes: RPS in each second, and BURST once per minute on top. The 60
    // requests normally land in one or two seconds; up to three are allowed for a loaded machine. Limits
    // kept by each process would serve at least 2 * (RPS + BURST) = 50.
    expect(served.length).toBeGreaterThanOrEqual(RPS + BURST);
    expect(served.length).toBeLessThanOrEqual(3 * RPS + BURST);
    expect(new Set(refused.map(({ api }) => api))).toEqual(new Set([0, 1]));
    for (const { response } of refused) {
      expect(Number(response.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(limitHeaders(response)).toEqual({ limit: String(RPS), remaining: '0', reset: expect.stringMatching(/^[1-9]\d*$/) });
      expect(response.headers.get('ratelimit-policy')).toBe(`${RPS};w=1, ${BURST};w=60`);
      expect(response.body).toEqual({ error: { message: expect.stringMatching(/^Too many requests: .*retry after \d+ s$/) } });
    }
    for (const { response } of served) {
      expect(limitHeaders(response)).toEqual({
        limit: String(RPS),
        remaining: expect.stringMatching(/^\d+$/),
        reset: expect.stringMatching(/^[1-9]\d*$/),
      });
    }

    // The other account, at the same moment, through the same processes.
    expect(others.map(({ response }) => response.status)).toEqual([200, 200, 200, 200]);
    for (const { response } of others) expect(limitHeaders(response).limit).toBe(String(RPS));

    // Once its window has passed, the flooding account is served again.
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    const later = await httpRequest(apis[0]!.baseUrl, 'GET', '/api/v2/languages', { token: flooding });
    expect(later.status).toBe(200);
  });

  it('should limit writes and bulk uploads of v1 and v2 alike, answering errors with the headers too', async () => {
    const token = await env.newClient().then(tokenOf);
    const attempts = await Promise.all(
      Array.from({ length: 2 * (RPS + BURST) }, (_, index) => {
        const base = apis[index % 2]!.baseUrl;
        switch (index % 3) {
          case 0:
            return httpRequest(base, 'POST', '/api/v1/languages', { token, body: { language: { id: 'nl', name: 'NL', code: 'nl' } } });
          case 1:
            return httpRequest(base, 'PUT', '/api/v2/languages/xx/products', { token, body: { product: { id: 'P1' } } });
          default:
            return httpRequest(base, 'POST', '/api/v1/languages/xx/bulk', {
              token,
              raw: '{"product":{"id":"P1","name":"p"}}\n',
              headers: { 'content-type': 'application/x-ndjson' },
            });
        }
      }),
    );
    const statuses = new Set(attempts.map((response) => response.status));
    expect(statuses.has(429)).toBe(true);
    // The unknown language's 404 is counted too, and carries the headers like every answer of a limited route.
    expect(statuses.has(404)).toBe(true);
    for (const response of attempts) expect(limitHeaders(response).limit).toBe(String(RPS));
  });
});

describe('when an operator sets an account limit with the CLI', { timeout: 3 * CLI_TIMEOUT }, () => {
  let client: Credentials;
  let token: string;

  beforeAll(async () => {
    client = await env.newClient();
    token = await tokenOf(client);
  });

  const limitSeen = async (api: number) => limitHeaders(await httpRequest(apis[api]!.baseUrl, 'GET', '/api/v2/languages', { token })).limit;

  it('should apply the override in every running API process without a restart', async () => {
    expect(await limitSeen(0)).toBe(String(RPS));
    const set = await runCli(env.config.DATABASE_URL, 'set-limit', '--account', client.account, '--rps', '2', '--burst', '0');
    expect(set, set.stderr).toMatchObject({ code: 0 });
    expect(JSON.parse(set.stdout)).toEqual({ account: client.account, rps: 2, burst: 0 });

    // Every API process learns it by Postgres NOTIFY; allow for its delivery.
    for (const api of [0, 1])
      expect(
        await pollUntil(
          () => limitSeen(api),
          (limit) => limit === '2',
          { timeoutMs: 5_000 },
        ),
      ).toBe('2');
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    const burst = await burstOfReads(token, 6);
    const served = burst.filter(({ response }) => response.status === 200).length;
    expect(served).toBeGreaterThanOrEqual(2);
    expect(served).toBeLessThanOrEqual(4);
    expect(burst.filter(({ response }) => response.status === 429).length).toBeGreaterThanOrEqual(2);
    expect(burst.every(({ response }) => response.headers.get('ratelimit-policy') === '2;w=1')).toBe(true);

    const reset = await runCli(env.config.DATABASE_URL, 'set-limit', '--account', client.account, '--default');
    expect(reset, reset.stderr).toMatchObject({ code: 0 });
    expect(JSON.parse(reset.stdout)).toEqual({ account: client.account, rps: null, burst: null });
    for (const api of [0, 1])
      expect(
        await pollUntil(
          () => limitSeen(api),
          (limit) => limit === String(RPS),
          { timeoutMs: 5_000 },
        ),
      ).toBe(String(RPS));
  });
});

describe('when Redis is stopped', () => {
  it('should let requests and sign-ins through, without limit headers, and count them in a metric', async () => {
    const client = await env.newClient();
    const token = await tokenOf(client);
    await stopProcess(redis);
    // Sign-ins are not refused either (their failure counts are in the same Redis).
    expect((await tokenOf(client)).length).toBeGreaterThan(0);
    expect((await env.request('GET', '/admin/api/sync-status', { headers: env.adminHeaders })).status).toBe(200);
    const attempts = await burstOfReads(token, 2 * (RPS + BURST));
    expect(attempts.map(({ response }) => response.status)).toEqual(attempts.map(() => 200));
    expect(attempts.every(({ response }) => response.headers.get('ratelimit-limit') === null)).toBe(true);

    for (const api of apis) {
      const metrics = await httpRequest(api.baseUrl, 'GET', '/metrics');
      const counted = /^sync_rate_limit_unavailable_total\{limiter="account"[^}]*\} (\d+)$/m.exec(metrics.text);
      expect(Number(counted?.[1])).toBeGreaterThanOrEqual(RPS + BURST);
    }
  });
});
