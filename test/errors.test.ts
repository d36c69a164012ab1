import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dropDatabase, type HttpResponse, startEnvironment, type TestEnvironment } from './support/harness.js';

const GENERIC_500 = { error: 'The request cannot be processed at this moment' };
const MIB = 1024 * 1024;

/** A language body whose JSON text is exactly `bytes` long. */
function languageOfSize(bytes: number): string {
  const shell = JSON.stringify({ language: { id: 'big', name: '', code: 'bg' } });
  const text = JSON.stringify({ language: { id: 'big', name: 'n'.repeat(bytes - shell.length), code: 'bg' } });
  expect(Buffer.byteLength(text)).toBe(bytes);
  return text;
}

describe('when the service is healthy', () => {
  let env: TestEnvironment;
  let token: string;

  beforeAll(async () => {
    env = await startEnvironment({ worker: false });
    token = await env.token();
  });
  afterAll(() => env.close());

  const postLanguage = (raw: string, contentType: string) =>
    env.request('POST', '/api/v1/languages', { token, raw, headers: { 'content-type': contentType } });

  describe('when the body cannot be read', () => {
    it.each([
      ['truncated JSON', '{"language":'],
      ['JSON with a trailing comma', '{"language":{"id":"x","name":"X","code":"x",}}'],
      ['text that is not JSON at all', 'language=x'],
    ])('should answer 400 with an error message for %s', async (_case, raw) => {
      const response = await postLanguage(raw, 'application/json');
      expect(response.status).toBe(400);
      expect(response.body).toEqual({ error: { message: expect.any(String) } });
    });

    it.each([
      ['text/plain', JSON.stringify({ language: { id: 'x', name: 'X', code: 'x' } })],
      ['application/x-www-form-urlencoded', 'language[id]=x&language[name]=X&language[code]=x'],
      ['application/xml', '<language><id>x</id></language>'],
    ])('should answer 415 for content type %s', async (contentType, raw) => {
      const response = await postLanguage(raw, contentType);
      expect(response.status).toBe(415);
      expect(response.body?.error).toBeDefined();
    });

    it('should answer 413 for a JSON body over 1 MiB', async () => {
      const response = await postLanguage(languageOfSize(MIB + 1), 'application/json');
      expect(response.status).toBe(413);
      expect(response.body?.error).toBeDefined();
    });

    it('should read a JSON body of exactly 1 MiB (and judge its content instead)', async () => {
      const response = await postLanguage(languageOfSize(MIB), 'application/json');
      expect(response.status).toBe(400);
      expect(response.body).toEqual({ error: { message: expect.any(String), invalid_parameters: ['name'] } });
    });
  });

  describe('when the body is valid JSON of the wrong shape', () => {
    it.each([
      ['an array', '[]'],
      ['a string', '"language"'],
      ['a number', '42'],
      ['a language that is null', '{"language":null}'],
      ['a language that is an array', '{"language":[]}'],
      ['a language that is a string', '{"language":"nl"}'],
    ])('should answer 400, never 500, for %s', async (_case, raw) => {
      const response = await postLanguage(raw, 'application/json');
      expect(response.status).toBe(400);
      expect(response.body).toEqual({ error: expect.objectContaining({ message: expect.any(String) }) });
    });
  });

  // An invalid_parameters message says what each field expected; the body keeps its names for programs.
  describe('when a field has a value of the wrong type, format, range or set', () => {
    beforeAll(async () => {
      await env.request('POST', '/api/v1/languages', { token, body: { language: { id: 'msg', name: 'M', code: 'm' } } });
    });

    it.each([
      [
        'POST',
        '/api/v1/languages/msg/products',
        { product: { id: 'P', name: 'n', price: 'cheap' } },
        'price (expected a number, got a string)',
      ],
      [
        'POST',
        '/api/v1/languages/msg/orders',
        { order: { id: 'O', profile_id: 'u', products: [], status: 'pending' } },
        'status (expected one of processing, shipped, completed, cancelled)',
      ],
      [
        'PUT',
        '/api/v2/languages/msg/variants',
        { variant: { id: 'V', product_id: 'P', url: 'ftp://x' } },
        'url (expected an http or https URL)',
      ],
      [
        'PUT',
        '/api/v2/languages/msg/orders',
        { order: { id: 'O', profile_id: 'u', ordered_at: '2024-01-01', products: [{ id: 'P', quantity: 1.5 }] } },
        'products[0].quantity (expected an integer, got a number with decimals)',
      ],
      ['PUT', '/api/v2/languages/msg/profiles', { profile: { id: 'u', email: 'nope' } }, 'email (expected an email address)'],
      [
        'PUT',
        '/api/v2/custom_attributes',
        { custom_attribute: { name: 'n', description: '', datatype: 'decimal', resource: 'product' } },
        'datatype (expected one of string, integer, float, boolean, date, datetime)',
      ],
      ['GET', '/api/v2/languages/msg/products?per_page=251', undefined, /^per_page \(expected .+\)$/],
      ['GET', '/api/v2/languages/msg/products?created_after=yesterday', undefined, /^created_after \(expected .+\)$/],
    ] as const)('should answer %s %s with a message saying what was expected', async (method, path, body, described) => {
      const response = await env.request(method, path, { token, body });
      expect(response.status).toBe(400);
      const name = (typeof described === 'string' ? described : '').split(' (')[0] || path.split('?')[1]!.split('=')[0]!;
      expect(response.body).toEqual({ error: { message: expect.any(String), invalid_parameters: [name] } });
      const message = response.body.error.message.replace(/^Invalid parameters: /, '');
      if (typeof described === 'string') expect(message).toBe(described);
      else expect(message).toMatch(described);
    });
  });

  // interface §11.2: a client mistake is never a 500. Postgres refuses U+0000 in text
  // and unpaired surrogates in jsonb, so the service must refuse them first.
  describe('when a string holds a character Postgres cannot store', () => {
    it.each([
      ['a NUL in the language id', { id: 'a\u0000b', name: 'X', code: 'x' }, 'id'],
      ['a NUL in the language name', { id: 'nul-name', name: 'X\u0000', code: 'x' }, 'name'],
    ])('should answer 400 invalid_parameters for %s', async (_case, language, field) => {
      const response = await env.request('POST', '/api/v1/languages', { token, body: { language } });
      expect(response.status).toBe(400);
      expect(response.body).toEqual({ error: { message: expect.any(String), invalid_parameters: [field] } });
    });

    it('should answer 400 invalid_parameters for an unpaired surrogate in the language id', async () => {
      const response = await postLanguage('{"language":{"id":"\\ud800","name":"X","code":"x"}}', 'application/json');
      expect(response.status).toBe(400);
      expect(response.body.error.invalid_parameters).toEqual(['id']);
    });

    it('should answer deleteLanguage for an id with a NUL as for any unknown language', async () => {
      const response = await env.request('DELETE', '/api/v1/languages/a%00b', { token });
      expect(response.status).toBe(200);
      expect(response.body).toEqual({ language: { id: 'a\u0000b' }, message: 'Language successfully deleted' });
    });

    it.each([
      ['a JSON body', { body: { grant_type: 'client_credentials', client_id: 'a\u0000b', client_secret: 'secret' } }],
      [
        'a form body',
        {
          raw: 'grant_type=client_credentials&client_id=a%00b&client_secret=secret',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
        },
      ],
      [
        'Basic credentials',
        {
          body: { grant_type: 'client_credentials' },
          headers: { authorization: `Basic ${Buffer.from('a%00b:secret').toString('base64')}` },
        },
      ],
    ])('should refuse a client_id with a NUL in %s as a client mistake', async (_case, options) => {
      const response = await env.request('POST', '/oauth/token', options);
      // No client can have such an id: invalid_client (401) or invalid_request (400), never 500.
      expect([
        { status: 401, error: 'invalid_client' },
        { status: 400, error: 'invalid_request' },
      ]).toContainEqual({ status: response.status, error: response.body?.error });
    });
  });

  describe('when the path is unknown', () => {
    it.each([
      ['/nope', 'GET'],
      ['/nope', 'POST'],
      ['/api/v1/nope', 'GET'],
      ['/api/v1/nope', 'POST'],
      ['/api/v1/languages/xx/nope', 'DELETE'],
      ['/nope', 'PROPFIND'],
      ['/api/v1/languages/xx/nope', 'MKCOL'],
    ])('should answer 404 Not found for %s (%s)', async (path, method) => {
      const response = await env.request(method, path, { token });
      expect(response.status).toBe(404);
      expect(response.body).toEqual({ error: 'Not found' });
    });
  });

  describe('when the method is wrong for a known path', () => {
    it.each([
      ['GET', '/api/v1/languages/xx', 'DELETE'],
      ['PUT', '/api/v1/languages/xx', 'DELETE'],
      ['GET', '/api/v1/languages', 'POST'],
      ['PUT', '/oauth/token', 'POST'],
      ['GET', '/oauth/token', 'POST'],
      // Methods no route has at all (the router's own answer would be 501).
      ['PROPFIND', '/api/v1/languages', 'POST'],
      ['PROPFIND', '/api/v2/languages/xx/products', 'PUT'],
      ['MKCOL', '/api/v1/languages/xx', 'DELETE'],
      ['LOCK', '/oauth/token', 'POST'],
    ])('should answer %s %s with 405 and Allow: %s', async (method, path, allowed) => {
      const response = await env.request(method, path, { token });
      expect(response.status).toBe(405);
      const allow = (response.headers.get('allow') ?? '').split(',').map((name) => name.trim());
      expect(allow).toContain(allowed);
      expect(allow).not.toContain(method);
      // The token endpoint answers in the OAuth error shape, as for any of its errors.
      if (path === '/oauth/token') {
        expect(response.body).toEqual({ error: 'invalid_request', error_description: expect.stringContaining(allowed) });
      } else expect(response.body).toEqual({ error: { message: expect.stringContaining(allowed) } });
    });
  });

  describe('when a request id is involved', () => {
    const requests: Array<[string, () => Promise<HttpResponse>]> = [
      ['a 200', () => env.request('GET', '/healthz')],
      ['a 200 write', () => env.request('POST', '/api/v1/languages', { token, body: { language: { id: 'r', name: 'R', code: 'r' } } })],
      ['a 400', () => env.request('POST', '/api/v1/languages', { token, body: {} })],
      ['a 401', () => env.request('POST', '/api/v1/languages', { body: {} })],
      ['a 404', () => env.request('GET', '/nope')],
      ['a 405', () => env.request('GET', '/api/v1/languages/xx', { token })],
      ['an OAuth error', () => env.request('POST', '/oauth/token', { body: {} })],
    ];

    it.each(requests)('should carry an X-Request-Id on %s', async (_case, call) => {
      const response = await call();
      expect(response.headers.get('x-request-id')).toMatch(/\S/);
    });

    it('should give each request its own id', async () => {
      const [a, b] = await Promise.all([env.request('GET', '/healthz'), env.request('GET', '/healthz')]);
      expect(a.headers.get('x-request-id')).not.toBe(b.headers.get('x-request-id'));
    });

    it.each([
      ['a 200', 'GET', '/healthz'],
      ['a 404', 'GET', '/nope'],
    ])('should echo a supplied X-Request-Id on %s', async (_case, method, path) => {
      const response = await env.request(method, path, { headers: { 'x-request-id': 'abc-123' } });
      expect(response.headers.get('x-request-id')).toBe('abc-123');
    });
  });
});

describe('when the database disappears under a running API', () => {
  let env: TestEnvironment;
  let token: string;
  let response: HttpResponse;

  beforeAll(async () => {
    env = await startEnvironment({ worker: false });
    token = await env.token();
    // Used once, so the token may be answered from the API's cache.
    const warm = await env.request('POST', '/api/v1/languages', { token, body: { language: { id: 'w', name: 'W', code: 'w' } } });
    expect(warm.status).toBe(200);
    // WITH (FORCE) terminates every connection of the API, the harness and the revocation listener.
    await dropDatabase(env.databaseName);
    response = await env.request('POST', '/api/v1/languages', {
      token,
      body: { language: { id: 'after-drop', name: 'After', code: 'ad' } },
      headers: { 'x-request-id': 'failure-1' },
    });
  });
  afterAll(async () => {
    try {
      await env.close();
    } catch {
      // The database is gone already; pools complain about their dead connections.
    }
  });

  it('should answer 503 with Retry-After and exactly the generic body', () => {
    expect(response.status).toBe(503);
    expect(Number(response.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(response.body).toEqual(GENERIC_500);
  });

  it('should leak no stack trace, SQL or database name', () => {
    expect(response.text).toBe(JSON.stringify(GENERIC_500));
    expect(response.text).not.toContain(env.databaseName);
    expect(response.text).not.toMatch(/\bat .*\(|INSERT|SELECT|languages|postgres/i);
  });

  it('should still carry the request id', () => {
    expect(response.headers.get('x-request-id')).toBe('failure-1');
  });
});
