import type { ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnApi } from './support/api-process.js';
import { startEnvironment, type TestEnvironment } from './support/harness.js';
import { checkResponse, openApiCheckEnabled } from './support/openapi-check.js';
import { stopProcess } from './support/processes.js';
import { type RawAnswer, type RawConnection, rawConnection } from './support/raw-http.js';

/*
 * What a slow client may hold (README, "Slow clients"): a bulk upload is cut
 * only by its idle timeout and its size limit, however long it keeps
 * sending; every other body must arrive within BODY_TIMEOUT_MS, headers
 * within HEADERS_TIMEOUT_MS, each cut answered 408 with a JSON body and the
 * connection closed; connections from one address that have not signed in
 * are capped. The timeouts are small here so that the test is quick.
 */

const BODY_TIMEOUT_MS = 1_500;
const HEADERS_TIMEOUT_MS = 1_500;
const IDLE_TIMEOUT_MS = 2_000;
/** Late answers on a loaded machine: the bound a cut must come within, past its timeout. */
const SLACK_MS = 3_000;

let env: TestEnvironment;
let token: string;

beforeAll(async () => {
  env = await startEnvironment({
    worker: false,
    env: {
      BODY_TIMEOUT_MS: String(BODY_TIMEOUT_MS),
      HEADERS_TIMEOUT_MS: String(HEADERS_TIMEOUT_MS),
      BULK_IDLE_TIMEOUT_MS: String(IDLE_TIMEOUT_MS),
    },
  });
  token = await env.token();
  for (const version of ['v1', 'v2']) {
    const created = await env.request('POST', '/api/v1/languages', {
      token,
      body: { language: { id: `slow-${version}`, name: 'S', code: 'xx' } },
    });
    expect(created.status).toBe(200);
  }
});
afterAll(() => env?.close());

/** The start of a request: its headers, as a client sends them. */
const head = (method: string, path: string, headers: Record<string, string | number>) =>
  `${method} ${path} HTTP/1.1\r\nHost: test\r\n${Object.entries(headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('')}\r\n`;

/** Sends `piece` every `everyMs` until the connection closes or `stop()` is called. */
function trickle(connection: RawConnection, piece: string, everyMs: number) {
  const timer = setInterval(() => connection.send(piece), everyMs);
  void connection.closed.then(() => clearInterval(timer));
  return { stop: () => clearInterval(timer) };
}

/** The answer checked against /openapi.json, as the harness checks its own. */
async function documented(method: string, path: string, answer: RawAnswer): Promise<RawAnswer> {
  if (openApiCheckEnabled) await checkResponse(env.baseUrl, method, path, { ...answer, headers: new Headers(answer.headers) });
  return answer;
}

describe('when a request body trickles in', () => {
  const body = JSON.stringify({ product: { id: 'slow-1', name: 'never stored' } });
  const cases = [
    {
      what: 'a token request',
      method: 'POST',
      path: '/oauth/token',
      bearer: false,
      expected: { error: 'invalid_request', error_description: expect.stringMatching(/did not arrive within 1\.5 s/) },
      readBack: null,
    },
    {
      what: 'a v1 write',
      method: 'POST',
      path: '/api/v1/languages/slow-v1/products',
      bearer: true,
      expected: { error: { message: expect.stringMatching(/did not arrive within 1\.5 s/) } },
      readBack: '/api/v2/languages/slow-v1/products/slow-1',
    },
    {
      what: 'a v2 write',
      method: 'PUT',
      path: '/api/v2/languages/slow-v2/products',
      bearer: true,
      expected: { error: { message: expect.stringMatching(/did not arrive within 1\.5 s/) } },
      readBack: '/api/v2/languages/slow-v2/products/slow-1',
    },
  ];

  it.each(cases)(
    'should answer $what 408 with a JSON body within the body timeout, close the connection and keep nothing',
    async (item) => {
      const connection = await rawConnection(env.baseUrl);
      const headers = {
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(body),
        ...(item.bearer ? { authorization: `Bearer ${token}` } : {}),
      };
      connection.send(head(item.method, item.path, headers));
      connection.send(body.slice(0, 5));
      // A byte now and then: the client is alive, only slow.
      trickle(connection, ' ', 200);
      try {
        const answer = await documented(item.method, item.path, await connection.answer);
        expect(answer.status, answer.text).toBe(408);
        expect(answer.body).toEqual(item.expected);
        expect(answer.headers['connection']).toBe('close');
        expect(answer.ms).toBeLessThan(BODY_TIMEOUT_MS + SLACK_MS);
        expect(await connection.closed).toBeLessThan(BODY_TIMEOUT_MS + SLACK_MS);
        if (item.readBack) expect((await env.request('GET', item.readBack, { token })).status).toBe(404);
      } finally {
        connection.close();
      }
    },
    20_000,
  );

  it('should close the connection within the body timeout when the body keeps coming after its answer', async () => {
    const connection = await rawConnection(env.baseUrl);
    // No token: answered 401 at once, before the body is read.
    connection.send(head('POST', '/api/v1/languages/slow-v1/products', { 'content-type': 'application/json', 'content-length': 10_000 }));
    connection.send('{"product"');
    trickle(connection, ' ', 200);
    try {
      const answer = await documented('POST', '/api/v1/languages/slow-v1/products', await connection.answer);
      expect(answer.status).toBe(401);
      expect(await connection.closed).toBeLessThan(BODY_TIMEOUT_MS + SLACK_MS);
    } finally {
      connection.close();
    }
  }, 20_000);

  it('should take a body that arrives in pieces within the body timeout', async () => {
    const connection = await rawConnection(env.baseUrl);
    const write = JSON.stringify({ product: { id: 'pieces', name: 'in pieces' } });
    connection.send(
      head('POST', '/api/v1/languages/slow-v1/products', {
        'content-type': 'application/json',
        authorization: `Bearer ${token}`,
        'content-length': Buffer.byteLength(write),
      }),
    );
    for (let at = 0; at < write.length; at += 10) {
      connection.send(write.slice(at, at + 10));
      await sleep(BODY_TIMEOUT_MS / 2 / Math.ceil(write.length / 10));
    }
    try {
      expect((await connection.answer).status).toBe(200);
    } finally {
      connection.close();
    }
  });
});

describe('when the headers of a request trickle in', () => {
  it('should answer 408 with a JSON body within the headers timeout and close the connection', async () => {
    const connection = await rawConnection(env.baseUrl);
    connection.send('GET /healthz HTTP/1.1\r\n');
    trickle(connection, 'X-Slow: 1\r\n', 200);
    try {
      const answer = await connection.answer;
      expect(answer.status).toBe(408);
      expect(answer.body).toEqual({ error: { message: expect.stringMatching(/^The request headers did not arrive within 1\.5 s/) } });
      expect(answer.headers['content-type']).toMatch(/^application\/json/);
      expect(answer.ms).toBeLessThan(HEADERS_TIMEOUT_MS + SLACK_MS);
      expect(await connection.closed).toBeLessThan(HEADERS_TIMEOUT_MS + SLACK_MS);
    } finally {
      connection.close();
    }
  }, 20_000);
});

describe('when a bulk upload keeps sending for longer than any other body may take', () => {
  it('should never cut it while data flows, and take the whole file', async () => {
    const connection = await rawConnection(env.baseUrl);
    const path = '/api/v1/languages/slow-v1/bulk';
    connection.send(
      head('POST', path, { 'content-type': 'application/x-ndjson', authorization: `Bearer ${token}`, 'transfer-encoding': 'chunked' }),
    );
    const chunk = (text: string) => `${Buffer.byteLength(text).toString(16)}\r\n${text}\r\n`;
    // A line every 250 ms for four body timeouts (and three idle timeouts): slow, never silent.
    const started = Date.now();
    let lines = 0;
    while (Date.now() - started < 4 * BODY_TIMEOUT_MS) {
      connection.send(chunk(`{"product":{"id":"t${lines}","name":"trickled"}}\n`));
      lines += 1;
      await sleep(250);
    }
    connection.send('0\r\n\r\n');
    try {
      const answer = await documented('POST', path, await connection.answer);
      expect(answer.status, answer.text).toBe(202);
      expect(answer.body.bulk_job).toMatchObject({ status: 'queued', lines });
      expect(answer.ms).toBeGreaterThan(4 * BODY_TIMEOUT_MS);
    } finally {
      connection.close();
    }
  }, 30_000);

  it('should still cut it with a JSON 408 once the client falls silent', async () => {
    const connection = await rawConnection(env.baseUrl);
    const path = '/api/v1/languages/slow-v1/bulk';
    connection.send(
      head('POST', path, { 'content-type': 'application/x-ndjson', authorization: `Bearer ${token}`, 'content-length': 1_000 }),
    );
    connection.send('{"product":{"id":"s1","name":"silent"}}\n');
    try {
      const answer = await documented('POST', path, await connection.answer);
      expect(answer.status).toBe(408);
      expect(answer.body).toEqual({ error: { message: expect.stringContaining('No data received for 2 s') } });
      expect(answer.ms).toBeGreaterThanOrEqual(IDLE_TIMEOUT_MS);
      expect(answer.ms).toBeLessThan(IDLE_TIMEOUT_MS + SLACK_MS);
    } finally {
      connection.close();
    }
  }, 20_000);
});

describe('when one address holds connections without signing in', () => {
  const CAP = 4;
  let api: { child: ChildProcess; baseUrl: string };

  beforeAll(async () => {
    // An API of its own, so that the harness's own connections (from 127.0.0.1) are not counted with the test's.
    api = await spawnApi(env.config, { UNAUTHENTICATED_CONNECTIONS_PER_ADDRESS: String(CAP) });
  });
  afterAll(() => stopProcess(api.child, 'SIGTERM'));

  /** A connection the API took: it answers a request on it. */
  async function expectServed(connection: RawConnection, headers: Record<string, string> = {}) {
    connection.send(head('GET', '/healthz', headers));
    expect((await connection.answer).status).toBe(200);
  }

  it('should refuse one more with a JSON 429 at once, and take connections again as others sign in or close', async () => {
    // 127.0.0.2 is this machine too, but another address to the API.
    const held = await Promise.all(Array.from({ length: CAP }, () => rawConnection(api.baseUrl, { localAddress: '127.0.0.2' })));
    try {
      const refused = await rawConnection(api.baseUrl, { localAddress: '127.0.0.2' });
      const answer = await refused.answer;
      expect(answer.status).toBe(429);
      expect(answer.body).toEqual({ error: { message: expect.stringContaining(`at most ${CAP} at a time`) } });
      expect(Number(answer.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect(answer.headers['connection']).toBe('close');
      expect(await refused.closed).toBeLessThan(5_000);

      // Another address is not affected.
      await expectServed(await rawConnection(api.baseUrl, { localAddress: '127.0.0.3' }));

      // A held connection that presents a valid token no longer counts: one more is taken (and holds that place).
      const signedIn = held[0]!;
      signedIn.send(head('GET', '/api/v2/languages/slow-v1', { authorization: `Bearer ${token}` }));
      expect((await signedIn.answer).status).toBe(200);
      const taken = await rawConnection(api.baseUrl, { localAddress: '127.0.0.2' });
      held.push(taken);
      await expectServed(taken);
      expect((await (await rawConnection(api.baseUrl, { localAddress: '127.0.0.2' })).answer).status).toBe(429);

      // A held connection that closes gives its place back.
      held[1]!.close();
      await held[1]!.closed;
      await sleep(100);
      await expectServed(await rawConnection(api.baseUrl, { localAddress: '127.0.0.2' }));
    } finally {
      for (const connection of held) connection.close();
    }
  }, 30_000);
});
