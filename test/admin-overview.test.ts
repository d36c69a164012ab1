import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { drainWithWorker, startEnvironment, type TestEnvironment } from './support/harness.js';

/*
 * What an operator reads first: the admin landing page and the root page,
 * the counts per account behind the landing page, and bulk files across
 * accounts with their line errors.
 */

let env: TestEnvironment;
const accounts: string[] = [];
const tokens: string[] = [];
const admin = (path: string) => env.request('GET', path, { headers: env.adminHeaders });
let fileId: string;

beforeAll(async () => {
  // No worker of its own: queued work stays queued until drainWithWorker.
  env = await startEnvironment({ worker: false });
  for (let index = 0; index < 2; index += 1) {
    const client = await env.newClient();
    accounts.push(client.account);
    const token = await env.request('POST', '/oauth/token', {
      body: { grant_type: 'client_credentials', client_id: client.client_id, client_secret: client.client_secret },
    });
    tokens.push(token.body.access_token as string);
    await env.request('POST', '/api/v1/languages', { token: tokens[index], body: { language: { id: 'nl', name: 'nl', code: 'nl' } } });
  }
  await env.request('POST', '/api/v1/languages/nl/products', {
    token: tokens[0],
    body: { product: { id: 'P1', name: 'One', category_ids: ['C1'] } },
  });
  await drainWithWorker(env);
  const lines = [
    JSON.stringify({ product: { id: 'P2', name: 'Two' } }),
    JSON.stringify({ product: { id: 'P3' } }),
    JSON.stringify({ product: { id: 'P4', name: 'Four' } }),
  ];
  const upload = await env.request('POST', '/api/v1/languages/nl/bulk', {
    token: tokens[1],
    raw: lines.join('\n'),
    headers: { 'content-type': 'application/x-ndjson' },
  });
  expect(upload.status, upload.text).toBe(202);
  fileId = upload.body.bulk_job.id as string;
});
afterAll(() => env.close());

describe('when an operator opens the service address or /admin', () => {
  it('should answer / with a page linking the docs and the admin area, without credentials', async () => {
    const response = await env.request('GET', '/');
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/html/);
    expect(response.text).toContain('href="/docs"');
    expect(response.text).toContain('href="/admin"');
  });

  it('should answer /admin with the landing page behind the admin credentials', async () => {
    expect((await env.request('GET', '/admin')).status).toBe(401);
    for (const path of ['/admin', '/admin/']) {
      const response = await admin(path);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-security-policy')).toMatch(/^default-src 'none'/);
      for (const link of ['/admin/queues', '/admin/set-aside', '/admin/bulk-jobs', '/docs', '/admin/api/sync-status'])
        expect(response.text).toContain(`href="${link}"`);
    }
  });
});

describe('when the counts per account are read', () => {
  it('should give each account its languages, records, pending changes, set-aside changes and bulk files', async () => {
    const response = await admin('/admin/api/accounts');
    expect(response.status, response.text).toBe(200);
    const mine = response.body.data.filter((row: { account: string }) => accounts.includes(row.account));
    expect(mine).toEqual(
      [
        // P1 and the category it stubbed.
        { account: accounts[0], languages: 1, records: 2, pending: 0, set_aside: 0, bulk_files_queued: 0, bulk_files_running: 0 },
        // The file's three lines wait for a worker.
        { account: accounts[1], languages: 1, records: 0, pending: 3, set_aside: 0, bulk_files_queued: 1, bulk_files_running: 0 },
      ].sort((a, b) => (a.account! < b.account! ? -1 : 1)),
    );
    const one = await admin(`/admin/api/accounts?account=${encodeURIComponent(accounts[1]!)}`);
    expect(one.body.data.map((row: { account: string }) => row.account)).toEqual([accounts[1]]);
    expect((await admin('/admin/api/accounts?colour=red')).status).toBe(400);
  });
});

describe('when bulk files are listed across accounts', () => {
  it('should show a queued file with its account, language, state and counts', async () => {
    const response = await admin('/admin/api/bulk-jobs');
    expect(response.status, response.text).toBe(200);
    expect(response.body).toEqual({
      data: [
        {
          id: fileId,
          account: accounts[1],
          language_id: 'nl',
          api_version: 'v1',
          client_id: expect.any(String),
          status: 'queued',
          lines: 3,
          lines_stored: 0,
          lines_applied: 0,
          saved: 0,
          failed: 0,
          progress: 0,
          error: null,
          created_at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/),
          started_at: null,
          finished_at: null,
        },
      ],
      next_before: null,
    });
  });

  it('should show it applied once a worker has run it, with its line errors', async () => {
    await drainWithWorker(env);
    const [file] = (await admin('/admin/api/bulk-jobs')).body.data;
    expect(file).toMatchObject({ status: 'completed', lines: 3, lines_stored: 3, lines_applied: 3, saved: 2, failed: 1, progress: 100 });
    expect(file.started_at).toEqual(expect.any(String));
    expect(file.finished_at).toEqual(expect.any(String));
    const errors = await admin(`/admin/api/bulk-jobs/${fileId}/errors`);
    expect(errors.status, errors.text).toBe(200);
    expect(errors.body).toEqual({
      data: [{ line: 2, error: { error: { message: expect.any(String), missing_parameters: ['name'] } } }],
      next_after: null,
    });
    // The same errors the shop reads for its file.
    const own = await env.request('GET', `/api/v1/languages/nl/bulk/${fileId}`, { token: tokens[1] });
    expect(own.body.bulk_job.errors).toEqual(errors.body.data);
  });

  it('should filter by account, language and state, and page with before', async () => {
    const second = await env.request('POST', '/api/v1/languages/nl/bulk', {
      token: tokens[0],
      raw: JSON.stringify({ product: { id: 'P5', name: 'Five' } }),
      headers: { 'content-type': 'application/x-ndjson' },
    });
    expect(second.status).toBe(202);
    const ids = async (query: string) => (await admin(`/admin/api/bulk-jobs${query}`)).body.data.map((file: { id: string }) => file.id);
    expect(await ids('')).toEqual([second.body.bulk_job.id, fileId]);
    expect(await ids(`?account=${encodeURIComponent(accounts[1]!)}`)).toEqual([fileId]);
    expect(await ids(`?account=${encodeURIComponent(accounts[0]!)}&language_id=nl&status=queued`)).toEqual([second.body.bulk_job.id]);
    expect(await ids('?language_id=de')).toEqual([]);
    const first = await admin('/admin/api/bulk-jobs?limit=1');
    expect(first.body.next_before).toBe(second.body.bulk_job.id);
    const next = await admin(`/admin/api/bulk-jobs?limit=1&before=${first.body.next_before}`);
    expect(next.body).toMatchObject({ data: [{ id: fileId }], next_before: null });
    await drainWithWorker(env);
  });

  it.each([
    ['/admin/api/bulk-jobs?status=lost', 400, { error: { message: expect.any(String), invalid_parameters: ['status'] } }],
    ['/admin/api/bulk-jobs?before=abc', 400, { error: { message: expect.any(String), invalid_parameters: ['before'] } }],
    ['/admin/api/bulk-jobs?page=2', 400, { error: { message: expect.any(String), unknown_parameters: ['page'] } }],
    ['/admin/api/bulk-jobs/abc/errors', 400, { error: { message: 'Invalid parameters: id', invalid_parameters: ['id'] } }],
    ['/admin/api/bulk-jobs/00000000-0000-4000-8000-000000000000/errors', 404, { error: 'Bulk job not found' }],
  ])('should answer %s with %i', async (path, status, body) => {
    const response = await admin(path);
    expect(response.status).toBe(status);
    expect(response.body).toEqual(body);
  });
});
