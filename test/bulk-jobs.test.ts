import type { Job } from 'bullmq';
import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyBulkBatch } from '../bulk/bulk-batch.service.js';
import { type RunningWorker, startWorker } from '../worker/worker.js';
import { startEnvironment, type TestEnvironment } from './support/harness.js';
import { pollUntil } from './support/poll.js';
import { openQueues, type TestQueues } from './support/queues.js';

/*
 * Bulk jobs a shop can watch: counts that move while the worker goes through
 * the file, the effects catching up behind them, a list of past uploads, and
 * the progress on the queue job that the dashboard draws.
 */

const NDJSON = { 'content-type': 'application/x-ndjson' };

let env: TestEnvironment;
let queues: TestQueues;
let worker: RunningWorker | undefined;
let token: string;
let otherToken: string;

/** A catalogue of `count` products, each in two categories (so every line has effects to apply). */
const catalogue = (count: number, prefix = 'P') =>
  Array.from({ length: count }, (_, index) =>
    JSON.stringify({ product: { id: `${prefix}${index}`, name: `Product ${index}`, category_ids: [`C${index % 7}`, 'C-all'] } }),
  );

async function upload(languageId: string, lines: string[], as = token) {
  const response = await env.request('POST', `/api/v1/languages/${languageId}/bulk`, { token: as, raw: lines.join('\n'), headers: NDJSON });
  expect(response.status, response.text).toBe(202);
  return response.body.bulk_job as { id: string };
}

const getJob = async (languageId: string, id: string) => {
  const response = await env.request('GET', `/api/v1/languages/${languageId}/bulk/${id}`, { token });
  expect(response.status, response.text).toBe(200);
  return response.body.bulk_job;
};

beforeAll(async () => {
  // No worker at first: the test moves the file on itself to see every state.
  env = await startEnvironment({ worker: false });
  queues = openQueues(env.config);
  token = await env.token();
  otherToken = await env.token();
  for (const [id, as] of [
    ['nl', token],
    ['de', token],
    ['nl', otherToken],
  ] as const) {
    const response = await env.request('POST', '/api/v1/languages', { token: as, body: { language: { id, name: id, code: id } } });
    expect(response.status).toBe(200);
  }
});

afterAll(async () => {
  await worker?.close();
  await queues?.close();
  await env?.close();
});

describe('when a bulk file is applied', () => {
  let jobId: string;

  it('should answer queued with nothing stored or applied yet', async () => {
    const lines = catalogue(2_500);
    lines.splice(10, 0, '{"product":{"id":"broken"}}');
    jobId = (await upload('nl', lines)).id;
    expect(await getJob('nl', jobId)).toMatchObject({
      status: 'queued',
      lines: 2_501,
      lines_stored: 0,
      lines_applied: 0,
      saved: 0,
      failed: 0,
      started_at: null,
      finished_at: null,
      error: null,
    });
  });

  it('should answer running with the lines stored so far while their effects wait for the applier', async () => {
    // One batch, as a worker's slice would take it. The language's own creation is still pending (no worker has run), so the
    // batch queues its changes behind it (sync/in-turn.applier.ts) and no effect is applied yet.
    await applyBulkBatch(env.db, jobId, { batchSize: 1_000 });
    const job = await getJob('nl', jobId);
    expect(job).toMatchObject({ status: 'running', lines: 2_501, lines_stored: 1_000, lines_applied: 0, saved: 999, failed: 1 });
    expect(job.started_at).toEqual(expect.any(String));
    expect(job.errors).toEqual([{ line: 11, error: { error: { message: expect.any(String), missing_parameters: ['name'] } } }]);
    // Stored lines are readable at once, before their effects.
    const product = await env.request('GET', '/api/v2/languages/nl/products/P0', { token });
    expect(product.status).toBe(200);
  });

  it('should count lines as applied once the worker has applied their effects, up to the whole file', async () => {
    worker = await startWorker(env.config);
    const job = await pollUntil(
      () => getJob('nl', jobId),
      (current) => current.lines_applied === current.lines,
      { timeoutMs: 60_000, intervalMs: 100 },
    );
    expect(job).toMatchObject({ status: 'completed', lines: 2_501, lines_stored: 2_501, lines_applied: 2_501, saved: 2_500, failed: 1 });
    expect(job.finished_at).toEqual(expect.any(String));
    // Applied means the effects are there: the links of the last line.
    const category = await env.request('GET', '/api/v2/languages/nl/categories/C-all/products?per_page=1', { token });
    expect(category.body.meta.total).toBe(2_500);
  });

  it('should never show more lines applied than stored while a file is under way', async () => {
    const second = await upload('nl', catalogue(3_000, 'Q'));
    const seen: Array<{ status: string; lines_stored: number; lines_applied: number }> = [];
    const last = await pollUntil(
      async () => {
        const job = await getJob('nl', second.id);
        seen.push(job);
        return job;
      },
      (job) => job.lines_applied === job.lines,
      { timeoutMs: 60_000, intervalMs: 20 },
    );
    expect(last).toMatchObject({ status: 'completed', lines_stored: 3_000, lines_applied: 3_000 });
    for (const job of seen) expect(job.lines_applied).toBeLessThanOrEqual(job.lines_stored);
    // Counts only ever grow.
    for (let index = 1; index < seen.length; index += 1) {
      expect(seen[index]!.lines_stored).toBeGreaterThanOrEqual(seen[index - 1]!.lines_stored);
      expect(seen[index]!.lines_applied).toBeGreaterThanOrEqual(seen[index - 1]!.lines_applied);
    }
  });

  it("should put the file's progress on the queue job, where the dashboard shows it", async () => {
    const jobs = (await queues.queues.bulk.getJobs(['completed'])) as Job[];
    const progress = jobs.map((job) => job.progress as Record<string, unknown>).filter((value) => value && value['bulk_job'] === jobId);
    expect(progress.length).toBeGreaterThan(0);
    expect(progress).toContainEqual({ progress: 100, bulk_job: jobId, lines: 2_501, lines_stored: 2_501, status: 'completed' });
  });

  it('should stream every line error from .../errors as NDJSON', async () => {
    const response = await env.request('GET', `/api/v1/languages/nl/bulk/${jobId}/errors`, { token });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/x-ndjson/);
    expect(
      response.text
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line)),
    ).toEqual([{ line: 11, error: { error: { message: expect.any(String), missing_parameters: ['name'] } } }]);
  });
});

describe("when a language's bulk jobs are listed", () => {
  let ids: string[];

  beforeAll(async () => {
    ids = [];
    for (let index = 0; index < 3; index += 1) ids.push((await upload('de', [`{"brand":{"id":"B${index}","name":"B"}}`])).id);
    await upload('nl', ['{"brand":{"id":"other-account","name":"B"}}'], otherToken);
  });

  it('should list them newest first without their errors, paginated like v2 lists', async () => {
    const first = await env.request('GET', '/api/v1/languages/de/bulk?per_page=2', { token });
    expect(first.status).toBe(200);
    expect(first.body.meta).toEqual({ current_page: 1, per_page: 2, total: 3 });
    expect(first.body.data.map((job: { id: string }) => job.id)).toEqual([ids[2], ids[1]]);
    expect(Object.keys(first.body.data[0]).sort()).toEqual(
      [
        'created_at',
        'error',
        'failed',
        'finished_at',
        'id',
        'lines',
        'lines_applied',
        'lines_stored',
        'saved',
        'started_at',
        'status',
      ].sort(),
    );
    const second = await env.request('GET', '/api/v1/languages/de/bulk?page=2&per_page=2', { token });
    expect(second.body).toMatchObject({ meta: { current_page: 2, per_page: 2, total: 3 } });
    expect(second.body.data.map((job: { id: string }) => job.id)).toEqual([ids[0]]);
    const past = await env.request('GET', '/api/v1/languages/de/bulk?page=99', { token });
    expect(past.body).toEqual({ data: [], meta: { current_page: 99, per_page: 10, total: 3 } });
  });

  it("should show only the account's own jobs of that language", async () => {
    const mine = await env.request('GET', '/api/v1/languages/nl/bulk?per_page=250', { token });
    const theirs = await env.request('GET', '/api/v1/languages/nl/bulk', { token: otherToken });
    expect(mine.body.meta.total).toBe(2);
    expect(theirs.body.meta.total).toBe(1);
    const mineIds = new Set(mine.body.data.map((job: { id: string }) => job.id));
    expect(theirs.body.data.filter((job: { id: string }) => mineIds.has(job.id))).toEqual([]);
  });

  it.each([
    ['a per_page above 250', '?per_page=251', 400, 'invalid_parameters'],
    ['a page of 0', '?page=0', 400, 'invalid_parameters'],
    ['a timestamp filter (jobs are not filtered)', '?created_after=2024-01-01', 400, 'unknown_parameters'],
  ])('should refuse %s with 400', async (_case, query, status, errorClass) => {
    const response = await env.request('GET', `/api/v1/languages/de/bulk${query}`, { token });
    expect(response.status).toBe(status);
    expect(response.body.error).toHaveProperty(errorClass);
  });

  it('should answer 404 for a language the account does not have', async () => {
    const response = await env.request('GET', '/api/v1/languages/fr/bulk', { token });
    expect(response.status).toBe(404);
    expect(response.body).toEqual({ error: { message: "Language 'fr' not found" } });
  });
});

describe('when a file is taken in one batch that waits for a record another transaction holds', () => {
  it('should read running from when it began, and a start before its finish by the time it waited', async () => {
    worker ??= await startWorker(env.config);
    const seed = await upload('de', ['{"product":{"id":"held","name":"Held"}}']);
    await pollUntil(
      () => getJob('de', seed.id),
      (job) => job.lines_applied === job.lines,
      { timeoutMs: 30_000, intervalMs: 50 },
    );
    let release!: () => void;
    let holding!: () => void;
    const held = new Promise<void>((resolve) => {
      holding = resolve;
    });
    // Another transaction holds the record the file's one batch writes, until the test lets it go.
    const holder = env.db.transaction(async (tx) => {
      await tx.query(sql.unsafe`SELECT 1 FROM records WHERE kind = 'product' AND id = 'held' FOR UPDATE`);
      holding();
      await new Promise<void>((resolve) => {
        release = resolve;
      });
    });
    await held;
    const file = await upload('de', [...catalogue(50, 'H'), '{"product":{"id":"held","name":"Held again"}}']);
    const running = await pollUntil(
      () => getJob('de', file.id),
      (job) => job.status !== 'queued',
      { timeoutMs: 30_000, intervalMs: 20 },
    );
    expect(running).toMatchObject({ status: 'running', lines_stored: 0, started_at: expect.any(String), finished_at: null });
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    release();
    await holder;
    const done = await pollUntil(
      () => getJob('de', file.id),
      (job) => job.lines_applied === job.lines,
      { timeoutMs: 30_000, intervalMs: 50 },
    );
    expect(done).toMatchObject({ status: 'completed', lines_stored: 51, started_at: running.started_at });
    expect(Date.parse(done.finished_at) - Date.parse(done.started_at)).toBeGreaterThanOrEqual(1_000);
  });
});
