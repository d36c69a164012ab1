import type { Job } from 'bullmq';
import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type RunningApi, startApi } from '../api/server.js';
import { migrate } from '../platform/migrator.js';
import {
  drainWithWorker,
  dropDatabase,
  httpRequest,
  startEnvironment,
  type TestEnvironment,
  testConfig,
  uniqueName,
} from './support/harness.js';
import { captureLogs } from './support/log-capture.js';
import { pollUntil } from './support/poll.js';
import { openQueues, type TestQueues } from './support/queues.js';

const basic = (user: string, password: string) => ({ authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}` });

const ADMIN_PATHS = [
  '/admin',
  '/admin/bulk-jobs',
  '/admin/api/accounts',
  '/admin/api/bulk-jobs',
  '/admin/api/sync-status',
  '/admin/api/audit',
  '/admin/queues',
  '/admin/queues/api/queues',
  '/admin/no-such-page',
  '/ADMIN/api/sync-status',
];

describe('when /admin is called', () => {
  let env: TestEnvironment;
  let token: string;
  beforeAll(async () => {
    env = await startEnvironment({ worker: false });
    token = await env.token();
  });
  afterAll(() => env.close());

  const refused: Array<[string, () => Record<string, string>]> = [
    ['without credentials', () => ({})],
    ['with a wrong password', () => basic('admin', 'wrong')],
    ['with a wrong user', () => basic('root', 'test-admin-password')],
    ['with a malformed Basic header', () => ({ authorization: 'Basic not*base64' })],
    ['with a valid OAuth bearer token', () => ({ authorization: `Bearer ${token}` })],
    ['with the bearer token as the Basic password', () => basic('admin', token)],
  ];

  describe.each(refused)('%s', (_, headers) => {
    it.each(ADMIN_PATHS)('should answer %s with 401 and a Basic challenge', async (path) => {
      const response = await env.request('GET', path, { headers: headers() });
      expect(response.status).toBe(401);
      expect(response.headers.get('www-authenticate')).toMatch(/^Basic /);
      expect(response.body).toEqual({ error: 'Admin credentials are required' });
    });
  });

  describe('with the admin credentials', () => {
    it.each([
      ['/admin/api/sync-status', 200],
      ['/admin/api/audit', 200],
      ['/admin/queues', 200],
      ['/admin/queues/api/queues', 200],
      ['/admin/no-such-page', 404],
    ])('should answer %s with %i', async (path, status) => {
      const response = await env.request('GET', path, { headers: env.adminHeaders });
      expect(response.status).toBe(status);
    });

    it('should not let the admin credentials open the v1 interface', async () => {
      const response = await env.request('POST', '/api/v1/languages', {
        headers: env.adminHeaders,
        body: { language: { id: 'x', name: 'x', code: 'x' } },
      });
      expect(response.status).toBe(401);
      expect(response.headers.get('www-authenticate')).toMatch(/^Bearer /);
    });
  });
});

describe('when ADMIN_PASSWORD is not set', () => {
  let env: TestEnvironment;
  beforeAll(async () => {
    env = await startEnvironment({ worker: false, env: { ADMIN_PASSWORD: '' } });
  });
  afterAll(() => env.close());

  it.each(['/admin', '/admin/api/accounts', '/admin/api/sync-status', '/admin/api/audit', '/admin/queues', '/admin/queues/api/queues'])(
    'should answer %s with 503 and say to set it, whatever the credentials',
    async (path) => {
      for (const headers of [{}, basic('admin', ''), basic('admin', 'anything')]) {
        const response = await env.request('GET', path, { headers });
        expect(response.status).toBe(503);
        expect(response.body.error).toMatch(/set ADMIN_PASSWORD/);
      }
    },
  );
});

describe('when ADMIN_PASSWORD is not set and /admin is called again and again', () => {
  const databaseName = uniqueName('cs_admin_off');
  const logs = captureLogs('debug');
  let api: RunningApi;
  beforeAll(async () => {
    const config = testConfig(databaseName, { ADMIN_PASSWORD: '', LOG_LEVEL: 'debug' });
    await migrate(config.DATABASE_URL);
    api = await startApi(config, logs.logger);
  });
  afterAll(async () => {
    await api?.close();
    await dropDatabase(databaseName);
  });

  it('should warn once at start and log each 503 at info, without a stack', async () => {
    const baseUrl = `http://127.0.0.1:${api.port}`;
    for (const path of ['/admin/api/sync-status', '/admin/queues', '/admin/set-aside']) {
      const response = await httpRequest(baseUrl, 'GET', path);
      expect(response.status).toBe(503);
    }
    const warnings = logs.lines.filter((line) => line['level'] === 40);
    expect(warnings.map((line) => line['msg'])).toEqual([expect.stringMatching(/^admin disabled: ADMIN_PASSWORD is unset/)]);
    expect(logs.lines.filter((line) => (line['level'] as number) >= 50)).toEqual([]);
    expect(logs.lines.filter((line) => JSON.stringify(line).includes('stack'))).toEqual([]);
    const refusals = logs.lines.filter((line) => line['msg'] === 'request refused');
    expect(refusals).toHaveLength(3);
    for (const line of refusals)
      expect(line).toMatchObject({ level: 30, status: 503, reason: expect.stringMatching(/set ADMIN_PASSWORD/) });
  });
});

describe('when the audit log is read through /admin/api/audit', () => {
  let env: TestEnvironment;
  let account: string;
  let clientId: string;
  const audit = (query = '') => env.request('GET', `/admin/api/audit${query}`, { headers: env.adminHeaders });

  beforeAll(async () => {
    env = await startEnvironment();
    const client = await env.newClient();
    account = client.account;
    clientId = client.client_id;
    const tokenResponse = await env.request('POST', '/oauth/token', {
      body: { grant_type: 'client_credentials', client_id: client.client_id, client_secret: client.client_secret },
    });
    const token = tokenResponse.body.access_token as string;
    const write = async (path: string, body: unknown, requestId: string, method = 'POST') => {
      const response = await env.request(method, path, { token, body, headers: { 'x-request-id': requestId } });
      expect(response.status, response.text).toBe(200);
    };
    await write('/api/v1/languages', { language: { id: 'en', name: 'English', code: 'en' } }, 'req-lang-en');
    await write('/api/v1/languages', { language: { id: 'de', name: 'Deutsch', code: 'de' } }, 'req-lang-de');
    await write('/api/v1/languages/en/products', { product: { id: 'P1', name: 'Shoe', category_ids: ['C1'] } }, 'req-p1-create');
    await write('/api/v1/languages/en/products', { product: { id: 'P1', name: 'Boot' } }, 'req-p1-update');
    await write('/api/v1/languages/de/products', { product: { id: 'P1', name: 'Schuh' } }, 'req-p1-de');
    await write('/api/v1/languages/en/products/P1', undefined, 'req-p1-delete', 'DELETE');
    await env.drain();
  });
  afterAll(() => env.close());

  it('should list every entry oldest first with the fields of interface §9.2', async () => {
    const response = await audit();
    expect(response.status).toBe(200);
    const entries = response.body.data as Array<Record<string, unknown>>;
    expect(entries.length).toBeGreaterThanOrEqual(8);
    const seqs = entries.map((entry) => entry.seq as number);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    for (const entry of entries) {
      expect(Object.keys(entry).sort()).toEqual(
        ['account', 'action', 'actor', 'at', 'changes', 'kind', 'language_id', 'record_id', 'request_id', 'seq'].sort(),
      );
      expect(entry.account).toBe(account);
      expect(entry.at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    }
    expect(response.body.next_after).toBeNull();
  });

  it('should filter by record, kind and language, and keep actor and request id', async () => {
    const p1 = await audit('?language_id=en&kind=product&record_id=P1');
    expect(p1.body.data.map((entry: any) => [entry.action, entry.actor, entry.request_id])).toEqual([
      ['create', clientId, 'req-p1-create'],
      ['link', 'system', 'req-p1-create'],
      ['update', clientId, 'req-p1-update'],
      ['delete', clientId, 'req-p1-delete'],
      ['unlink', 'system', 'req-p1-delete'],
    ]);
    const stub = await audit('?kind=category&record_id=C1');
    expect(stub.body.data.map((entry: any) => [entry.action, entry.actor, entry.request_id])).toEqual([
      ['stub', 'system', 'req-p1-create'],
    ]);
    const german = await audit('?language_id=de');
    expect(german.body.data.map((entry: any) => [entry.kind, entry.record_id, entry.action])).toEqual([
      ['language', 'de', 'create'],
      ['product', 'P1', 'create'],
    ]);
    const anyLanguage = await audit('?record_id=P1&kind=product');
    // Languages are applied independently, so only the order within one language is fixed.
    const actions = anyLanguage.body.data.map((entry: any) => `${entry.language_id}:${entry.action}`);
    expect(actions.filter((action: string) => action.startsWith('en:'))).toEqual([
      'en:create',
      'en:link',
      'en:update',
      'en:delete',
      'en:unlink',
    ]);
    expect(actions.filter((action: string) => action.startsWith('de:'))).toEqual(['de:create']);
  });

  it('should page with limit and next_after without losing or repeating an entry', async () => {
    const all = (await audit()).body.data.map((entry: any) => entry.seq);
    const paged: number[] = [];
    let after: number | null = 0;
    let pages = 0;
    while (after !== null) {
      const page = await audit(`?limit=3&after=${after}`);
      expect(page.status).toBe(200);
      expect(page.body.data.length).toBeLessThanOrEqual(3);
      paged.push(...page.body.data.map((entry: any) => entry.seq));
      after = page.body.next_after;
      pages += 1;
    }
    expect(paged).toEqual(all);
    // A full last page already says null: no empty page at the end.
    expect(pages).toBe(Math.ceil(all.length / 3));
  });

  it('should answer an empty page past the end', async () => {
    const response = await audit('?after=999999999');
    expect(response.body).toEqual({ data: [], next_after: null });
  });

  it.each([
    ['?limit=0', 'invalid_parameters', ['limit']],
    ['?limit=1001', 'invalid_parameters', ['limit']],
    ['?limit=abc', 'invalid_parameters', ['limit']],
    ['?limit=1.5', 'invalid_parameters', ['limit']],
    ['?after=-1', 'invalid_parameters', ['after']],
    ['?after=', 'invalid_parameters', ['after']],
    ['?kind=widget', 'invalid_parameters', ['kind']],
    ['?kind=product&kind=brand', 'invalid_parameters', ['kind']],
    ['?language_id=', 'invalid_parameters', ['language_id']],
    ['?page=2', 'unknown_parameters', ['page']],
  ])('should answer %s with 400 %s', async (query, errorClass, parameters) => {
    const response = await audit(query);
    expect(response.status).toBe(400);
    expect(response.body.error[errorClass]).toEqual(parameters);
  });

  it('should accept the largest limit', async () => {
    const response = await audit('?limit=1000');
    expect(response.status).toBe(200);
  });
});

describe('when two accounts each have a language nl', () => {
  let env: TestEnvironment;
  const accounts: string[] = [];
  const audit = (query: string) => env.request('GET', `/admin/api/audit${query}`, { headers: env.adminHeaders });

  beforeAll(async () => {
    env = await startEnvironment();
    for (const product of ['A1', 'B1']) {
      const client = await env.newClient();
      accounts.push(client.account);
      const token = (
        await env.request('POST', '/oauth/token', {
          body: { grant_type: 'client_credentials', client_id: client.client_id, client_secret: client.client_secret },
        })
      ).body.access_token as string;
      await env.request('POST', '/api/v1/languages', { token, body: { language: { id: 'nl', name: 'nl', code: 'nl' } } });
      await env.request('POST', '/api/v1/languages/nl/products', { token, body: { product: { id: product, name: product } } });
    }
    await env.drain();
  });
  afterAll(() => env.close());

  it('should give the audit entries of one account with ?account=', async () => {
    const both = await audit('?language_id=nl&kind=product');
    expect(both.body.data.map((entry: any) => entry.record_id).sort()).toEqual(['A1', 'B1']);
    for (const [index, record] of ['A1', 'B1'].entries()) {
      const one = await audit(`?language_id=nl&account=${encodeURIComponent(accounts[index]!)}`);
      expect(one.status, one.text).toBe(200);
      expect(one.body.data.map((entry: any) => [entry.account, entry.kind, entry.record_id])).toEqual([
        [accounts[index], 'language', 'nl'],
        [accounts[index], 'product', record],
      ]);
    }
    expect((await audit('?account=no-such-shop')).body).toEqual({ data: [], next_after: null });
  });

  it.each([
    ['?account=', 'invalid_parameters', ['account']],
    ['?account=a&account=b', 'invalid_parameters', ['account']],
  ])('should answer %s with 400 %s', async (query, errorClass, parameters) => {
    const response = await audit(query);
    expect(response.status).toBe(400);
    expect(response.body.error[errorClass]).toEqual(parameters);
  });
});

describe('when a bulk file is queued and no worker has taken it yet', () => {
  let env: TestEnvironment;
  let token: string;
  const syncStatus = async () => (await env.request('GET', '/admin/api/sync-status', { headers: env.adminHeaders })).body;
  beforeAll(async () => {
    env = await startEnvironment({ worker: false });
    token = await env.token();
    await env.request('POST', '/api/v1/languages', { token, body: { language: { id: 'nl', name: 'nl', code: 'nl' } } });
    await drainWithWorker(env);
  });
  afterAll(() => env.close());

  it('should count its lines as pending until they are applied', async () => {
    expect(await syncStatus()).toEqual({ pending: 0, failed: 0 });
    const lines = ['P1', 'P2', 'P3'].map((id) => JSON.stringify({ product: { id, name: id, category_ids: ['C1'] } }));
    const upload = await env.request('POST', '/api/v1/languages/nl/bulk', {
      token,
      raw: lines.join('\n'),
      headers: { 'content-type': 'application/x-ndjson' },
    });
    expect(upload.status, upload.text).toBe(202);
    expect(await syncStatus()).toEqual({ pending: 3, failed: 0 });
    await drainWithWorker(env);
    expect(await syncStatus()).toEqual({ pending: 0, failed: 0 });
    const job = await env.request('GET', `/api/v1/languages/nl/bulk/${upload.body.bulk_job.id}`, { token });
    expect(job.body.bulk_job).toMatchObject({ status: 'completed', saved: 3, lines_applied: 3 });
  });
});

describe('when a job fails', () => {
  let env: TestEnvironment;
  let queues: TestQueues;
  const syncStatus = async () =>
    (await env.request('GET', '/admin/api/sync-status', { headers: env.adminHeaders })).body as { pending: number; failed: number };

  beforeAll(async () => {
    env = await startEnvironment();
    queues = openQueues(env.config);
  });
  afterAll(async () => {
    await queues.close();
    await env.close();
  });

  // A failed job is not work left undone (sync/status.repository.ts): the work is in Postgres, the job only wakes a worker.
  it('should keep it failed for the dashboard, leave sync-status at 0, and run it again on retry', async () => {
    expect(await syncStatus()).toEqual({ pending: 0, failed: 0 });
    // A job the processor refuses for good (UnrecoverableError): no retries, straight to failed.
    const job = await queues.queues.effects.add('apply-outbox', { langKey: 'x' } as never);
    const state = await pollUntil(
      () => job.getState(),
      (value) => value === 'failed',
      { timeoutMs: 10_000 },
    );
    expect(state).toBe('failed');
    const failed = (await queues.queues.effects.getJob(job.id!)) as Job;
    expect(failed.attemptsMade).toBe(1);
    expect(failed.failedReason).toMatch(/numeric langKey/);
    expect(await syncStatus()).toEqual({ pending: 0, failed: 0 });

    // Fix what made it fail, then retry it as an operator would.
    const token = await env.token();
    const created = await env.request('POST', '/api/v1/languages', { token, body: { language: { id: 'fx', name: 'Fix', code: 'fx' } } });
    expect(created.status).toBe(200);
    await env.drain();
    const langKey = await env.db.oneFirst(sql.type(z.object({ lang_key: z.number() }))`SELECT lang_key FROM languages WHERE id = 'fx'`);
    await failed.updateData({ langKey });
    await failed.retry();
    const after = await pollUntil(
      () => failed.getState(),
      (value) => value === 'completed',
      { timeoutMs: 10_000 },
    );
    expect(after).toBe('completed');
    expect(await syncStatus()).toEqual({ pending: 0, failed: 0 });
  });

  it('should retry a job that throws with backoff before giving up', async () => {
    // process-bulk on an id that is no uuid: Postgres refuses the query, an ordinary (retryable) error.
    const job = await queues.queues.bulk.add('process-bulk', { bulkJobId: 'not-a-uuid' });
    try {
      const retried = await pollUntil(
        async () => (await queues.queues.bulk.getJob(job.id!)) as Job,
        (current) => current.attemptsMade >= 2,
        { timeoutMs: 10_000 },
      );
      expect(retried.attemptsMade).toBeGreaterThanOrEqual(2);
      expect(retried.opts.attempts).toBe(8);
      expect(retried.opts.backoff).toEqual({ type: 'exponential', delay: 500 });
      // Still being retried, so not failed yet.
      expect(['delayed', 'waiting', 'active']).toContain(await retried.getState());
    } finally {
      await job.remove().catch(() => undefined);
    }
  });
});
