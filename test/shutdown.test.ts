import type { ChildProcess } from 'node:child_process';
import { sql } from 'slonik';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createClient } from '../auth/auth.service.js';
import type { Config } from '../platform/config.js';
import { createDatabase, type Database } from '../platform/db.js';
import { migrate } from '../platform/migrator.js';
import { outboxCounts } from '../sync/status.repository.js';
import { exitWithin, spawnApi, spawnReadyWorker } from './support/api-process.js';
import { dropDatabase, httpRequest, startEnvironment, type TestEnvironment, testConfig, uniqueName } from './support/harness.js';
import { pollUntil } from './support/poll.js';
import { spawnWorker, stopProcess } from './support/processes.js';

const children: ChildProcess[] = [];
const cleanups: Array<() => Promise<void>> = [];

afterEach(async () => {
  for (const child of children.splice(0)) await stopProcess(child);
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function token(baseUrl: string, db: Database): Promise<string> {
  const client = await createClient(db, uniqueName('acct'));
  const response = await httpRequest(baseUrl, 'POST', '/oauth/token', {
    body: { grant_type: 'client_credentials', client_id: client.client_id, client_secret: client.client_secret },
  });
  expect(response.status).toBe(200);
  return response.body.access_token as string;
}

async function waitUntilDrained(db: Database, timeoutMs = 60_000): Promise<void> {
  const counts = await pollUntil(
    () => outboxCounts(db),
    (current) => current.pending === 0,
    { timeoutMs, intervalMs: 50 },
  );
  expect(counts).toEqual({ pending: 0, failed: 0 });
}

const idRow = z.object({ id: z.string() });
const countRow = z.object({ record_id: z.string(), creates: z.number() });

async function liveProducts(db: Database): Promise<Set<string>> {
  return new Set(await db.anyFirst(sql.type(idRow)`SELECT id FROM records WHERE kind = 'product' AND live`));
}

/** record id -> number of `create` audit entries, for every product that has one. */
async function productCreates(db: Database): Promise<Map<string, number>> {
  const rows = await db.any(sql.type(countRow)`
    SELECT record_id, count(*)::int8 AS creates FROM audit_log WHERE kind = 'product' AND action = 'create' GROUP BY record_id
  `);
  return new Map(rows.map((row) => [row.record_id, row.creates]));
}

describe('when the API process gets SIGTERM during a stream of writes', () => {
  it('should exit 0 and lose no acknowledged write, nor any of its effects', async () => {
    const databaseName = uniqueName('cs_shutdown');
    const config: Config = testConfig(databaseName);
    await migrate(config.DATABASE_URL);
    const db = await createDatabase(config.DATABASE_URL, { maximumPoolSize: 4 });
    cleanups.push(async () => {
      await db.end();
      await dropDatabase(databaseName);
    });
    const api = await spawnApi(config);
    children.push(api.child);
    const first = await spawnReadyWorker(config);
    const firstWorker = first.child;
    children.push(firstWorker);

    const bearer = await token(api.baseUrl, db);
    const language = await httpRequest(api.baseUrl, 'POST', '/api/v1/languages', {
      token: bearer,
      body: { language: { id: 'sd', name: 'Shutdown', code: 'sd' } },
    });
    expect(language.status).toBe(200);

    const acknowledged: string[] = [];
    const refused: number[] = [];
    // Lanes write until the API stops answering; a request that got no answer was never acknowledged.
    const lane = async (laneId: number) => {
      for (let index = 0; index < 5_000; index += 1) {
        const id = `L${laneId}-${index}`;
        try {
          const response = await httpRequest(api.baseUrl, 'POST', '/api/v1/languages/sd/products', {
            token: bearer,
            body: { product: { id, name: `Product ${id}`, category_ids: [`C${index % 7}`] } },
          });
          if (response.status === 200) acknowledged.push(id);
          else refused.push(response.status);
        } catch {
          return;
        }
      }
    };
    const lanes = Array.from({ length: 6 }, (_, laneId) => lane(laneId));
    await pollUntil(
      async () => acknowledged.length,
      (count) => count >= 150,
      { timeoutMs: 30_000 },
    );

    api.child.kill('SIGTERM');
    const exit = await exitWithin(api.child, 30_000);
    await Promise.all(lanes);
    expect(exit, api.stderr()).toMatchObject({ code: 0, signal: null });
    // Every answer before the end was a success: shutting down turns nothing into an error.
    expect(refused).toEqual([]);

    const stored = await liveProducts(db);
    const lost = acknowledged.filter((id) => !stored.has(id));
    expect(lost).toEqual([]);

    // The effects of every stored write are applied by a worker started afterwards.
    const firstExit = exitWithin(firstWorker, 30_000);
    firstWorker.kill('SIGTERM');
    expect(await firstExit, first.stderr()).toMatchObject({ code: 0 });
    children.push(spawnWorker(config));
    await waitUntilDrained(db);
    const creates = await productCreates(db);
    for (const id of stored) expect(creates.get(id), id).toBe(1);
    expect(creates.size).toBe(stored.size);
  }, 180_000);
});

describe('when a worker process gets SIGTERM while it works', () => {
  it('should finish its active job, exit 0 within the bound, and leave the rest to a new worker', async () => {
    const env: TestEnvironment = await startEnvironment({ worker: false });
    cleanups.push(() => env.close());
    const bearer = await env.token();
    expect(
      (await env.request('POST', '/api/v1/languages', { token: bearer, body: { language: { id: 'wk', name: 'Work', code: 'wk' } } }))
        .status,
    ).toBe(200);

    // A bulk file is processed in slices of up to 2 s: long enough to be caught in the middle.
    const LINES = 60_000;
    const file = Array.from({ length: LINES }, (_, index) => JSON.stringify({ product: { id: `B${index}`, name: `Bulk ${index}` } })).join(
      '\n',
    );
    const upload = await env.request('POST', '/api/v1/languages/wk/bulk', {
      token: bearer,
      raw: file,
      headers: { 'content-type': 'application/x-ndjson' },
    });
    expect(upload.status).toBe(202);
    const jobId = upload.body.bulk_job.id as string;
    const progress = () =>
      env.db.one(
        sql.type(z.object({ next_line: z.number(), status: z.string() }))`SELECT next_line, status FROM bulk_jobs WHERE id = ${jobId}`,
      );

    const ready = await spawnReadyWorker(env.config);
    const worker = ready.child;
    children.push(worker);
    const started = await pollUntil(progress, (job) => job.next_line > 0, { timeoutMs: 30_000, intervalMs: 10 });
    expect(started.next_line).toBeGreaterThan(0);

    worker.kill('SIGTERM');
    const exit = await exitWithin(worker, 30_000);
    expect(exit, ready.stderr()).toMatchObject({ code: 0, signal: null });
    // Bound: the active slice (at most 2 s) plus closing connections; close() gives up on active jobs after 15 s.
    expect(exit.ms).toBeLessThan(20_000);
    const stopped = await progress();
    expect(stopped.next_line).toBeLessThan(LINES);

    // Nothing moves while no worker runs.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect((await progress()).next_line).toBe(stopped.next_line);

    children.push(spawnWorker(env.config));
    const finished = await pollUntil(progress, (job) => job.status === 'completed', { timeoutMs: 120_000, intervalMs: 100 });
    expect(finished).toEqual({ next_line: LINES, status: 'completed' });
    await waitUntilDrained(env.db, 120_000);
    const creates = await productCreates(env.db);
    expect(creates.size).toBe(LINES);
    expect([...creates.values()].every((count) => count === 1)).toBe(true);
  }, 240_000);
});
