import { readFile } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { spawnApi } from './support/api-process.js';
import { waitForV1BulkJob } from './support/bulk-jobs.js';
import { httpRequest, startEnvironment, type TestEnvironment } from './support/harness.js';
import { checkResponse, openApiCheckEnabled } from './support/openapi-check.js';
import { spawnWorker, stopProcess } from './support/processes.js';
import { SEGMENT } from './support/v2-client.js';

let env: TestEnvironment;
let token: string;
let accountId: number;

const NDJSON = { 'content-type': 'application/x-ndjson' };

async function createLanguage(id: string) {
  const response = await env.request('POST', '/api/v1/languages', { token, body: { language: { id, name: id, code: 'xx' } } });
  expect(response.status).toBe(200);
}

async function upload(languageId: string, lines: string[] | string) {
  const raw = Array.isArray(lines) ? lines.join('\n') : lines;
  return env.request('POST', `/api/v1/languages/${languageId}/bulk`, { token, raw, headers: NDJSON });
}

/** Sends v1 lines as their single requests, one by one; returns the `{line, error}` the job must report for them. */
async function sendOneByOne(languageId: string, lines: Array<Record<string, any>>) {
  const errors: Array<{ line: number; error: unknown }> = [];
  const segment = (kind: string) => SEGMENT[kind as keyof typeof SEGMENT];
  for (const [index, parsed] of lines.entries()) {
    const answer = parsed['delete']
      ? await env.request('DELETE', `/api/v1/languages/${languageId}/${segment(parsed['delete'].kind)}/${parsed['delete'].id}`, { token })
      : await env.request('POST', `/api/v1/languages/${languageId}/${segment(Object.keys(parsed)[0]!)}`, { token, body: parsed });
    if (answer.status >= 500) throw new Error(`${JSON.stringify(parsed)} answered ${answer.status}: ${answer.text}`);
    if (answer.status !== 200) errors.push({ line: index + 1, error: answer.body });
  }
  return errors;
}

const stateRow = z.object({ kind: z.string(), id: z.string(), data: z.record(z.unknown()) });

/** Records, links and audit facts of a language, for comparing two languages fed the same lines. */
async function stateOf(languageId: string) {
  const langKey = await env.db.oneFirst(sql.type(z.object({ lang_key: z.number() }))`
    SELECT lang_key FROM languages WHERE id = ${languageId} AND account_id = ${accountId} AND deleted_at IS NULL
  `);
  const records = await env.db.any(sql.type(stateRow)`
    SELECT kind, id, data FROM records WHERE lang_key = ${langKey} AND live ORDER BY kind, id
  `);
  const links = await env.db.anyFirst(sql.type(z.object({ link: z.string() }))`
    SELECT rel || ':' || a || '>' || b AS link FROM links WHERE lang_key = ${langKey} ORDER BY 1
  `);
  const audit = await env.db.anyFirst(sql.type(z.object({ fact: z.string() }))`
    SELECT kind || '/' || record_id || '/' || action AS fact FROM audit_log
    WHERE lang_key = ${langKey} AND kind <> 'language' ORDER BY seq
  `);
  return { records, links, audit };
}

beforeAll(async () => {
  env = await startEnvironment();
  const client = await env.newClient();
  const tokenResponse = await env.request('POST', '/oauth/token', {
    body: { grant_type: 'client_credentials', client_id: client.client_id, client_secret: client.client_secret },
  });
  token = tokenResponse.body.access_token;
  accountId = await env.db.oneFirst(sql.type(z.object({ id: z.number() }))`SELECT id FROM accounts WHERE name = ${client.account}`);
});
afterAll(() => env.close());

const MIXED = [
  '{"product":{"id":"P1","name":"Shoe","price":10,"category_ids":["C1","C2"]}}',
  '{"product":{"id":"P2","name":"Boot","relevant_product_ids":["P1"],"variant_ids":["V9"]}}',
  '{"product":{"id":"P3"}}',
  'this is not json',
  '{"category":{"id":"C1","name":"Men","product_ids":["P2"],"parent_category_id":"C0"}}',
  '',
  '{"variant":{"id":"V1","product_id":"P1","title":"Red","price_incl":"cheap"}}',
  '{"variant":{"id":"V1","product_id":"P1","title":"Red"}}',
  '{"brand":{"id":"B1","name":"Acme","product_ids":["P1","P4"]}}',
  '{"delete":{"kind":"product","id":"P2"}}',
  '{"delete":{"kind":"review","id":"nope"}}',
  '{"profile":{"id":"u1","email":"u1@example.test"}}',
  '{"order":{"id":"O1","profile_id":"u1","products":[{"id":"P1","quantity":2}]}}',
  '{"shopping_cart":{"id":"S1","profile_id":"u2","product_ids":["P1"]},"extra":1}',
  '{"wat":{}}',
  '[1,2]',
];

describe('when a file mixes valid and invalid lines', () => {
  it('should report exactly the invalid lines and end in the state of the same lines sent one by one', async () => {
    await createLanguage('bulk-mixed');
    const response = await upload('bulk-mixed', MIXED);
    expect(response.status).toBe(202);
    expect(response.headers.get('location')).toBe(`/api/v1/languages/bulk-mixed/bulk/${response.body.bulk_job.id}`);
    expect(response.body.bulk_job).toMatchObject({ status: 'queued', lines: MIXED.filter((line) => line !== '').length });

    const job = await waitForV1BulkJob(env, token, response.headers.get('location')!);
    expect(job).toMatchObject({ status: 'completed', lines: 15, saved: 8, failed: 7 });
    expect(job.errors).toEqual([
      { line: 3, error: { error: { message: expect.any(String), missing_parameters: ['name'] } } },
      { line: 4, error: { error: { message: 'Malformed JSON on this line' } } },
      { line: 7, error: { error: { message: expect.any(String), invalid_parameters: ['price_incl'] } } },
      { line: 11, error: { error: 'Review not found' } },
      { line: 14, error: { error: { message: expect.any(String), unknown_parameters: ['extra'] } } },
      { line: 15, error: { error: { message: expect.any(String), unknown_parameters: ['wat'] } } },
      { line: 16, error: { error: { message: 'Each line must be a JSON object' } } },
    ]);
    await createLanguage('one-by-one');
    for (const line of MIXED) {
      if (line === '') continue;
      let parsed: Record<string, any>;
      try {
        parsed = JSON.parse(line);
      } catch {
        continue;
      }
      if (Array.isArray(parsed)) continue;
      if (parsed['delete']) {
        const segment = { product: 'products', review: 'reviews' }[parsed['delete'].kind as 'product' | 'review'];
        await env.request('DELETE', `/api/v1/languages/one-by-one/${segment}/${parsed['delete'].id}`, { token });
        continue;
      }
      const kind = Object.keys(parsed).find((key) => key !== 'extra')!;
      const segment = SEGMENT[kind as keyof typeof SEGMENT];
      if (!segment) continue;
      await env.request('POST', `/api/v1/languages/one-by-one/${segment}`, { token, body: parsed });
    }
    await env.drain();
    expect(await stateOf('bulk-mixed')).toEqual(await stateOf('one-by-one'));
  });

  it('should list every error as NDJSON', async () => {
    await createLanguage('bulk-errors');
    const lines = Array.from({ length: 1_205 }, (_, index) =>
      index % 2 === 0 ? `{"product":{"id":"E${index}"}}` : `{"product":{"id":"E${index}","name":"ok"}}`,
    );
    const response = await upload('bulk-errors', lines);
    const job = await waitForV1BulkJob(env, token, response.headers.get('location')!);
    expect(job).toMatchObject({ status: 'completed', lines: 1_205, saved: 602, failed: 603 });
    expect(job.errors).toHaveLength(603);
    const all = await env.request('GET', `${response.headers.get('location')}/errors`, { token });
    expect(all.status).toBe(200);
    expect(all.headers.get('content-type')).toContain('application/x-ndjson');
    const parsed = all.text
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(parsed).toHaveLength(603);
    expect(parsed[0]).toEqual({ line: 1, error: { error: { message: expect.any(String), missing_parameters: ['name'] } } });
  });
});

describe('when a long random file mixes kinds, repeats ids and deletes', () => {
  // Runs of distinct records are stored and applied set-based; repeats, deletes, profiles and kind changes end a run.
  // 2,500 lines cross bulk batches (1,000 lines) and applier batches (500 changes) many times.
  it('should end in the state of the same lines sent one by one', async () => {
    let seed = Number(process.env['BULK_SEED'] ?? 20261121);
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const pick = <T>(items: T[]) => items[Math.floor(random() * items.length)]!;
    const ids = (prefix: string, count: number) => Array.from({ length: count }, (_, index) => `${prefix}${index}`);
    const products = ids('P', 60);
    const categories = ids('C', 15);
    const brands = ids('B', 4);
    const some = (pool: string[], max: number) => [...new Set(Array.from({ length: Math.floor(random() * (max + 1)) }, () => pick(pool)))];
    const lines: string[] = [];
    const written = new Set<string>();
    for (let index = 0; index < 2_500; index += 1) {
      const roll = random();
      if (roll < 0.55) {
        const product: Record<string, unknown> = { id: pick(products), name: `n${index}` };
        if (random() < 0.8) product['category_ids'] = some(categories, 3);
        if (random() < 0.15) product['relevant_product_ids'] = some(products, 2);
        lines.push(JSON.stringify({ product }));
        written.add(`product:${product['id']}`);
      } else if (roll < 0.75) {
        const category: Record<string, unknown> = { id: pick(categories), name: `c${index}` };
        if (random() < 0.3) category['parent_category_id'] = pick(categories);
        if (random() < 0.2) category['product_ids'] = some(products, 3);
        lines.push(JSON.stringify({ category }));
        written.add(`category:${category['id']}`);
      } else if (roll < 0.82) {
        const brand = pick(brands);
        // product_ids is a point-at list: such lines take the one-by-one path inside a batch.
        lines.push(
          JSON.stringify({ brand: { id: brand, name: `b${index}`, ...(random() < 0.5 ? { product_ids: some(products, 3) } : {}) } }),
        );
        written.add(`brand:${brand}`);
      } else if (roll < 0.9) {
        // Only records this file wrote itself: whether a stub exists yet when its delete arrives depends on the
        // worker's pace (interface §7.2 makes stubs visible once drained), for bulk lines and single requests alike.
        const candidates = [...written];
        if (candidates.length === 0 || random() < 0.1) {
          lines.push(JSON.stringify({ delete: { kind: 'brand', id: 'never-written' } }));
          continue;
        }
        const target = pick(candidates);
        written.delete(target);
        const [kind, id] = target.split(':');
        lines.push(JSON.stringify({ delete: { kind, id } }));
      } else if (roll < 0.95) {
        lines.push(JSON.stringify({ profile: { id: `u${Math.floor(random() * 5)}`, email: `u${Math.floor(random() * 5)}@example.test` } }));
      } else {
        lines.push(JSON.stringify({ product: { id: pick(products), price: 'not a price' } }));
      }
    }
    await createLanguage('bulk-random');
    const response = await upload('bulk-random', lines);
    expect(response.status).toBe(202);
    const job = await waitForV1BulkJob(env, token, response.headers.get('location')!, 120_000);
    expect(job).toMatchObject({ status: 'completed', lines: lines.length });

    await createLanguage('random-one-by-one');
    const failures = await sendOneByOne(
      'random-one-by-one',
      lines.map((line) => JSON.parse(line)),
    );
    // Each line fails in the file exactly when it fails alone, with the same error body.
    expect(job.errors).toEqual(failures);
    expect(job).toMatchObject({ saved: lines.length - failures.length, failed: failures.length });
    await env.drain(120_000);
    expect(await stateOf('bulk-random')).toEqual(await stateOf('random-one-by-one'));
  }, 240_000);
});

describe('when the file is empty', () => {
  it('should complete with no lines', async () => {
    await createLanguage('bulk-empty');
    const response = await upload('bulk-empty', '');
    expect(response.status).toBe(202);
    const job = await waitForV1BulkJob(env, token, response.headers.get('location')!);
    expect(job).toMatchObject({ status: 'completed', lines: 0, saved: 0, failed: 0, errors: [] });
  });
});

describe('when the upload is refused', () => {
  it.each([
    ['another content type', { 'content-type': 'application/json' }, 415],
    ['no content type', {}, 415],
  ])('should answer %s with %s', async (_name, headers, status) => {
    await createLanguage('bulk-refused');
    const response = await env.request('POST', '/api/v1/languages/bulk-refused/bulk', { token, raw: '{}', headers });
    expect(response.status).toBe(status);
  });

  it('should answer 404 for an unknown language and for an unknown job', async () => {
    const unknownLanguage = await upload('nope', ['{"product":{"id":"x","name":"x"}}']);
    expect(unknownLanguage.status).toBe(404);
    expect(unknownLanguage.body).toEqual({ error: { message: "Language 'nope' not found" } });
    await createLanguage('bulk-404');
    const unknownJob = await env.request('GET', '/api/v1/languages/bulk-404/bulk/00000000-0000-0000-0000-000000000000', { token });
    expect(unknownJob.status).toBe(404);
    expect(unknownJob.body).toEqual({ error: 'Bulk job not found' });
  });
});

describe('when a worker is killed in the middle of a file', () => {
  it('should resume where it stopped, applying no line twice and losing none', async () => {
    const lonely = await startEnvironment({ worker: false });
    try {
      const client = await lonely.newClient();
      const tokenResponse = await lonely.request('POST', '/oauth/token', {
        body: { grant_type: 'client_credentials', client_id: client.client_id, client_secret: client.client_secret },
      });
      const own = tokenResponse.body.access_token as string;
      await lonely.request('POST', '/api/v1/languages', { token: own, body: { language: { id: 'kill', name: 'k', code: 'k' } } });
      const LINES = 60_000;
      const lines = Array.from(
        { length: LINES },
        (_, index) => `{"product":{"id":"K${index}","name":"n${index}","category_ids":["C${index % 7}"]}}`,
      );
      const response = await lonely.request('POST', '/api/v1/languages/kill/bulk', { token: own, raw: lines.join('\n'), headers: NDJSON });
      expect(response.status).toBe(202);

      const victim = spawnWorker(lonely.config);
      const deadline = Date.now() + 60_000;
      for (;;) {
        const progress = await lonely.db.oneFirst(sql.type(z.object({ next_line: z.number() }))`
          SELECT next_line FROM bulk_jobs WHERE id = ${response.body.bulk_job.id}
        `);
        if (progress > 0) break;
        if (Date.now() > deadline) throw new Error('the worker never made progress');
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      await stopProcess(victim, 'SIGKILL');
      const atKill = await lonely.db.oneFirst(sql.type(z.object({ next_line: z.number() }))`
        SELECT next_line FROM bulk_jobs WHERE id = ${response.body.bulk_job.id}
      `);
      // Killed in the middle: some batches committed, some lines left.
      expect(atKill).toBeGreaterThan(0);
      expect(atKill).toBeLessThan(LINES);
      const survivor = spawnWorker(lonely.config);
      try {
        const deadlineDone = Date.now() + 120_000;
        let job: any;
        for (;;) {
          job = (await lonely.request('GET', response.headers.get('location')!, { token: own })).body.bulk_job;
          if (job.status === 'completed') break;
          if (Date.now() > deadlineDone) throw new Error(`bulk job did not finish: ${JSON.stringify(job)}`);
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
        expect(job).toMatchObject({ lines: LINES, saved: LINES, failed: 0 });
        await lonely.drain(120_000);
        const counts = await lonely.db.one(sql.type(
          z.object({ products: z.number(), creates: z.number(), distinct_creates: z.number(), links: z.number() }),
        )`
          SELECT
            (SELECT count(*) FROM records WHERE kind = 'product' AND live)::int8 AS products,
            (SELECT count(*) FROM audit_log WHERE kind = 'product' AND action = 'create')::int8 AS creates,
            (SELECT count(DISTINCT record_id) FROM audit_log WHERE kind = 'product' AND action = 'create')::int8 AS distinct_creates,
            (SELECT count(*) FROM links)::int8 AS links
        `);
        expect(counts).toEqual({ products: LINES, creates: LINES, distinct_creates: LINES, links: LINES });
      } finally {
        await stopProcess(survivor);
      }
    } finally {
      await lonely.close();
    }
  }, 240_000);
});

describe('when a 100 MB file is streamed', () => {
  it("should store it without the API process's memory growing with it", async () => {
    await createLanguage('bulk-big');
    // The real API entry point as a process of its own, so /proc shows its memory alone. Its young generation
    // is held at 16 MiB semi-spaces (Node 20's size; Node 24 grows them to 64 MiB, up to ~100 MiB more RSS
    // under any churn, whatever the file's size), so what is measured is what the upload keeps.
    const { child: api, baseUrl } = await spawnApi(env.config, { NODE_OPTIONS: '--max-semi-space-size=16' });
    try {
      const rss = async () => {
        const status = await readFile(`/proc/${api.pid}/status`, 'utf8');
        return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) * 1024;
      };
      // Warm the upload path with a small file first, so the baseline includes loaded code.
      await httpRequest(baseUrl, 'POST', '/api/v1/languages/bulk-big/bulk', {
        token,
        raw: '{"product":{"id":"w","name":"w"}}',
        headers: NDJSON,
      });
      const before = await rss();
      let peak = before;
      const sampler = setInterval(() => {
        rss().then(
          (value) => {
            peak = Math.max(peak, value);
          },
          () => undefined,
        );
      }, 20);
      const line = `{"product":{"id":"ID","name":"${'x'.repeat(180)}"}}\n`;
      const total = 100 * 1024 * 1024;
      const count = Math.ceil(total / line.length);
      async function* generate() {
        const chunk: string[] = [];
        for (let index = 0; index < count; index += 1) {
          chunk.push(line.replace('ID', `big${index}`));
          if (chunk.length === 2_000) {
            yield Buffer.from(chunk.join(''));
            chunk.length = 0;
          }
        }
        if (chunk.length) yield Buffer.from(chunk.join(''));
      }
      const response = await fetch(`${baseUrl}/api/v1/languages/bulk-big/bulk`, {
        method: 'POST',
        headers: { ...NDJSON, authorization: `Bearer ${token}` },
        body: Readable.toWeb(Readable.from(generate())) as unknown as BodyInit,
        duplex: 'half',
      } as RequestInit);
      clearInterval(sampler);
      const text = await response.text();
      const body = JSON.parse(text) as { bulk_job: { lines: number } };
      // A streamed upload cannot go through the harness's request; its answer is checked against /openapi.json all the same.
      if (openApiCheckEnabled)
        await checkResponse(baseUrl, 'POST', '/api/v1/languages/bulk-big/bulk', {
          status: response.status,
          headers: response.headers,
          body,
          text,
        });
      expect(response.status).toBe(202);
      expect(body.bulk_job.lines).toBe(count);
      console.log(`100 MB upload: API RSS ${Math.round(before / 2 ** 20)} MiB before, peak ${Math.round(peak / 2 ** 20)} MiB`);
      expect(peak - before).toBeLessThan(40 * 1024 * 1024);
    } finally {
      await stopProcess(api);
    }
  }, 180_000);
});
