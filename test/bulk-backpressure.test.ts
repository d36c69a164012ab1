import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lockApplier } from '../sync/locks.js';
import { type RunningWorker, startWorker } from '../worker/worker.js';
import { startEnvironment, type TestEnvironment } from './support/harness.js';
import { pollUntil } from './support/poll.js';
import { langKeyOf } from './support/state.js';

/*
 * A bulk file stores its lines only as fast as its language's effects are
 * applied (BULK_MAX_EFFECTS_BACKLOG): while the applier cannot keep up, the
 * file waits, so "stored" never runs far ahead of "applied" and the effects
 * of a catalogue land while it is stored, not long after.
 */

const BACKLOG = 500;
const LINES = 5_000;
/** Lines one bulk batch stores (process-bulk.processor.ts). */
const BATCH = 1_000;

let env: TestEnvironment;
let worker: RunningWorker | undefined;
let token: string;

const syncStatus = async () =>
  (await env.request('GET', '/admin/api/sync-status', { headers: env.adminHeaders })).body as { pending: number; failed: number };

const getJob = async (id: string) => {
  const response = await env.request('GET', `/api/v1/languages/nl/bulk/${id}`, { token });
  expect(response.status, response.text).toBe(200);
  return response.body.bulk_job as { status: string; lines_stored: number; lines_applied: number; saved: number };
};

beforeAll(async () => {
  env = await startEnvironment({ worker: false });
  token = await env.token();
  const response = await env.request('POST', '/api/v1/languages', { token, body: { language: { id: 'nl', name: 'nl', code: 'nl' } } });
  expect(response.status).toBe(200);
});

afterAll(async () => {
  await worker?.close();
  await env?.close();
});

describe('when a file is stored faster than its effects can be applied', () => {
  it("should stop storing lines at the language's backlog limit and go on as the applier catches up", { timeout: 180_000 }, async () => {
    // The applier of the language is held off, as if it were far behind.
    let release!: () => void;
    let taken!: () => void;
    const lockTaken = new Promise<void>((resolve) => {
      taken = resolve;
    });
    const langKey = await langKeyOf(env, 'nl');
    const holder = env.db.transaction(async (tx) => {
      await lockApplier(tx, langKey);
      taken();
      await new Promise<void>((resolve) => {
        release = resolve;
      });
    });
    await lockTaken;
    // The language's own creation waits for the applier too.
    const pendingBefore = (await syncStatus()).pending;

    const lines = Array.from({ length: LINES }, (_, index) =>
      JSON.stringify({ product: { id: `P${index}`, name: `Product ${index}`, category_ids: [`C${index % 7}`] } }),
    );
    const upload = await env.request('POST', '/api/v1/languages/nl/bulk', {
      token,
      raw: lines.join('\n'),
      headers: { 'content-type': 'application/x-ndjson' },
    });
    expect(upload.status, upload.text).toBe(202);
    const jobId = upload.body.bulk_job.id as string;
    worker = await startWorker({ ...env.config, BULK_MAX_EFFECTS_BACKLOG: BACKLOG });

    const waiting = await pollUntil(
      () => getJob(jobId),
      (job) => job.lines_stored > 0,
      { timeoutMs: 30_000 },
    );
    // More slices come and go (2 s each); none stores more while the backlog is at the limit.
    await new Promise((resolve) => setTimeout(resolve, 5_000));
    expect(await getJob(jobId)).toMatchObject({ status: 'running', lines_stored: waiting.lines_stored, lines_applied: 0 });
    expect(waiting.lines_stored).toBeGreaterThanOrEqual(BACKLOG);
    expect(waiting.lines_stored).toBeLessThanOrEqual(BACKLOG + BATCH);
    // Every line counts once until applied: stored (an outbox row) or not stored yet (the file).
    expect((await syncStatus()).pending).toBe(pendingBefore + LINES);

    release();
    await holder;
    const done = await pollUntil(
      () => getJob(jobId),
      (job) => job.status === 'completed' && job.lines_applied === LINES,
      { timeoutMs: 120_000 },
    );
    expect(done).toMatchObject({ saved: LINES, lines_stored: LINES });
    expect(await syncStatus()).toEqual({ pending: 0, failed: 0 });
  });
});
