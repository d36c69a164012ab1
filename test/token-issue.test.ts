import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type Credentials, type HttpResponse, startEnvironment, type TestEnvironment } from './support/harness.js';
import { pollUntil } from './support/poll.js';

/*
 * Tokens issued per client (docs/decisions.md, "Token issuance"): a client
 * that asks for more than TOKEN_ISSUE_LIMIT tokens within
 * TOKEN_ISSUE_WINDOW_S is refused with 429 slow_down until the window ends,
 * so a flood of token requests costs neither rows nor other accounts' time.
 */

const LIMIT = 5;
/** Long enough that the 32 requests below are answered well within one window on a loaded machine. */
const WINDOW_S = 10;

let env: TestEnvironment;

beforeAll(async () => {
  env = await startEnvironment({ worker: false, env: { TOKEN_ISSUE_LIMIT: String(LIMIT), TOKEN_ISSUE_WINDOW_S: String(WINDOW_S) } });
});
afterAll(() => env?.close());

const requestToken = (client: { client_id: string; client_secret: string }) =>
  env.request('POST', '/oauth/token', {
    body: { grant_type: 'client_credentials', client_id: client.client_id, client_secret: client.client_secret },
  });

async function storedTokens(client: Credentials): Promise<number> {
  return env.db.oneFirst(sql.type(z.object({ count: z.number() }))`
    SELECT count(*)::int8 AS count FROM access_tokens t JOIN clients c ON c.id = t.client_pk WHERE c.client_id = ${client.client_id}
  `);
}

/** Whether the token opens the API (an unknown language is a 404 to a valid token, a 401 to any other). */
async function opens(token: string): Promise<boolean> {
  return (await env.request('GET', '/api/v2/languages/none', { token })).status === 404;
}

function expectRefused(answer: HttpResponse) {
  expect(answer.status, answer.text).toBe(429);
  expect(answer.body).toEqual({
    error: 'slow_down',
    error_description: expect.stringMatching(
      new RegExp(`^Too many tokens requested for this client: at most ${LIMIT} every ${WINDOW_S} s.+reuse it`),
    ),
  });
  const retryAfter = Number(answer.headers.get('retry-after'));
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(retryAfter).toBeLessThanOrEqual(WINDOW_S);
  expect(answer.headers.get('cache-control')).toBe('no-store');
}

describe('when one client asks for many tokens at once', () => {
  it('should issue its share, refuse the rest with 429 until the window ends, and store only the tokens issued', async () => {
    const client = await env.newClient();
    const other = await env.newClient(client.account);
    // Another client, of the same account too, is not affected (and the harness has read the API description before the burst).
    expect((await requestToken(other)).status).toBe(200);
    const answers = await Promise.all(Array.from({ length: 32 }, () => requestToken(client)));
    const issued = answers.filter((answer) => answer.status === 200);
    expect(issued).toHaveLength(LIMIT);
    for (const answer of answers.filter((item) => item.status !== 200)) expectRefused(answer);
    expect(await storedTokens(client)).toBe(LIMIT);
    for (const answer of issued) expect(await opens(answer.body.access_token)).toBe(true);

    expect((await requestToken(other)).status).toBe(200);

    const again = await pollUntil(
      () => requestToken(client),
      (answer) => answer.status === 200,
      { timeoutMs: (WINDOW_S + 3) * 1_000, intervalMs: 200 },
    );
    expect(again.status).toBe(200);
    expect(await storedTokens(client)).toBe(LIMIT + 1);
  });
});

describe('when wrong secrets are sent for a client', () => {
  it('should not use up the tokens of the client itself', async () => {
    const client = await env.newClient();
    for (let attempt = 0; attempt < 2 * LIMIT; attempt += 1) {
      expect((await requestToken({ ...client, client_secret: 'wrong' })).status).toBe(401);
    }
    for (let attempt = 0; attempt < LIMIT; attempt += 1) expect((await requestToken(client)).status).toBe(200);
    expectRefused(await requestToken(client));
  });
});
