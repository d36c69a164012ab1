import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_JSON_DEPTH } from '../platform/json-nesting.js';
import { type HttpResponse, startEnvironment, type TestEnvironment } from './support/harness.js';
import { openShop, type Shop } from './support/v2-client.js';

/*
 * What a request body must be before it is parsed: nested at most
 * MAX_JSON_DEPTH levels (a deeper body is refused in milliseconds, without a
 * parse that would hold every other request up) and valid UTF-8 (never
 * decoded with replacement characters, which would make two ids one).
 */

let env: TestEnvironment;
let attacker: Shop;
let other: Shop;

beforeAll(async () => {
  env = await startEnvironment({ worker: false });
  [attacker, other] = await Promise.all([openShop(env, 'nl'), openShop(env, 'nl')]);
  expect((await other.put('product', { id: 'mine', name: 'Mine' })).status).toBe(200);
});
afterAll(() => env?.close());

/** `{"<key>":[[[...]]]}` nested `levels` deep: the probe's body, 400,000 levels in about 800 KB (under the 1 MiB limit). */
const deepBody = (key: string, levels: number) => `{"${key}":${'['.repeat(levels)}${']'.repeat(levels)}}`;
const JSON_TYPE = { 'content-type': 'application/json' };
const TOO_DEEP = `Request body is nested too deeply: at most ${MAX_JSON_DEPTH} levels of arrays and objects`;

async function timed<T>(call: () => Promise<T>): Promise<[T, number]> {
  const started = performance.now();
  const result = await call();
  return [result, performance.now() - started];
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** The other account's read and the liveness probe, one after the other: their latencies. */
async function otherTraffic(): Promise<number[]> {
  const [read, readMs] = await timed(() => other.get('/products/mine'));
  expect(read.status).toBe(200);
  expect(read.body.id).toBe('mine');
  const [health, healthMs] = await timed(() => env.request('GET', '/healthz'));
  expect(health.status).toBe(200);
  return [readMs, healthMs];
}

describe('when clients keep sending bodies nested 400,000 levels deep, several at once', () => {
  /** Where they go: the token endpoint (no token needed), a v1 and a v2 write. */
  const targets: Array<[string, string, string]> = [
    ['POST', '/oauth/token', deepBody('grant_type', 400_000)],
    ['POST', '/api/v1/languages/nl/products', deepBody('product', 400_000)],
    ['PUT', '/api/v2/languages/nl/products', deepBody('product', 400_000)],
  ];
  const SENDERS = 4;
  const BODIES_PER_SENDER = 6;
  const answers: Array<[string, HttpResponse]> = [];
  const baseline: number[] = [];
  const during: number[] = [];

  beforeAll(async () => {
    for (let round = 0; round < 10; round += 1) baseline.push(...(await otherTraffic()));
    // Each sender sends its bodies one after the other, to the three endpoints in turn.
    const senders = Array.from({ length: SENDERS }, async (_, sender) => {
      for (let index = 0; index < BODIES_PER_SENDER; index += 1) {
        const [method, path, raw] = targets[(sender + index) % targets.length]!;
        const token = path.startsWith('/api') ? attacker.token : null;
        answers.push([path, await env.request(method, path, { raw, token, headers: JSON_TYPE })]);
      }
    });
    let done = false;
    const sent = Promise.all(senders).finally(() => {
      done = true;
    });
    // The other account keeps reading while the bodies arrive and are answered.
    while (!done) during.push(...(await otherTraffic()));
    await sent;
  });

  it('should refuse each with 400 and a message saying why, in the error shape of its endpoint', () => {
    expect(answers.length).toBe(SENDERS * BODIES_PER_SENDER);
    for (const [path, answer] of answers) {
      expect(answer.status, `${path}: ${answer.text.slice(0, 200)}`).toBe(400);
      if (path === '/oauth/token') expect(answer.body).toEqual({ error: 'invalid_request', error_description: TOO_DEEP });
      else expect(answer.body).toEqual({ error: { message: TOO_DEEP } });
    }
  });

  it("should keep answering another account's reads and the liveness probe meanwhile", () => {
    expect(during.length).toBeGreaterThan(0);
    // Loose on purpose (a loaded machine; the bodies are sent from this process too): parsing them used to hold the
    // API for most of the time they flowed, several seconds per read at the median here.
    expect(median(during)).toBeLessThan(Math.max(1_000, 10 * median(baseline)));
  });

  it('should store nothing for the writes', async () => {
    const list = await attacker.get('/products');
    expect(list.body.meta.total).toBe(0);
  });
});

describe('when a body is nested exactly as deep as allowed', () => {
  it('should judge its content, as any body', async () => {
    const answer = await attacker.request('POST', '/api/v1/languages/nl/products', {
      product: { id: 'p', name: JSON.parse(`${'['.repeat(MAX_JSON_DEPTH - 2)}${']'.repeat(MAX_JSON_DEPTH - 2)}`) },
    });
    expect(answer.status).toBe(400);
    expect(answer.body.error.invalid_parameters).toEqual(['name']);
  });
});

describe('when a body is not valid UTF-8', () => {
  /** A write whose id holds the bytes `bytes` (read as Latin-1 here), as the probe sent it. */
  const withId = (prefix: string, bytes: string) =>
    Buffer.concat([Buffer.from(`${prefix}"s`), Buffer.from(bytes, 'latin1'), Buffer.from('","name":"S"}}')]);
  const NOT_UTF8 = 'Request body is not valid UTF-8';

  it.each([
    ['a v1 write', 'POST', '/api/v1/languages/nl/products', '{"product":{"id":'],
    ['a v2 write', 'PUT', '/api/v2/languages/nl/products', '{"product":{"id":'],
  ])('should refuse %s with 400, so two different ids never become one record', async (_name, method, path, prefix) => {
    for (const bytes of ['\xc0\xaf', '\xff\xfe']) {
      const answer = await env.request(method, path, { token: attacker.token, raw: withId(prefix, bytes), headers: JSON_TYPE });
      expect(answer.status, answer.text).toBe(400);
      expect(answer.body).toEqual({ error: { message: NOT_UTF8 } });
    }
    expect((await attacker.get('/products')).body.meta.total).toBe(0);
  });

  it('should refuse a token request with invalid_request', async () => {
    for (const [raw, type] of [
      [Buffer.from('grant_type=client_credentials&client_id=\xff&client_secret=x', 'latin1'), 'application/x-www-form-urlencoded'],
      [Buffer.from('{"grant_type":"client_credentials","client_id":"\xff","client_secret":"x"}', 'latin1'), 'application/json'],
    ] as const) {
      const answer = await env.request('POST', '/oauth/token', { raw, headers: { 'content-type': type } });
      expect(answer.status).toBe(400);
      expect(answer.body).toEqual({ error: 'invalid_request', error_description: NOT_UTF8 });
    }
  });

  it('should still take text in UTF-8, a byte order mark before it included', async () => {
    const body = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"product":{"id":"s\u00c0\u00af","name":"Café"}}')]);
    const answer = await env.request('PUT', '/api/v2/languages/nl/products', { token: attacker.token, raw: body, headers: JSON_TYPE });
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body).toMatchObject({ id: 's\u00c0\u00af', name: 'Café' });
  });
});
