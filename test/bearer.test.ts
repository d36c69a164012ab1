import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { revokeClient } from '../auth/client.repository.js';
import { sha256 } from '../platform/crypto.js';
import { type HttpResponse, startEnvironment, type TestEnvironment } from './support/harness.js';
import { pollUntil } from './support/poll.js';

let env: TestEnvironment;

beforeAll(async () => {
  env = await startEnvironment({ worker: false });
});
afterAll(() => env.close());

const languageBody = { language: { id: 'x', name: 'X', code: 'x' } };

/** The two guarded operations every case is tried against; `authorization` is the raw header (or none). */
const operations: Array<[string, (authorization: string | undefined) => Promise<HttpResponse>]> = [
  [
    'POST /api/v1/languages/',
    (authorization) => env.request('POST', '/api/v1/languages/', { body: languageBody, headers: authorization ? { authorization } : {} }),
  ],
  [
    'DELETE /api/v1/languages/x',
    (authorization) => env.request('DELETE', '/api/v1/languages/x', { headers: authorization ? { authorization } : {} }),
  ],
];

function expectUnauthorized(response: HttpResponse) {
  expect(response.status).toBe(401);
  expect(response.body).toEqual({ error: expect.stringContaining('/oauth/token') });
  expect(response.headers.get('www-authenticate')).toMatch(/^Bearer/);
}

async function issueToken(): Promise<{ token: string; clientId: string }> {
  const client = await env.newClient();
  const response = await env.request('POST', '/oauth/token', {
    body: { grant_type: 'client_credentials', client_id: client.client_id, client_secret: client.client_secret },
  });
  expect(response.status).toBe(200);
  return { token: response.body.access_token, clientId: client.client_id };
}

async function expireToken(token: string) {
  const result = await env.db.query(sql.unsafe`
    UPDATE access_tokens SET expires_at = now() - interval '1 second' WHERE token_hash = ${sql.binary(sha256(token))}
  `);
  expect(result.rowCount).toBe(1);
}

describe.each(operations)('when %s is called', (_name, call) => {
  describe.each([
    ['without an Authorization header', async () => undefined],
    ['with a garbage token', async () => 'Bearer not-a-token-that-was-ever-issued'],
    ['with an empty Bearer header', async () => 'Bearer '],
    ['with a malformed Bearer header', async () => 'Bearer two words'],
    ['with Basic credentials instead of a bearer token', async () => `Basic ${Buffer.from('client:secret').toString('base64')}`],
    ['with a valid token sent under the Basic scheme', async () => `Basic ${(await issueToken()).token}`],
    [
      'with an expired token',
      async () => {
        // Never used before it expires, so no API cache entry can stand in for the database.
        const { token } = await issueToken();
        await expireToken(token);
        return `Bearer ${token}`;
      },
    ],
  ])('%s', (_case, authorization) => {
    it('should answer 401 with a pointer to /oauth/token and WWW-Authenticate: Bearer', async () => {
      expectUnauthorized(await call(await authorization()));
    });
  });

  describe('with the token of a client that was revoked after the token was used', () => {
    it('should answer 401 within 2 s', async () => {
      const { token, clientId } = await issueToken();
      const warm = await env.request('POST', '/api/v1/languages/', { token, body: languageBody });
      expect(warm.status).toBe(200);
      expect(await revokeClient(env.db, clientId)).toBe(true);
      // Revocation is pushed to the API by Postgres NOTIFY (client_revoked), which
      // empties its token cache; delivery is asynchronous, so allow it a moment.
      const response = await pollUntil(
        () => call(`Bearer ${token}`),
        (r) => r.status === 401,
        { timeoutMs: 2_000 },
      );
      expectUnauthorized(response);
    });
  });
});

describe('when a token expires while the API has it cached', () => {
  let shortLived: TestEnvironment;
  beforeAll(async () => {
    shortLived = await startEnvironment({ worker: false, env: { TOKEN_TTL_SECONDS: '1' } });
  });
  afterAll(() => shortLived.close());

  it('should answer 401 once its own expiry has passed', async () => {
    // A token's life starts on the whole second it was issued in: ask just after a
    // second begins so that it lives ~0.9 s, long enough to be used and cached
    // (on a machine so slow that it is not, try again a couple of times).
    const client = await shortLived.newClient();
    let issued: HttpResponse | undefined;
    let first: HttpResponse | undefined;
    for (let attempt = 0; attempt < 3 && first?.status !== 200; attempt++) {
      await sleep(1_000 - (Date.now() % 1_000) + 20);
      issued = await shortLived.request('POST', '/oauth/token', {
        body: { grant_type: 'client_credentials', client_id: client.client_id, client_secret: client.client_secret },
      });
      first = await shortLived.request('POST', '/api/v1/languages/', { token: issued.body.access_token, body: languageBody });
    }
    expect(first?.status).toBe(200);
    const token: string = issued!.body.access_token;
    // Well past the expiry, well inside the API's 5 s cache window.
    await sleep(issued!.body.created_at * 1_000 + 1_000 - Date.now() + 200);
    expectUnauthorized(await shortLived.request('POST', '/api/v1/languages/', { token, body: languageBody }));
  });
});

describe('when a token of account A addresses a language of account B', () => {
  it("should leave B's language untouched by A's delete", async () => {
    const tokenA = await env.token();
    const tokenB = await env.token();
    const id = 'shared-lang';
    const created = await env.request('POST', '/api/v1/languages/', {
      token: tokenB,
      body: { language: { id, name: 'B language', code: 'nl', url: 'https://b.example' } },
    });
    expect(created.status).toBe(200);

    // deleteLanguage has no 404 (interface §4.8), so A is told "deleted" without seeing B's data.
    const deleted = await env.request('DELETE', `/api/v1/languages/${id}`, { token: tokenA });
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({ language: { id }, message: 'Language successfully deleted' });

    // Update merges: had A's delete reached B's language, the url would be gone.
    const again = await env.request('POST', '/api/v1/languages/', {
      token: tokenB,
      body: { language: { id, name: 'B language', code: 'nl' } },
    });
    expect(again.status).toBe(200);
    expect(again.body.language).toEqual({ id, name: 'B language', code: 'nl', active: null, url: 'https://b.example' });
  });
});
