import type { ChildProcess } from 'node:child_process';
import { sql } from 'slonik';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { spawnReadyWorker } from './support/api-process.js';
import { httpRequest, startEnvironment, type TestEnvironment } from './support/harness.js';
import { pollUntil } from './support/poll.js';
import { freePort, startRedis, stopProcess } from './support/processes.js';

const children: ChildProcess[] = [];
let env: TestEnvironment | undefined;

afterEach(async () => {
  for (const child of children.splice(0)) await stopProcess(child);
  await env?.close();
  env = undefined;
});

/** Jobs a worker process has run, from its own /metrics. */
async function jobsRun(metricsUrl: string): Promise<number> {
  const { text } = await httpRequest(metricsUrl, 'GET', '/metrics');
  return text
    .split('\n')
    .filter((line) => line.startsWith('sync_job_duration_seconds_count{'))
    .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
}

const createRow = z.object({ language_id: z.string(), record_id: z.string(), creates: z.number() });

/** "language/id" -> number of `create` audit entries of each product. */
async function productCreates(environment: TestEnvironment): Promise<Map<string, number>> {
  const rows = await environment.db.any(sql.type(createRow)`
    SELECT language_id, record_id, count(*)::int8 AS creates FROM audit_log
    WHERE kind = 'product' AND action = 'create' GROUP BY language_id, record_id
  `);
  return new Map(rows.map((row) => [`${row.language_id}/${row.record_id}`, row.creates]));
}

async function writeProducts(environment: TestEnvironment, token: string, languageId: string, ids: string[]): Promise<void> {
  for (const [index, id] of ids.entries()) {
    const response = await environment.request('POST', `/api/v1/languages/${languageId}/products`, {
      token,
      body: { product: { id, name: `Product ${id}`, category_ids: [`C${index % 4}`] } },
    });
    expect(response.status, response.text).toBe(200);
  }
}

describe('when two worker processes run against one queue', () => {
  it('should share the jobs and apply every change exactly once', async () => {
    env = await startEnvironment({ worker: false });
    const [first, second] = await Promise.all([spawnReadyWorker(env.config), spawnReadyWorker(env.config)]);
    children.push(first.child, second.child);
    const token = await env.token();
    const languages = ['l1', 'l2', 'l3', 'l4', 'l5', 'l6'];
    for (const id of languages) {
      expect((await env.request('POST', '/api/v1/languages', { token, body: { language: { id, name: id, code: 'xx' } } })).status).toBe(
        200,
      );
    }
    const ids = Array.from({ length: 40 }, (_, index) => `P${index}`);
    await Promise.all(languages.map((languageId) => writeProducts(env!, token, languageId, ids)));
    await env.drain(60_000);

    const creates = await productCreates(env);
    expect(creates.size).toBe(languages.length * ids.length);
    expect([...creates.entries()].filter(([, count]) => count !== 1)).toEqual([]);
    const stubs = await env.db.oneFirst(sql.type(z.object({ stubs: z.number() }))`
      SELECT count(*)::int8 AS stubs FROM audit_log WHERE kind = 'category' AND action = 'stub'
    `);
    expect(stubs).toBe(languages.length * 4);

    const [firstJobs, secondJobs] = await Promise.all([jobsRun(first.metricsUrl), jobsRun(second.metricsUrl)]);
    expect(firstJobs, 'jobs run by the first worker').toBeGreaterThan(0);
    expect(secondJobs, 'jobs run by the second worker').toBeGreaterThan(0);
  }, 120_000);
});

describe('when Redis restarts empty under a running worker process', () => {
  it('should keep the worker running and drain the writes made after the restart', async () => {
    const port = await freePort();
    let redis = await startRedis(port);
    children.push(redis);
    env = await startEnvironment({ worker: false, env: { REDIS_URL: `redis://127.0.0.1:${port}` } });
    const worker = await spawnReadyWorker(env.config);
    children.push(worker.child);
    const token = await env.token();
    expect(
      (await env.request('POST', '/api/v1/languages', { token, body: { language: { id: 'rr', name: 'Restart', code: 'rr' } } })).status,
    ).toBe(200);

    await writeProducts(env, token, 'rr', ['A1', 'A2', 'A3']);
    await env.drain(30_000);

    const jobsBefore = await jobsRun(worker.metricsUrl);
    await stopProcess(redis, 'SIGKILL');
    // Accepted while Redis is away: the outbox in Postgres holds them.
    await writeProducts(env, token, 'rr', ['B1', 'B2']);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    redis = await startRedis(port);
    children.push(redis);
    await writeProducts(env, token, 'rr', ['C1', 'C2', 'C3']);
    await env.drain(60_000);

    expect(worker.child.exitCode).toBeNull();
    const creates = await productCreates(env);
    expect([...creates.keys()].sort()).toEqual(['A1', 'A2', 'A3', 'B1', 'B2', 'C1', 'C2', 'C3'].map((id) => `rr/${id}`));
    expect([...creates.values()].every((count) => count === 1)).toBe(true);
    // The worker itself reconnected and ran jobs again, on the restarted, empty Redis. A job's run is counted
    // just after its transaction commits, so the last one may show a moment after the drain does.
    const jobsAfter = await pollUntil(
      () => jobsRun(worker.metricsUrl),
      (jobs) => jobs > jobsBefore,
      { timeoutMs: 10_000 },
    );
    expect(jobsAfter).toBeGreaterThan(jobsBefore);
  }, 120_000);
});
