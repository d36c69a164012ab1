import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Credentials, type HttpResponse, startEnvironment, type TestEnvironment, uniqueName } from './support/harness.js';
import { pollUntil } from './support/poll.js';

/*
 * Repeated failed sign-ins on the token endpoint (per client
 * id and per source address) and on admin Basic auth are answered 429 for a
 * short window, without keeping a real client out for long
 * (docs/decisions.md, "Limits"). The API trusts one proxy hop, so each
 * request names its source address in X-Forwarded-For.
 */

const PER_SUBJECT = 5;
const PER_ADDRESS = 8;
const WINDOW_S = 3;

let env: TestEnvironment;

beforeAll(async () => {
  env = await startEnvironment({
    worker: false,
    env: {
      AUTH_FAILURE_LIMIT: String(PER_SUBJECT),
      AUTH_ADDRESS_FAILURE_LIMIT: String(PER_ADDRESS),
      AUTH_FAILURE_WINDOW_S: String(WINDOW_S),
      TRUST_PROXY_HOPS: '1',
    },
  });
});
afterAll(() => env?.close());

let nextAddress = 1;
/** A source address of its own for each use (documentation range, RFC 5737). */
const freshAddress = () => `203.0.113.${nextAddress++}`;

const requestToken = (client: { client_id: string; client_secret: string }, address: string) =>
  env.request('POST', '/oauth/token', {
    body: { grant_type: 'client_credentials', client_id: client.client_id, client_secret: client.client_secret },
    headers: { 'x-forwarded-for': address },
  });

const wrongSecret = (client: Credentials) => ({ ...client, client_secret: `${client.client_secret}-wrong` });

function expectSlowDown(response: HttpResponse) {
  expect(response.status, response.text).toBe(429);
  expect(response.body).toEqual({ error: 'slow_down', error_description: expect.stringMatching(/retry after \d+ s$/) });
  const retryAfter = Number(response.headers.get('retry-after'));
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(retryAfter).toBeLessThanOrEqual(WINDOW_S);
  expect(response.headers.get('cache-control')).toBe('no-store');
}

describe('when wrong secrets are sent for one client id', () => {
  it('should refuse that client id with 429 slow_down after the limit, for at most the window, and never on its own hosts', async () => {
    const client = await env.newClient();
    const [attacker, own, elsewhere] = [freshAddress(), freshAddress(), freshAddress()];
    expect((await requestToken(client, own)).status).toBe(200);

    for (let attempt = 1; attempt <= PER_SUBJECT; attempt += 1) {
      const failed = await requestToken(wrongSecret(client), attacker);
      expect(failed.status).toBe(401);
      expect(failed.body.error).toBe('invalid_client');
    }
    const lastCounted = Date.now();
    expectSlowDown(await requestToken(wrongSecret(client), attacker));
    // Refused before the secret is looked at: the right one gets the same answer.
    expectSlowDown(await requestToken(client, attacker));
    // A host that has signed in as this client before is not kept out by failures elsewhere ...
    expect((await requestToken(client, own)).status).toBe(200);
    // ... a new one is, for the rest of the window.
    expectSlowDown(await requestToken(client, elsewhere));

    // The attack goes on: refused attempts are not counted, so they do not make the window longer.
    for (let attempt = 0; attempt < 10; attempt += 1) expectSlowDown(await requestToken(wrongSecret(client), attacker));

    const served = await pollUntil(
      () => requestToken(client, elsewhere),
      (response) => response.status === 200,
      { timeoutMs: 10_000, intervalMs: 100 },
    );
    expect(served.status).toBe(200);
    expect(Date.now() - lastCounted).toBeLessThanOrEqual((WINDOW_S + 1.5) * 1_000);
    expect((await requestToken(client, attacker)).status).toBe(200);
  });

  it('should not let one client id be locked out by failures for another', async () => {
    const [victim, other] = [await env.newClient(), await env.newClient()];
    const attacker = freshAddress();
    for (let attempt = 0; attempt < PER_SUBJECT; attempt += 1) await requestToken(wrongSecret(other), attacker);
    expectSlowDown(await requestToken(other, freshAddress()));
    expect((await requestToken(victim, freshAddress())).status).toBe(200);
  });
});

describe('when one address sends wrong secrets for many client ids', () => {
  it('should refuse that address with 429 after the limit, and no other', async () => {
    const client = await env.newClient();
    const attacker = freshAddress();
    for (let attempt = 0; attempt < PER_ADDRESS; attempt += 1) {
      const failed = await requestToken({ client_id: uniqueName('guess'), client_secret: 'guess' }, attacker);
      expect(failed.status).toBe(401);
    }
    expectSlowDown(await requestToken({ client_id: uniqueName('guess'), client_secret: 'guess' }, attacker));
    expectSlowDown(await requestToken(client, attacker));
    expect((await requestToken(client, freshAddress())).status).toBe(200);
  });
});

describe('when wrong admin passwords are sent', () => {
  const admin = (password: string, address: string) =>
    env.request('GET', '/admin/api/sync-status', {
      headers: { authorization: `Basic ${Buffer.from(`admin:${password}`).toString('base64')}`, 'x-forwarded-for': address },
    });

  it('should refuse further sign-ins with 429 for at most the window, except from an address that signed in before', async () => {
    const password = env.config.ADMIN_PASSWORD!;
    const [attacker, operator] = [freshAddress(), freshAddress()];
    expect((await admin(password, operator)).status).toBe(200);

    for (let attempt = 0; attempt < PER_SUBJECT; attempt += 1) expect((await admin('guess', attacker)).status).toBe(401);
    const lastCounted = Date.now();
    const refused = await admin(password, attacker);
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual({ error: expect.stringMatching(/^Too many failed sign-ins: retry after \d+ s$/) });
    expect(Number(refused.headers.get('retry-after'))).toBeLessThanOrEqual(WINDOW_S);
    expect((await admin(password, freshAddress())).status).toBe(429);
    expect((await admin(password, operator)).status).toBe(200);
    // A browser's first request carries no credentials (to get the prompt): still a 401, never counted.
    expect(
      (await env.request('GET', '/admin/api/sync-status', { headers: { 'x-forwarded-for': attacker } })).headers.get('www-authenticate'),
    ).toMatch(/^Basic/);

    await sleep(Math.max(0, lastCounted + WINDOW_S * 1_000 - Date.now()));
    const served = await pollUntil(
      () => admin(password, attacker),
      (response) => response.status === 200,
      { timeoutMs: 5_000, intervalMs: 100 },
    );
    expect(served.status).toBe(200);
    expect(Date.now() - lastCounted).toBeLessThanOrEqual((WINDOW_S + 1.5) * 1_000);
  });
});

/*
 * Attempts sent at once: each takes its place before its credentials are
 * looked at, so they cannot all pass a check that none of them has been
 * counted in yet (docs/consistency.md, "Failed sign-ins").
 */
describe('when many wrong credentials arrive at once', () => {
  const AT_ONCE = 32;

  function expectAtMostLimitFailed(answers: HttpResponse[], limit: number) {
    const statuses = answers.map((answer) => answer.status);
    const failed = statuses.filter((status) => status === 401).length;
    expect(failed).toBeGreaterThanOrEqual(1);
    expect(failed).toBeLessThanOrEqual(limit);
    expect(statuses.filter((status) => status === 429).length).toBe(AT_ONCE - failed);
  }

  it('should answer at most the limit of guesses for one client id with 401, the rest with 429, and count them all', async () => {
    const client = await env.newClient();
    const attacker = freshAddress();
    const answers = await Promise.all(Array.from({ length: AT_ONCE }, () => requestToken(wrongSecret(client), attacker)));
    expectAtMostLimitFailed(answers, PER_SUBJECT);
    for (const answer of answers.filter((item) => item.status === 429)) expectSlowDown(answer);
    // Every guess let through was counted: the next one is refused for the failures.
    expectSlowDown(await requestToken(wrongSecret(client), attacker));
  });

  it('should answer at most the limit of guesses from one address with 401, for any client ids', async () => {
    const attacker = freshAddress();
    const answers = await Promise.all(
      Array.from({ length: AT_ONCE }, () => requestToken({ client_id: uniqueName('guess'), client_secret: 'guess' }, attacker)),
    );
    expectAtMostLimitFailed(answers, PER_ADDRESS);
  });

  it('should answer at most the limit of wrong admin passwords with 401', async () => {
    const attacker = freshAddress();
    const answers = await Promise.all(
      Array.from({ length: AT_ONCE }, () =>
        env.request('GET', '/admin/api/sync-status', {
          headers: { authorization: `Basic ${Buffer.from('admin:guess').toString('base64')}`, 'x-forwarded-for': attacker },
        }),
      ),
    );
    expectAtMostLimitFailed(answers, PER_SUBJECT);
  });
});
