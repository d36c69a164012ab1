import http from 'node:http';
import { gzipSync } from 'node:zlib';
import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { spawnApi } from './support/api-process.js';
import { type HttpResponse, startEnvironment, type TestEnvironment } from './support/harness.js';
import { startNewlineUploads } from './support/newline-uploads.js';
import { checkResponse, openApiCheckEnabled } from './support/openapi-check.js';
import { stopProcess } from './support/processes.js';

/*
 * Bulk uploads of one account cannot starve the others (a limit of
 * uploads in progress per account, an idle timeout, no Postgres connection
 * held by a stalled upload), line splitting leaves the event loop to other
 * requests, and bodies may be gzip-compressed (decoded size limited).
 */

const IDLE_TIMEOUT_MS = 2_000;
const MAX_BYTES = 32 * 1024 * 1024;
const NDJSON = { 'content-type': 'application/x-ndjson' };

let env: TestEnvironment;

beforeAll(async () => {
  env = await startEnvironment({ env: { BULK_IDLE_TIMEOUT_MS: String(IDLE_TIMEOUT_MS), BULK_MAX_BYTES: String(MAX_BYTES) } });
});
afterAll(() => env.close());

interface Shop {
  token: string;
  accountId: number;
  language: string;
}

let shops = 0;
/** A fresh account with a language of its own. */
async function newShop(): Promise<Shop> {
  const client = await env.newClient();
  const token = (
    await env.request('POST', '/oauth/token', {
      body: { grant_type: 'client_credentials', client_id: client.client_id, client_secret: client.client_secret },
    })
  ).body.access_token as string;
  shops += 1;
  const language = `shop${shops}`;
  const created = await env.request('POST', '/api/v1/languages', { token, body: { language: { id: language, name: 'Shop', code: 'xx' } } });
  expect(created.status).toBe(200);
  const accountId = await env.db.oneFirst(sql.type(z.object({ id: z.number() }))`SELECT id FROM accounts WHERE name = ${client.account}`);
  return { token, accountId, language };
}

interface RawUpload {
  /** The answer, whenever it comes (the body may still be unsent). */
  answer: Promise<HttpResponse & { ms: number }>;
  abort(): void;
}

/**
 * An upload over a raw HTTP connection, which can stop sending (`stall`) or
 * claim a length it never sends; the answer is checked against /openapi.json
 * like the harness's.
 */
function rawUpload(
  shop: Shop,
  chunks: Buffer[],
  options: { stall?: boolean; headers?: Record<string, string>; baseUrl?: string } = {},
): RawUpload {
  const path = `/api/v1/languages/${shop.language}/bulk`;
  const baseUrl = options.baseUrl ?? env.baseUrl;
  const started = Date.now();
  const request = http.request(`${baseUrl}${path}`, {
    method: 'POST',
    agent: false,
    headers: { ...NDJSON, authorization: `Bearer ${shop.token}`, ...options.headers },
  });
  const answer = new Promise<HttpResponse & { ms: number }>((resolve, reject) => {
    let answered = false;
    request.on('response', (response) => {
      answered = true;
      const parts: Buffer[] = [];
      response.on('data', (part: Buffer) => parts.push(part));
      response.on('error', reject);
      response.on('end', () => {
        const text = Buffer.concat(parts).toString();
        const headers = new Headers();
        for (const [name, value] of Object.entries(response.headers)) if (typeof value === 'string') headers.set(name, value);
        let body: unknown;
        try {
          body = text ? JSON.parse(text) : undefined;
        } catch {
          body = undefined;
        }
        const result = { status: response.statusCode!, headers, body, text, ms: Date.now() - started };
        const check = openApiCheckEnabled ? checkResponse(baseUrl, 'POST', path, result) : Promise.resolve();
        check.then(() => resolve(result), reject);
      });
    });
    // Once answered, the server closing the connection under a body still being sent is expected.
    request.on('error', (error) => {
      if (!answered) reject(error);
    });
  });
  for (const chunk of chunks) request.write(chunk);
  if (!options.stall) request.end();
  return { answer, abort: () => request.destroy() };
}

async function waitFor<T>(what: string, probe: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`${what}: still ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** Uploads being received for the account, and lines stored for them so far. */
async function receiving(accountId: number) {
  return env.db.one(sql.type(z.object({ jobs: z.number(), lines: z.number() }))`
    SELECT count(*)::int8 AS jobs,
      coalesce(sum((SELECT count(*) FROM bulk_lines l WHERE l.job_id = j.id)), 0)::int8 AS lines
    FROM bulk_jobs j WHERE account_id = ${accountId} AND status = 'receiving'
  `);
}

/** What an account keeps of its uploads: jobs anyone can see, and stored lines of any job. */
async function kept(shop: Shop) {
  const listed = await env.request('GET', `/api/v1/languages/${shop.language}/bulk`, { token: shop.token });
  expect(listed.status).toBe(200);
  const lines = await env.db.oneFirst(sql.type(z.object({ lines: z.number() }))`
    SELECT count(*)::int8 AS lines FROM bulk_lines l JOIN bulk_jobs j ON j.id = l.job_id WHERE j.account_id = ${shop.accountId}
  `);
  return { jobs: listed.body.meta.total as number, lines };
}

async function upload(shop: Shop, raw: string | Buffer, headers: Record<string, string> = {}) {
  return env.request('POST', `/api/v1/languages/${shop.language}/bulk`, { token: shop.token, raw, headers: { ...NDJSON, ...headers } });
}

async function waitForJob(shop: Shop, location: string) {
  return waitFor(
    `bulk job ${location}`,
    async () => (await env.request('GET', location, { token: shop.token })).body.bulk_job,
    (job) => ['completed', 'failed'].includes(job.status),
    60_000,
  );
}

const productLines = (prefix: string, count: number) =>
  Array.from({ length: count }, (_, index) => `{"product":{"id":"${prefix}${index}","name":"${'n'.repeat(200)}"}}\n`).join('');

describe('when one account stalls four uploads', () => {
  it("should answer another account's upload at once and every stalled upload within 10 s: 408 for those it took, 429 beyond its limit", async () => {
    const [a, b] = [await newShop(), await newShop()];
    const started = Date.now();
    // Ten bytes each, then nothing.
    const stalled = Array.from({ length: 4 }, () => rawUpload(a, [Buffer.from('{"product"')], { stall: true }));
    try {
      await waitFor(
        'A uploads being received',
        () => receiving(a.accountId),
        (now) => now.jobs === 2,
      );

      const other = await upload(b, '{"product":{"id":"B1","name":"from B"}}\n');
      expect(other.status).toBe(202);
      expect(Date.now() - started).toBeLessThan(10_000);

      const answers = await Promise.all(stalled.map((item) => item.answer));
      expect(Math.max(...answers.map((answer) => answer.ms))).toBeLessThan(10_000);
      expect(answers.map((answer) => answer.status).sort()).toEqual([408, 408, 429, 429]);
      for (const answer of answers.filter((item) => item.status === 429)) {
        expect(Number(answer.headers.get('retry-after'))).toBeGreaterThan(0);
        expect(answer.body).toEqual({ error: { message: expect.stringContaining('at most 2 at a time') } });
      }
      for (const answer of answers.filter((item) => item.status === 408)) {
        // The idle timeout, not the server's 5-minute request timeout, cut it.
        expect(answer.ms).toBeLessThan(IDLE_TIMEOUT_MS + 3_000);
        expect(answer.body).toEqual({ error: { message: expect.stringContaining('No data received for 2 s') } });
        expect(answer.headers.get('connection')).toBe('close');
      }
      expect(await kept(a)).toEqual({ jobs: 0, lines: 0 });

      // The slots are free again.
      const again = await upload(a, '{"product":{"id":"A1","name":"from A"}}\n');
      expect(again.status).toBe(202);
      expect(await waitForJob(a, again.headers.get('location')!)).toMatchObject({ status: 'completed', saved: 1 });
      expect(await waitForJob(b, other.headers.get('location')!)).toMatchObject({ status: 'completed', saved: 1 });
    } finally {
      for (const item of stalled) item.abort();
    }
  }, 60_000);

  it('should hold no database connection for uploads that stall after their first batches, whatever the number of accounts', async () => {
    // Six uploads in progress (more than the API's 4 COPY connections), each with megabytes stored, then stalled mid-line.
    const stallers = [await newShop(), await newShop(), await newShop()];
    const other = await newShop();
    const body = Buffer.from(`${productLines('S', 12_000)}{"product":{"id":"half`);
    const stalled = stallers.flatMap((shop) => [0, 1].map(() => rawUpload(shop, [body], { stall: true })));
    try {
      for (const shop of stallers) {
        await waitFor(
          'stalled uploads with lines stored',
          () => receiving(shop.accountId),
          (now) => now.jobs === 2 && now.lines >= 2 * 5_000,
        );
      }
      const started = Date.now();
      const answer = await upload(other, '{"product":{"id":"O1","name":"other"}}\n');
      expect(answer.status).toBe(202);
      expect(Date.now() - started).toBeLessThan(10_000);

      const cut = await Promise.all(stalled.map((item) => item.answer));
      expect(cut.map((item) => item.status)).toEqual([408, 408, 408, 408, 408, 408]);
      // Removed with the lines stored so far (in the background, right after the answer).
      for (const shop of stallers)
        await waitFor(
          'nothing kept',
          () => kept(shop),
          (now) => now.jobs === 0 && now.lines === 0,
        );
    } finally {
      for (const item of stalled) item.abort();
    }
  }, 90_000);

  it('should remove an upload whose client goes away in the middle', async () => {
    const shop = await newShop();
    const broken = rawUpload(shop, [Buffer.from(`${productLines('G', 12_000)}{"product"`)], { stall: true });
    await waitFor(
      'lines stored',
      () => receiving(shop.accountId),
      (now) => now.jobs === 1 && now.lines > 0,
    );
    broken.abort();
    await broken.answer.catch(() => undefined);
    await waitFor(
      'nothing kept',
      () => kept(shop),
      (now) => now.jobs === 0 && now.lines === 0,
    );
    expect(await receiving(shop.accountId)).toEqual({ jobs: 0, lines: 0 });
  }, 60_000);
});

describe('when the API process receiving uploads dies', () => {
  it('should keep nothing of them, answer 429 with a Retry-After that says when their places free, and free them then', async () => {
    const shop = await newShop();
    // The deployment's idle timeout (30 s): how soon a place frees does not depend on it.
    const { child: api, baseUrl } = await spawnApi(env.config, { BULK_IDLE_TIMEOUT_MS: '30000' });
    const body = Buffer.from(`${productLines('D', 12_000)}{"product"`);
    const stalled = [0, 1].map(() => rawUpload(shop, [body], { stall: true, baseUrl }));
    for (const item of stalled) item.answer.catch(() => undefined);
    await waitFor(
      'uploads with lines stored',
      () => receiving(shop.accountId),
      (now) => now.jobs === 2 && now.lines >= 2 * 5_000,
    );
    await stopProcess(api, 'SIGKILL');
    const killed = Date.now();
    const line = '{"product":{"id":"after","name":"after the crash"}}\n';

    // Nobody can tell yet whether the process is gone or slow: its uploads keep their places for a moment ...
    const meanwhile = await upload(shop, line);
    expect(meanwhile.status).toBe(429);
    expect(await kept(shop)).toMatchObject({ jobs: 0 });
    // ... which the answer says: the lease its process no longer renews ends within 10 s.
    const retryAfterS = Number(meanwhile.headers.get('retry-after'));
    expect(retryAfterS).toBeGreaterThanOrEqual(1);
    expect(retryAfterS).toBeLessThanOrEqual(10);
    await new Promise((resolve) => setTimeout(resolve, retryAfterS * 1_000));
    // Asked again when told to (with a second's slack for the clocks), the upload is taken.
    const accepted = await waitFor(
      'a place again',
      () => upload(shop, line),
      (answer) => answer.status === 202,
      1_000,
    );
    expect(Date.now() - killed).toBeLessThan(15_000);
    expect(await waitForJob(shop, accepted.headers.get('location')!)).toMatchObject({ status: 'completed', lines: 1, saved: 1 });
    // A worker's sweeper removes the abandoned uploads a while after their leases ended (20 s).
    await waitFor(
      'abandoned uploads removed',
      () => receiving(shop.accountId),
      (now) => now.jobs === 0 && now.lines === 0,
      45_000,
    );
    expect(await kept(shop)).toEqual({ jobs: 1, lines: 0 });
  }, 120_000);
});

describe('when a 20 MB body of newlines is uploaded', () => {
  it("should take it as an empty file and answer another account's reads meanwhile", async () => {
    const [uploaderShop, reader] = [await newShop(), await newShop()];
    const saved = await env.request('POST', `/api/v1/languages/${reader.language}/products`, {
      token: reader.token,
      body: { product: { id: 'R1', name: 'read me' } },
    });
    expect(saved.status).toBe(200);
    // The API alone in its process, as deployed: what slows the reads is the API's own work, not the test's.
    const { child: api, baseUrl } = await spawnApi(env.config);
    try {
      // Each read's start and end on the machine's clock (milliseconds since the epoch), which the uploader shares.
      const now = () => performance.timeOrigin + performance.now();
      const read = async () => {
        const started = now();
        const answer = await fetch(`${baseUrl}/api/v2/languages/${reader.language}/products/R1`, {
          headers: { authorization: `Bearer ${reader.token}` },
        });
        await answer.arrayBuffer();
        expect(answer.status).toBe(200);
        return { started, ended: now() };
      };
      // Warm: the first reads of a process compile their code paths.
      for (let index = 0; index < 10; index += 1) await read();

      // An upload takes a fraction of a second: files are sent one after another while the reads go on.
      const uploader = startNewlineUploads(`${baseUrl}/api/v1/languages/${uploaderShop.language}/bulk`, uploaderShop.token);
      const reads: Array<{ started: number; ended: number }> = [];
      try {
        // Reads start with the first upload and go on while the client sends file after file.
        const deadline = Date.now() + 120_000;
        while (reads.length < 500 && Date.now() < deadline) reads.push(await read());
      } finally {
        uploader.stop();
      }
      const uploads = uploader.uploads();
      expect(uploads.length).toBeGreaterThan(0);
      for (const upload of uploads) {
        expect(upload.status).toBe(202);
        expect(upload.body.bulk_job.lines).toBe(0);
      }

      // Every read above was answered (200) while uploads came in one after another; most lay wholly within one.
      // How long they waited is a figure of the bench (its uploads phase, target p99 <= 250 ms), not a bound for a
      // test on a shared machine.
      const within = reads.filter((one) => uploads.some((upload) => one.started >= upload.started && one.ended <= upload.ended)).length;
      const latencies = reads.map((one) => one.ended - one.started).sort((x, y) => x - y);
      console.log(
        `${uploads.length} uploads of 20 MB of newlines; ${reads.length} reads, ${within} of them within an upload, ` +
          `p50 ${latencies[latencies.length >> 1]!.toFixed(1)} ms, p99 ${latencies[Math.ceil(latencies.length * 0.99) - 1]!.toFixed(1)} ms`,
      );
      expect(within).toBeGreaterThan(0);
    } finally {
      await stopProcess(api);
    }
  }, 180_000);
});

describe('when the body is compressed', () => {
  it('should read a gzip-compressed file as the file itself', async () => {
    const shop = await newShop();
    const lines = `${productLines('Z', 3_000)}{"product":{"id":"Z-bad"}}\n`;
    const answer = await upload(shop, gzipSync(lines), { 'content-encoding': 'gzip' });
    expect(answer.status).toBe(202);
    expect(answer.body.bulk_job.lines).toBe(3_001);
    const job = await waitForJob(shop, answer.headers.get('location')!);
    expect(job).toMatchObject({ status: 'completed', saved: 3_000, failed: 1 });
    expect(job.errors).toEqual([{ line: 3_001, error: { error: { message: expect.any(String), missing_parameters: ['name'] } } }]);
    const read = await env.request('GET', `/api/v2/languages/${shop.language}/products/Z2999`, { token: shop.token });
    expect(read.status).toBe(200);
    expect(read.body.name).toBe('n'.repeat(200));
  });

  it('should answer 400 for a body that is not gzip, keeping nothing', async () => {
    const shop = await newShop();
    const answer = await upload(shop, '{"product":{"id":"P1","name":"plain"}}\n', { 'content-encoding': 'gzip' });
    expect(answer.status).toBe(400);
    expect(answer.body).toEqual({ error: { message: expect.stringContaining('not valid gzip') } });
    expect(await kept(shop)).toEqual({ jobs: 0, lines: 0 });
  });

  it.each(['br', 'deflate', 'compress', 'zstd', 'gzip, gzip'])('should answer 415 for Content-Encoding: %s', async (coding) => {
    const shop = await newShop();
    const answer = await upload(shop, '{"product":{"id":"P1","name":"x"}}\n', { 'content-encoding': coding });
    expect(answer.status).toBe(415);
    expect(answer.body).toEqual({ error: { message: expect.stringContaining('Content-Encoding: gzip') } });
  });

  it('should stop a gzip bomb at the size limit, counted after decoding', async () => {
    const shop = await newShop();
    // 64 MiB of newlines packs into about 64 KB.
    const bomb = gzipSync(Buffer.alloc(2 * MAX_BYTES, '\n'));
    expect(bomb.length).toBeLessThan(MAX_BYTES / 100);
    const answer = await upload(shop, bomb, { 'content-encoding': 'gzip' });
    expect(answer.status).toBe(413);
    expect(answer.body).toEqual({ error: { message: expect.stringContaining(`larger than ${MAX_BYTES} bytes`) } });
    expect(await kept(shop)).toEqual({ jobs: 0, lines: 0 });
  });

  it('should refuse a plain body that declares more than the limit before reading it', async () => {
    const shop = await newShop();
    const declared = rawUpload(shop, [Buffer.from('{"product"')], { stall: true, headers: { 'content-length': String(MAX_BYTES + 1) } });
    const answer = await declared.answer;
    declared.abort();
    expect(answer.status).toBe(413);
    expect(answer.ms).toBeLessThan(IDLE_TIMEOUT_MS);
  });
});
