import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BatchAhead, BatchPrefetcher } from '../bulk/batch.prefetcher.js';
import { applyBulkBatch } from '../bulk/bulk-batch.service.js';
import { drainWithWorker, startEnvironment, type TestEnvironment } from './support/harness.js';
import { auditOf, linksOf, liveIds, liveRecord, type RecordKindName } from './support/state.js';

/*
 * A bulk batch may start from lines read and checked ahead, while the batch
 * before it was in Postgres (bulk/batch.prefetcher.ts). Whatever a batch
 * takes from there, a file must end exactly as it ends without it: the same
 * records, links, audit entries, counts and line errors.
 */

const NDJSON = { 'content-type': 'application/x-ndjson' };
/** Small batches, so a short file crosses many of them. */
const BATCH = 100;
const LIMITS = { batchSize: BATCH, maxBytes: 16 * 1024 * 1024 };

let env: TestEnvironment;
let token: string;

/** Every outcome a line can have ahead: a record write checked, a client error of the line or of its body, and lines left to the batch (profiles, deletes). */
const FILE = Array.from({ length: 730 }, (_, i) => {
  switch (i % 10) {
    case 0:
      return '{"product": not json';
    case 1:
      return JSON.stringify({ product: { id: `P${i}`, price: 'not a price' } });
    case 2:
      return JSON.stringify({ profile: { id: `U${i % 30}`, email: `u${i % 40}@example.test` } });
    case 3:
      return JSON.stringify({ delete: { kind: 'product', id: `P${(i - 7) % 200}` } });
    case 4:
      return JSON.stringify({ category: { id: `C${i % 13}`, name: `Category ${i}`, parent_category_id: `C${(i + 1) % 13}` } });
    case 5:
      return JSON.stringify({ unknown_kind: { id: 'X' } });
    default:
      return JSON.stringify({ product: { id: `P${i % 200}`, name: `Product ${i}`, category_ids: [`C${i % 13}`, `C${i % 5}`] } });
  }
});

async function upload(languageId: string): Promise<string> {
  const response = await env.request('POST', `/api/v1/languages/${languageId}/bulk`, { token, raw: FILE.join('\n'), headers: NDJSON });
  expect(response.status, response.text).toBe(202);
  return response.body.bulk_job.id as string;
}

const getJob = async (languageId: string, id: string) => {
  const response = await env.request('GET', `/api/v1/languages/${languageId}/bulk/${id}`, { token });
  expect(response.status, response.text).toBe(200);
  const { status, lines, lines_stored, lines_applied, saved, failed, errors } = response.body.bulk_job;
  return { status, lines, lines_stored, lines_applied, saved, failed, errors };
};

/** What a language ended with, without what differs between two uploads (numbers, times, request ids). */
async function outcome(languageId: string) {
  const records: Record<string, unknown> = {};
  for (const kind of ['product', 'category', 'profile'] satisfies RecordKindName[]) {
    for (const id of await liveIds(env, languageId, kind)) records[`${kind}/${id}`] = (await liveRecord(env, languageId, kind, id))?.data;
  }
  const audit = (await auditOf(env, languageId))
    .filter((entry) => entry.kind !== 'language')
    .map(({ kind, record_id, action, actor, changes }) => ({ kind, record_id, action, actor, changes }));
  const total = (await env.request('GET', `/api/v2/languages/${languageId}/products?per_page=1`, { token })).body.meta.total;
  return { records, links: await linksOf(env, languageId, 'product_category'), audit, total };
}

/** A prefetcher that notes where each batch it handed over started. */
class WatchedPrefetcher extends BatchPrefetcher {
  readonly used: number[] = [];

  override async take(jobId: string): Promise<BatchAhead | undefined> {
    const ahead = await super.take(jobId);
    if (ahead) this.used.push(ahead.after);
    return ahead;
  }
}

/** Applies a job batch by batch until it ends. */
async function applyAll(jobId: string, prefetcher?: BatchPrefetcher): Promise<void> {
  for (let batch = 0; batch < 100; batch += 1) {
    const result = await applyBulkBatch(env.db, jobId, { batchSize: BATCH, prefetcher });
    if (result.done) return;
  }
  throw new Error('the file did not end in 100 batches');
}

beforeAll(async () => {
  env = await startEnvironment({ worker: false });
  token = await env.token();
  for (const id of ['alone', 'ahead', 'elsewhere', 'late']) {
    const response = await env.request('POST', '/api/v1/languages', { token, body: { language: { id, name: id, code: id } } });
    expect(response.status).toBe(200);
  }
  // The languages' own creations are applied, so each file is its language's only writer.
  await drainWithWorker(env);
});

afterAll(async () => {
  await env?.close();
});

describe('when a bulk file is applied with its batches read ahead', () => {
  it('should end with the same records, links, audit entries, total and line errors as without', async () => {
    const alone = await upload('alone');
    await applyAll(alone);

    const ahead = await upload('ahead');
    const prefetcher = new WatchedPrefetcher(env.db);
    await applyAll(ahead, prefetcher);
    // Every batch after the first started from lines read ahead.
    expect(prefetcher.used).toEqual([100, 200, 300, 400, 500, 600, 700]);

    const expected = await getJob('alone', alone);
    expect(expected).toMatchObject({ status: 'completed', lines: 730, saved: 510, failed: 220 });
    expect(await getJob('ahead', ahead)).toEqual(expected);
    expect(await outcome('ahead')).toEqual(await outcome('alone'));
  });
});

describe('when what was read ahead does not start where the batch does', () => {
  it('should read the batch itself, and apply its own lines', async () => {
    const jobId = await upload('elsewhere');
    const prefetcher = new BatchPrefetcher(env.db);
    // As if an earlier try of the batch had run ahead and rolled back: lines 301-400 are ready, the job is at line 0.
    prefetcher.start(jobId, 300, 'v1', LIMITS);
    const first = await applyBulkBatch(env.db, jobId, { batchSize: BATCH, prefetcher });
    expect(first).toMatchObject({ done: false, lastLine: 100 });
    expect(await getJob('elsewhere', jobId)).toMatchObject({ status: 'running', lines_stored: 100 });
    const products = await liveIds(env, 'elsewhere', 'product');
    expect(products).toContain('P7');
    expect(products).not.toContain('P107');
  });
});

describe('when lines are read ahead after the end of a slice', () => {
  it('should read nothing', async () => {
    const jobId = await upload('late');
    const inTime = new BatchPrefetcher(env.db);
    inTime.start(jobId, 0, 'v1', LIMITS);
    expect((await inTime.take(jobId))?.lines).toHaveLength(BATCH);
    const late = new BatchPrefetcher(env.db, Date.now() - 1);
    late.start(jobId, 0, 'v1', LIMITS);
    expect(await late.take(jobId)).toBeUndefined();
  });
});
