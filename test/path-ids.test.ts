import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEnvironment, type TestEnvironment } from './support/harness.js';

/*
 * An id in a path is at most 255 characters, as in a body: a longer one is
 * 400 invalid_parameters naming the path parameter, on every path with an
 * id, and the answer does not repeat it. The token endpoint answers its
 * wrong methods in the OAuth error shape.
 */

let env: TestEnvironment;
let token: string;

beforeAll(async () => {
  env = await startEnvironment({ worker: false });
  token = await env.token();
  expect((await env.request('POST', '/api/v1/languages', { token, body: { language: { id: 'nl', name: 'NL', code: 'nl' } } })).status).toBe(
    200,
  );
});
afterAll(() => env?.close());

/** Every operation of the API description with an id in its path, and the names of those ids. */
async function operationsWithPathIds(): Promise<Array<[string, string, string[]]>> {
  const document = (await env.request('GET', '/openapi.json')).body as { paths: Record<string, Record<string, unknown>> };
  const found: Array<[string, string, string[]]> = [];
  for (const [path, item] of Object.entries(document.paths)) {
    const ids = [...path.matchAll(/\{(\w+_id)\}/g)].map((match) => match[1]!);
    if (ids.length === 0) continue;
    for (const method of ['get', 'put', 'post', 'delete', 'patch']) if (item[method]) found.push([method.toUpperCase(), path, ids]);
  }
  return found;
}

/** The path with every id a plain short one, but `long` given to the parameter `name`. */
const fill = (path: string, name: string, long: string) =>
  path.replace(/\{(\w+)\}/g, (_, parameter: string) =>
    parameter === name ? encodeURIComponent(long) : parameter === 'language_id' ? 'nl' : 'x1',
  );

describe('when an id in a path is longer than an id can be', () => {
  it('should answer 400 invalid_parameters naming it, on every path with an id, without repeating it', async () => {
    const operations = await operationsWithPathIds();
    // v1 and v2 records, languages, sub-lists, links, lines and bulk jobs.
    expect(operations.length).toBeGreaterThan(60);
    const long = 'é'.repeat(256);
    for (const [method, path, ids] of operations) {
      for (const name of ids) {
        const url = fill(path, name, long);
        const response = await env.request(method, url, { token });
        const where = `${method} ${path} with a long ${name}`;
        expect(response.status, `${where}: ${response.text.slice(0, 200)}`).toBe(400);
        expect(response.body, where).toEqual({ error: { message: expect.stringContaining(name), invalid_parameters: [name] } });
        expect(response.text, where).not.toContain('éé');
      }
    }
    // Some 150 requests, each checked against the document: minutes on a loaded machine.
  }, 240_000);

  it('should answer DELETE of a language with a 10,000-character id 400, in a short answer', async () => {
    const response = await env.request('DELETE', `/api/v1/languages/${'x'.repeat(10_000)}`, { token });
    expect(response.status).toBe(400);
    expect(response.body).toEqual({
      error: { message: 'Invalid parameters: language_id (at most 255 characters)', invalid_parameters: ['language_id'] },
    });
    expect(response.text.length).toBeLessThan(200);
  });

  it('should still look up an id of exactly 255 characters', async () => {
    const id = 'x'.repeat(255);
    expect((await env.request('DELETE', `/api/v2/languages/nl/products/${id}`, { token })).body).toEqual({ error: 'Product not found' });
    expect((await env.request('GET', `/api/v2/languages/${id}`, { token })).status).toBe(404);
  });

  it('should ask for a token first', async () => {
    const response = await env.request('DELETE', `/api/v1/languages/${'x'.repeat(300)}`);
    expect(response.status).toBe(401);
  });
});

describe('when the token endpoint is called with another method than POST', () => {
  it.each(['GET', 'PUT', 'DELETE', 'PATCH', 'LOCK'])('should answer %s with 405, Allow: POST and an OAuth error body', async (method) => {
    const response = await env.request(method, '/oauth/token');
    expect(response.status).toBe(405);
    expect(response.headers.get('allow')).toBe('POST');
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(response.body).toEqual({ error: 'invalid_request', error_description: expect.stringContaining('POST') });
  });

  it('should still answer OPTIONS with the methods it takes', async () => {
    const response = await env.request('OPTIONS', '/oauth/token');
    expect(response.status).toBe(200);
    expect(response.headers.get('allow')).toBe('POST');
  });
});
