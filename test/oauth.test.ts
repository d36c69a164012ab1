import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { revokeClient } from '../auth/client.repository.js';
import { type Credentials, startEnvironment, type TestEnvironment } from './support/harness.js';

type BodyType = 'json' | 'form';
type AuthMethod = 'client_secret_post' | 'client_secret_basic';

let env: TestEnvironment;
let client: Credentials;

function tokenRequest(
  bodyType: BodyType,
  auth: AuthMethod,
  credentials: { id: string; secret: string },
  extra: Record<string, string | undefined> = { grant_type: 'client_credentials' },
) {
  const fields: Record<string, string> = {};
  for (const [key, value] of Object.entries(extra)) if (value !== undefined) fields[key] = value;
  const headers: Record<string, string> = {};
  if (auth === 'client_secret_post') {
    fields['client_id'] = credentials.id;
    fields['client_secret'] = credentials.secret;
  } else {
    headers['authorization'] =
      `Basic ${Buffer.from(`${encodeURIComponent(credentials.id)}:${encodeURIComponent(credentials.secret)}`).toString('base64')}`;
  }
  if (bodyType === 'json') {
    headers['content-type'] = 'application/json';
    return env.request('POST', '/oauth/token', { raw: JSON.stringify(fields), headers });
  }
  headers['content-type'] = 'application/x-www-form-urlencoded';
  return env.request('POST', '/oauth/token', { raw: new URLSearchParams(fields).toString(), headers });
}

beforeAll(async () => {
  env = await startEnvironment({ worker: false, env: { TOKEN_TTL_SECONDS: '1800' } });
  client = await env.newClient();
});
afterAll(() => env.close());

const combinations: Array<[BodyType, AuthMethod]> = [
  ['json', 'client_secret_post'],
  ['json', 'client_secret_basic'],
  ['form', 'client_secret_post'],
  ['form', 'client_secret_basic'],
];

describe.each(combinations)('when a %s body authenticates with %s', (bodyType, auth) => {
  const good = () => ({ id: client.client_id, secret: client.client_secret });

  it('should issue a bearer token that opens the v1 API', async () => {
    const before = Math.floor(Date.now() / 1000);
    const response = await tokenRequest(bodyType, auth, good());
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(response.headers.get('pragma')).toBe('no-cache');
    expect(response.body).toEqual({
      access_token: expect.any(String),
      token_type: 'Bearer',
      expires_in: 1800,
      created_at: expect.any(Number),
    });
    expect(response.body.created_at).toBeGreaterThanOrEqual(before - 1);
    const language = await env.request('POST', '/api/v1/languages/', {
      token: response.body.access_token,
      body: { language: { id: `l-${bodyType}-${auth}`, name: 'Dutch', code: 'nl' } },
    });
    expect(language.status).toBe(200);
  });

  it('should answer 401 invalid_client for a wrong secret', async () => {
    const response = await tokenRequest(bodyType, auth, { id: client.client_id, secret: 'wrong' });
    expect(response.status).toBe(401);
    expect(response.body).toEqual({ error: 'invalid_client', error_description: expect.any(String) });
    expect(response.headers.get('www-authenticate')).toBe(auth === 'client_secret_basic' ? 'Basic realm="oauth", charset="UTF-8"' : null);
  });

  it('should answer 401 invalid_client for an unknown client', async () => {
    const response = await tokenRequest(bodyType, auth, { id: 'no-such-client', secret: 'whatever' });
    expect(response.status).toBe(401);
    expect(response.body.error).toBe('invalid_client');
  });

  it('should answer 400 unsupported_grant_type for another grant', async () => {
    const response = await tokenRequest(bodyType, auth, good(), { grant_type: 'password' });
    expect(response.status).toBe(400);
    expect(response.body).toEqual({ error: 'unsupported_grant_type', error_description: expect.any(String) });
  });

  it('should answer 400 invalid_request without grant_type', async () => {
    const response = await tokenRequest(bodyType, auth, good(), {});
    expect(response.status).toBe(400);
    expect(response.body).toEqual({ error: 'invalid_request', error_description: expect.stringContaining('grant_type') });
  });
});

describe('when the token request is malformed', () => {
  it.each([
    ['a body that is not valid JSON', { raw: '{"grant_type":', headers: { 'content-type': 'application/json' } }],
    ['a body of another content type', { raw: 'grant_type=client_credentials', headers: { 'content-type': 'text/plain' } }],
    ['no body at all', {}],
    ['a JSON array', { raw: '[]', headers: { 'content-type': 'application/json' } }],
  ])('should answer 400 invalid_request for %s', async (_name, options) => {
    const response = await env.request('POST', '/oauth/token', options);
    expect(response.status).toBe(400);
    expect(response.body).toEqual({ error: 'invalid_request', error_description: expect.any(String) });
  });

  it('should answer 400 invalid_request when client_secret is missing', async () => {
    const response = await env.request('POST', '/oauth/token', { body: { grant_type: 'client_credentials', client_id: client.client_id } });
    expect(response.status).toBe(400);
    expect(response.body.error).toBe('invalid_request');
    expect(response.body.error_description).toContain('client_secret');
  });

  it('should answer 400 invalid_request when a parameter is not a string', async () => {
    const response = await env.request('POST', '/oauth/token', {
      body: { grant_type: 'client_credentials', client_id: client.client_id, client_secret: 12 },
    });
    expect(response.status).toBe(400);
    expect(response.body.error).toBe('invalid_request');
  });

  it('should answer 400 invalid_request when both Basic and client_secret are sent', async () => {
    const response = await env.request('POST', '/oauth/token', {
      body: { grant_type: 'client_credentials', client_id: client.client_id, client_secret: client.client_secret },
      headers: { authorization: `Basic ${Buffer.from(`${client.client_id}:${client.client_secret}`).toString('base64')}` },
    });
    expect(response.status).toBe(400);
    expect(response.body.error).toBe('invalid_request');
  });
});

describe('when the client is revoked', () => {
  it('should refuse new tokens with 401 invalid_client', async () => {
    const revoked = await env.newClient();
    expect(await revokeClient(env.db, revoked.client_id)).toBe(true);
    const response = await env.request('POST', '/oauth/token', {
      body: { grant_type: 'client_credentials', client_id: revoked.client_id, client_secret: revoked.client_secret },
    });
    expect(response.status).toBe(401);
    expect(response.body.error).toBe('invalid_client');
  });
});

describe('when secrets and tokens are stored', () => {
  it('should keep only hashes in the database', async () => {
    const issued = await tokenRequest('json', 'client_secret_post', { id: client.client_id, secret: client.client_secret });
    const stored = await env.db.one(sql.unsafe`
      SELECT
        (SELECT count(*) FROM clients WHERE position(convert_to(${client.client_secret}, 'UTF8') in secret_hash) > 0) AS secret_hits,
        (SELECT count(*) FROM access_tokens WHERE position(convert_to(${issued.body.access_token}, 'UTF8') in token_hash) > 0) AS token_hits,
        (SELECT count(*) FROM access_tokens) AS tokens
    `);
    expect(stored).toEqual({ secret_hits: 0, token_hits: 0, tokens: expect.any(Number) });
    expect(stored['tokens']).toBeGreaterThan(0);
  });
});
