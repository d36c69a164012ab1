import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningApi, startApi } from '../api/server.js';
import { createClient } from '../auth/auth.service.js';
import type { Config } from '../platform/config.js';
import { createDatabase, type Database } from '../platform/db.js';
import { migrate } from '../platform/migrator.js';
import { type RunningWorker, startWorker } from '../worker/worker.js';
import { dropDatabase, httpRequest, testConfig, uniqueName, waitForDrain } from './support/harness.js';
import { type CapturedLogs, captureLogs } from './support/log-capture.js';
import { sample } from './support/metrics.js';
import { pollUntil } from './support/poll.js';
import { freePort } from './support/processes.js';
import { openQueues } from './support/queues.js';

interface Stack {
  config: Config;
  api: RunningApi;
  db: Database;
  logs: CapturedLogs;
  baseUrl: string;
  token: string;
  close(): Promise<void>;
}

/** The real API with a logger the test can read; no worker, so queued work stays queued. */
async function startStack(): Promise<Stack> {
  const databaseName = uniqueName('cs_obs');
  const config = testConfig(databaseName, { LOG_LEVEL: 'debug' });
  await migrate(config.DATABASE_URL);
  const logs = captureLogs('debug');
  const api = await startApi(config, logs.logger);
  const db = await createDatabase(config.DATABASE_URL, { maximumPoolSize: 2 });
  const baseUrl = `http://127.0.0.1:${api.port}`;
  const client = await createClient(db, uniqueName('acct'));
  const token = (
    await httpRequest(baseUrl, 'POST', '/oauth/token', {
      body: { grant_type: 'client_credentials', client_id: client.client_id, client_secret: client.client_secret },
    })
  ).body.access_token as string;
  return {
    config,
    api,
    db,
    logs,
    baseUrl,
    token,
    async close() {
      await api.close();
      await db.end();
      await dropDatabase(databaseName);
    },
  };
}

describe('when Prometheus scrapes the API', () => {
  let stack: Stack;
  let other: Stack;
  beforeAll(async () => {
    [stack, other] = await Promise.all([startStack(), startStack()]);
    const created = await httpRequest(stack.baseUrl, 'POST', '/api/v1/languages', {
      token: stack.token,
      body: { language: { id: 'en', name: 'English', code: 'en' } },
    });
    expect(created.status).toBe(200);
    for (const id of ['P-secret-1', 'P-secret-2']) {
      const saved = await httpRequest(stack.baseUrl, 'POST', '/api/v1/languages/en/products', {
        token: stack.token,
        body: { product: { id, name: 'Shoe' } },
      });
      expect(saved.status).toBe(200);
    }
    await httpRequest(stack.baseUrl, 'GET', '/no/such/path-9f3a');
    await httpRequest(stack.baseUrl, 'POST', '/api/v1/languages/en/products', { body: { product: { id: 'x', name: 'x' } } });
  });
  afterAll(async () => {
    await stack.close();
    await other.close();
  });

  const scrape = async (target = stack) => {
    const response = await httpRequest(target.baseUrl, 'GET', '/metrics');
    expect(response.status).toBe(200);
    return response;
  };

  it('should answer without credentials in the Prometheus text format', async () => {
    const response = await scrape();
    expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  });

  it('should count requests by method, route template and status, never by raw URL', async () => {
    const { text } = await scrape();
    expect(
      sample(text, 'http_request_duration_seconds_count', {
        method: 'POST',
        route: '/api/v1/languages/:language_id/products',
        status: '200',
      }),
    ).toBe(2);
    expect(
      sample(text, 'http_request_duration_seconds_count', {
        method: 'POST',
        route: '/api/v1/languages/:language_id/products',
        status: '401',
      }),
    ).toBe(1);
    expect(sample(text, 'http_request_duration_seconds_count', { method: 'GET', route: 'unmatched', status: '404' })).toBe(1);
    expect(
      sample(text, 'http_request_duration_seconds_bucket', { route: '/api/v1/languages/:language_id/products', le: '+Inf' }),
    ).toBeGreaterThan(0);
    expect(text).not.toContain('P-secret');
    expect(text).not.toContain('path-9f3a');
  });

  it.each([
    ['queue jobs by state', 'sync_queue_jobs', { queue: 'effects', state: 'waiting' }],
    ['queue jobs of every queue', 'sync_queue_jobs', { queue: 'maintenance', state: 'failed' }],
    ['queue jobs of the bulk queue', 'sync_queue_jobs', { queue: 'bulk', state: 'active' }],
    ['the outbox backlog', 'sync_outbox_pending', {}],
    ['failed outbox entries', 'sync_outbox_failed', {}],
    ['the Postgres pool', 'sync_db_pool_connections', { pool: 'api', state: 'idle' }],
    ['the COPY pool', 'sync_db_pool_connections', { pool: 'copy', state: 'active' }],
    ['pool waiters', 'sync_db_pool_waiting_clients', { pool: 'api' }],
    ['process CPU', 'process_cpu_user_seconds_total', {}],
    ['the Node heap', 'nodejs_heap_size_used_bytes', {}],
    ['event loop lag', 'nodejs_eventloop_lag_seconds', {}],
  ])('should show %s', async (_, name, labels) => {
    const { text } = await scrape();
    expect(sample(text, name, labels)).toBeGreaterThanOrEqual(0);
  });

  it('should show the backlog while no worker runs', async () => {
    const { text } = await scrape();
    // The language and both products are accepted but not applied.
    expect(sample(text, 'sync_outbox_pending')).toBe(3);
    expect(sample(text, 'sync_queue_jobs', { queue: 'effects', state: 'waiting' })).toBeGreaterThanOrEqual(1);
  });

  it('should keep each app of one process to its own registry', async () => {
    const { text } = await scrape(other);
    expect(
      sample(text, 'http_request_duration_seconds_count', {
        method: 'POST',
        route: '/api/v1/languages/:language_id/products',
        status: '200',
      }),
    ).toBeUndefined();
    expect(sample(text, 'sync_outbox_pending')).toBe(0);
  });
});

describe('when a request is served', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(() => stack.close());

  it('should log one info line with method, route, status, duration and the request id', async () => {
    const response = await httpRequest(stack.baseUrl, 'POST', '/api/v1/languages', {
      token: stack.token,
      headers: { 'x-request-id': 'obs-request-1' },
      body: { language: { id: 'fr', name: 'Français', code: 'fr' } },
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('x-request-id')).toBe('obs-request-1');
    const lines = stack.logs.lines.filter((line) => line['request_id'] === 'obs-request-1' && line['msg'] === 'request');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 30, method: 'POST', route: '/api/v1/languages', status: 200 });
    expect(typeof lines[0]!['duration_ms']).toBe('number');
  });

  it.each([
    ['no X-Request-Id', {}],
    ['an X-Request-Id with characters outside the allowed set', { 'x-request-id': 'bad id\u00e9' }],
  ])('should generate a request id for %s and echo it', async (_, headers) => {
    const response = await httpRequest(stack.baseUrl, 'GET', '/healthz', { headers });
    const generated = response.headers.get('x-request-id');
    expect(generated).toMatch(/^[0-9a-f-]{36}$/);
    expect(stack.logs.lines.some((line) => line['request_id'] === generated && line['route'] === '/healthz')).toBe(true);
  });

  it('should carry the request id into the job the write enqueues', async () => {
    const response = await httpRequest(stack.baseUrl, 'POST', '/api/v1/languages', {
      token: stack.token,
      headers: { 'x-request-id': 'obs-job-1' },
      body: { language: { id: 'it', name: 'Italiano', code: 'it' } },
    });
    expect(response.status).toBe(200);
    const queues = openQueues(stack.config);
    try {
      const jobs = await pollUntil(
        () => queues.queues.effects.getJobs(['waiting', 'prioritized', 'delayed']),
        (found) => found.some((job) => job.data.requestId === 'obs-job-1'),
        { timeoutMs: 5_000 },
      );
      expect(jobs.find((job) => job.data.requestId === 'obs-job-1')?.name).toBe('apply-outbox');
    } finally {
      await queues.close();
    }
  });
});

describe('when a worker runs jobs', () => {
  let stack: Stack;
  let worker: RunningWorker;
  let workerLogs: CapturedLogs;
  beforeAll(async () => {
    stack = await startStack();
    workerLogs = captureLogs('debug');
    worker = await startWorker({ ...stack.config, WORKER_METRICS_PORT: 0 }, workerLogs.logger);
  });
  afterAll(async () => {
    await worker.close();
    await stack.close();
  });

  it('should expose job duration and attempts on its own metrics port', async () => {
    const written = await httpRequest(stack.baseUrl, 'POST', '/api/v1/languages', {
      token: stack.token,
      headers: { 'x-request-id': 'obs-worker-1' },
      body: { language: { id: 'es', name: 'Español', code: 'es' } },
    });
    expect(written.status).toBe(200);
    await waitForDrain((method, path, options) => httpRequest(stack.baseUrl, method, path, options), stack.config);
    const metrics = await pollUntil(
      () => httpRequest(`http://127.0.0.1:${worker.metricsPort}`, 'GET', '/metrics'),
      (response) =>
        (sample(response.text, 'sync_job_duration_seconds_count', { queue: 'effects', name: 'apply-outbox', outcome: 'completed' }) ?? 0) >
        0,
      { timeoutMs: 5_000 },
    );
    expect(metrics.status).toBe(200);
    expect(metrics.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(
      sample(metrics.text, 'sync_job_duration_seconds_count', { queue: 'effects', name: 'apply-outbox', outcome: 'completed' }),
    ).toBeGreaterThan(0);
    expect(
      sample(metrics.text, 'sync_job_attempts_bucket', { queue: 'effects', name: 'apply-outbox', outcome: 'completed', le: '1' }),
    ).toBeGreaterThan(0);
    expect(sample(metrics.text, 'sync_db_pool_connections', { pool: 'worker', state: 'idle' })).toBeGreaterThanOrEqual(0);
    expect(sample(metrics.text, 'sync_db_pool_connections', { pool: 'deliveries', state: 'idle' })).toBeGreaterThanOrEqual(0);
    expect(sample(metrics.text, 'process_resident_memory_bytes')).toBeGreaterThan(0);
    expect((await httpRequest(`http://127.0.0.1:${worker.metricsPort}`, 'GET', '/other')).status).toBe(404);
  });

  it('should count the changes it applied, by who applied them: the applier from the outbox, or a bulk file in turn', async () => {
    const scrape = async () => (await httpRequest(`http://127.0.0.1:${worker.metricsPort}`, 'GET', '/metrics')).text;
    const applied = (text: string, by: string) => sample(text, 'sync_changes_applied_total', { by });
    const drain = () => waitForDrain((method, path, options) => httpRequest(stack.baseUrl, method, path, options), stack.config);
    const created = await httpRequest(stack.baseUrl, 'POST', '/api/v1/languages', {
      token: stack.token,
      body: { language: { id: 'pt', name: 'Português', code: 'pt' } },
    });
    expect(created.status).toBe(200);
    await drain();
    const before = await scrape();
    expect(applied(before, 'applier')).toBeGreaterThan(0);

    // Single writes are applied by the applier; a bulk file whose changes are next applies its own (no outbox row).
    for (const id of ['a', 'b']) {
      const written = await httpRequest(stack.baseUrl, 'POST', '/api/v1/languages/pt/products', {
        token: stack.token,
        body: { product: { id, name: id, category_ids: ['c1'] } },
      });
      expect(written.status).toBe(200);
    }
    await drain();
    const lines = ['x', 'y', 'z'].map((id) => JSON.stringify({ product: { id, name: id, category_ids: ['c1', 'c2'] } }));
    const uploaded = await httpRequest(stack.baseUrl, 'POST', '/api/v1/languages/pt/bulk', {
      token: stack.token,
      raw: lines.join('\n'),
      headers: { 'content-type': 'application/x-ndjson' },
    });
    expect(uploaded.status, uploaded.text).toBe(202);
    const jobPath = `/api/v1/languages/pt/bulk/${uploaded.body.bulk_job.id as string}`;
    await pollUntil(
      () => httpRequest(stack.baseUrl, 'GET', jobPath, { token: stack.token }),
      (response) => response.body.bulk_job?.status === 'completed',
      { timeoutMs: 10_000 },
    );
    await drain();
    const after = await scrape();
    expect(applied(after, 'applier')! - applied(before, 'applier')!).toBe(2);
    expect(applied(after, 'bulk_in_turn')! - (applied(before, 'bulk_in_turn') ?? 0)).toBe(3);
  });

  it('should log each job with the request id it carries', async () => {
    const line = await pollUntil(
      async () => workerLogs.lines.find((entry) => entry['msg'] === 'job done' && entry['request_id'] === 'obs-worker-1'),
      (found) => found !== undefined,
      { timeoutMs: 5_000 },
    );
    expect(line).toMatchObject({ job: 'apply-outbox', outcome: 'completed' });
  });
});

describe('when the worker metrics port is taken', () => {
  it('should still start, on a free port, and close that server with the worker', { timeout: 90_000 }, async () => {
    const stack = await startStack();
    const blocker = net.createServer();
    const taken = await freePort();
    await new Promise<void>((resolve) => blocker.listen(taken, '127.0.0.1', resolve));
    try {
      const worker = await startWorker({ ...stack.config, WORKER_METRICS_PORT: taken }, captureLogs('silent').logger);
      const port = worker.metricsPort;
      expect(port).not.toBe(taken);
      expect((await httpRequest(`http://127.0.0.1:${port}`, 'GET', '/metrics')).status).toBe(200);
      await worker.close();
      await expect(httpRequest(`http://127.0.0.1:${port}`, 'GET', '/metrics')).rejects.toThrow();
    } finally {
      blocker.close();
      await stack.close();
    }
  });
});
