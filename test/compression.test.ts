import http from 'node:http';
import { brotliDecompressSync, gunzipSync, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEnvironment, type TestEnvironment } from './support/harness.js';
import { pollUntil } from './support/poll.js';
import { openShop, type Shop } from './support/v2-client.js';

/** interface §10.4: answers are compressed for clients that accept it. */

let env: TestEnvironment;
let shop: Shop;
let token: string;

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  /** The bytes as they came over the wire. */
  wire: Buffer;
}

/** A GET with exactly the headers given (node:http adds no Accept-Encoding of its own, unlike fetch). */
function get(path: string, headers: Record<string, string> = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const request = http.get(`${env.baseUrl}${path}`, { headers: { authorization: `Bearer ${token}`, ...headers } }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => resolve({ status: response.statusCode!, headers: response.headers, wire: Buffer.concat(chunks) }));
      response.on('error', reject);
    });
    request.on('error', reject);
  });
}

const decoded = (answer: Answer) => {
  const encoding = answer.headers['content-encoding'];
  if (encoding === 'gzip') return gunzipSync(answer.wire).toString('utf8');
  if (encoding === 'br') return brotliDecompressSync(answer.wire).toString('utf8');
  return answer.wire.toString('utf8');
};

const varies = (answer: Answer) =>
  String(answer.headers['vary'] ?? '')
    .split(',')
    .map((name) => name.trim().toLowerCase());

beforeAll(async () => {
  env = await startEnvironment();
  shop = await openShop(env);
  token = shop.token;
  for (let index = 1; index <= 30; index += 1)
    await shop.save('product', { id: `p${index}`, name: `Product ${index} with a name long enough to fill a page` });
});
afterAll(async () => {
  await env?.close();
});

describe('when a client accepts gzip', () => {
  it.each([
    ['the OpenAPI description', '/openapi.json'],
    ['a v2 list', () => `/api/v2/languages/${shop.lang}/products?per_page=30`],
  ])('should compress %s, with Vary: Accept-Encoding, to the same JSON', async (_name, path) => {
    const target = typeof path === 'function' ? path() : path;
    const plain = await get(target);
    const zipped = await get(target, { 'accept-encoding': 'gzip' });
    expect(zipped.status).toBe(200);
    expect(zipped.headers['content-encoding']).toBe('gzip');
    expect(zipped.headers['content-type']).toMatch(/^application\/json/);
    expect(varies(zipped)).toContain('accept-encoding');
    expect(JSON.parse(decoded(zipped))).toEqual(JSON.parse(decoded(plain)));
    expect(zipped.wire.length).toBeLessThan(plain.wire.length / 3);
  });

  it('should give br to a client that prefers it, as browsers do', async () => {
    const answer = await get('/openapi.json', { 'accept-encoding': 'gzip, deflate, br, zstd' });
    expect(answer.headers['content-encoding']).toBe('br');
    expect(JSON.parse(decoded(answer)).openapi).toMatch(/^3\./);
  });

  it.each([
    ['br', 'gzip, deflate, br'],
    ['gzip', 'br;q=0.5, gzip'],
    ['gzip', '*'],
  ])('should give a v2 list in %s to a client sending %s, the same JSON as unencoded', async (encoding, accepted) => {
    const target = `/api/v2/languages/${shop.lang}/products?per_page=30`;
    const plain = await get(target);
    const answer = await get(target, { 'accept-encoding': accepted });
    expect(answer.headers['content-encoding']).toBe(encoding);
    expect(answer.headers['content-type']).toMatch(/^application\/json/);
    expect(Number(answer.headers['content-length'])).toBe(answer.wire.length);
    expect(JSON.parse(decoded(answer))).toEqual(JSON.parse(decoded(plain)));
  });

  it('should compress the script of /docs, a file streamed from disk', async () => {
    const answer = await get('/docs/swagger-ui-bundle.js', { 'accept-encoding': 'gzip' });
    expect(answer.status).toBe(200);
    expect(answer.headers['content-encoding']).toBe('gzip');
    expect(decoded(answer)).toContain('SwaggerUIBundle');
  });

  it('should send an answer under 1 KB as it is', async () => {
    const answer = await get(`/api/v2/languages/${shop.lang}/products/p1`, { 'accept-encoding': 'gzip' });
    expect(answer.status).toBe(200);
    expect(answer.wire.length).toBeLessThan(1024);
    expect(answer.headers['content-encoding']).toBeUndefined();
    expect(JSON.parse(answer.wire.toString('utf8'))).toMatchObject({ id: 'p1' });
  });

  it('should stream the NDJSON of line errors compressed, every line there once decoded', async () => {
    const lines = Array.from({ length: 2_500 }, (_, index) => `{"product":{"id":"bad${index}","price":"cheap"}}`);
    // The upload itself is gzip-coded: request bodies are decoded as before.
    const uploaded = await env.request('POST', `/api/v1/languages/${shop.lang}/bulk`, {
      token,
      raw: gzipSync(`${lines.join('\n')}\n`),
      headers: { 'content-type': 'application/x-ndjson', 'content-encoding': 'gzip', 'accept-encoding': 'gzip' },
    });
    expect(uploaded.status).toBe(202);
    expect(uploaded.body.bulk_job.lines).toBe(2_500);
    const id = uploaded.body.bulk_job.id as string;
    await pollUntil(
      () => env.request('GET', `/api/v1/languages/${shop.lang}/bulk/${id}`, { token }),
      (job) => job.body.bulk_job.status === 'completed',
      { timeoutMs: 60_000 },
    );
    const answer = await get(`/api/v1/languages/${shop.lang}/bulk/${id}/errors`, { 'accept-encoding': 'gzip' });
    expect(answer.status).toBe(200);
    expect(answer.headers['content-encoding']).toBe('gzip');
    // Streamed: sent in chunks as the pages are read, its length unknown when it starts.
    expect(answer.headers['transfer-encoding']).toBe('chunked');
    expect(answer.headers['content-length']).toBeUndefined();
    const errors = decoded(answer)
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(errors.map((item) => item.line)).toEqual(lines.map((_, index) => index + 1));
  });
});

describe('when a client sends no Accept-Encoding', () => {
  it.each([
    ['the OpenAPI description', '/openapi.json'],
    ['a v2 list', () => `/api/v2/languages/${shop.lang}/products?per_page=30`],
  ])('should send %s as it is (identity), still with Vary: Accept-Encoding', async (_name, path) => {
    const answer = await get(typeof path === 'function' ? path() : path);
    expect(answer.status).toBe(200);
    expect(answer.headers['content-encoding']).toBeUndefined();
    expect(Number(answer.headers['content-length'])).toBe(answer.wire.length);
    expect(varies(answer)).toContain('accept-encoding');
    expect(JSON.parse(answer.wire.toString('utf8'))).toBeTruthy();
  });
});
