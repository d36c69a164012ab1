import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { Job } from 'bullmq';
import { type Page, request } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { QUEUES } from '../platform/queue.js';
import { ARTIFACTS, type Browser, launchBrowser } from './support/browser.js';
import { startEnvironment, type TestEnvironment } from './support/harness.js';
import { pollUntil } from './support/poll.js';
import { openQueues, type TestQueues } from './support/queues.js';

describe('when an admin opens the queue dashboard in a browser', () => {
  let env: TestEnvironment;
  let queues: TestQueues;
  let browser: Browser;
  let page: Page;
  let failedJob: Job;
  const offSite: string[] = [];

  beforeAll(async () => {
    env = await startEnvironment();
    queues = openQueues(env.config);
    // A job the processor refuses for good (UnrecoverableError): it lands in failed at once.
    failedJob = await queues.queues.effects.add('apply-outbox', { langKey: 'x' } as never);
    expect(
      await pollUntil(
        () => failedJob.getState(),
        (state) => state === 'failed',
        { timeoutMs: 10_000 },
      ),
    ).toBe('failed');

    await mkdir(ARTIFACTS, { recursive: true });
    browser = await launchBrowser({
      httpCredentials: { username: env.config.ADMIN_USER, password: env.config.ADMIN_PASSWORD! },
      checkAgainst: env.baseUrl,
    });
    page = browser.context.pages()[0] ?? (await browser.context.newPage());
    page.on('request', (outgoing) => {
      if (!outgoing.url().startsWith(env.baseUrl)) offSite.push(outgoing.url());
    });
  });

  afterEach(async () => {
    // Every response the pages received from the API is one /openapi.json describes.
    if (browser) expect(await browser.undocumented()).toEqual([]);
  });
  afterAll(async () => {
    await browser?.close();
    await queues?.close();
    await env?.close();
  });

  it('should refuse the page without credentials', async () => {
    const anonymous = await request.newContext();
    try {
      const response = await anonymous.get(`${env.baseUrl}/admin/queues`);
      expect(response.status()).toBe(401);
      expect(response.headers()['www-authenticate']).toMatch(/^Basic /);
    } finally {
      await anonymous.dispose();
    }
  });

  it('should list every queue after logging in', async () => {
    const response = await page.goto(`${env.baseUrl}/admin/queues`);
    expect(response?.status()).toBe(200);
    const sidebar = page.locator('#bull-board-sidebar');
    for (const { name } of Object.values(QUEUES)) {
      await expect.poll(() => sidebar.getByText(name, { exact: true }).isVisible(), { timeout: 10_000 }).toBe(true);
    }
    await expect
      .poll(() => page.getByText('FAILED 1').or(page.locator('text=/FAILED\\s*1/')).first().isVisible(), { timeout: 10_000 })
      .toBe(true);
    await page.screenshot({ path: path.join(ARTIFACTS, 'dashboard.png'), fullPage: true });
  });

  it('should show the failed job with its error and retry it', async () => {
    await page.locator('#bull-board-sidebar').getByText('effects', { exact: true }).click();
    await page.getByRole('link', { name: /FAILED/ }).click();
    const card = page.locator(`a[href*="/queue/effects/${failedJob.id}"]`).first();
    await expect.poll(() => card.isVisible(), { timeout: 10_000 }).toBe(true);
    await card.click();
    await expect.poll(() => page.getByText('apply-outbox needs a numeric langKey').first().isVisible(), { timeout: 10_000 }).toBe(true);
    await page.screenshot({ path: path.join(ARTIFACTS, 'dashboard-failed-job.png'), fullPage: true });

    // The job's own retry button (an icon; "Retry all" is the queue's).
    await page.locator('button:has(svg.lucide-refresh-cw)').filter({ hasNotText: 'Retry all' }).first().click();
    const confirm = page.getByRole('button', { name: /^(Confirm|Retry)$/ });
    if (await confirm.isVisible().catch(() => false)) await confirm.click();

    // Through BullMQ: the worker ran it a second time (and it failed again, the data being still wrong).
    const retried = await pollUntil(
      async () => (await queues.queues.effects.getJob(failedJob.id!)) as Job,
      (job) => job.attemptsMade >= 2,
      { timeoutMs: 10_000 },
    );
    expect(retried.attemptsMade).toBe(2);
    expect(await retried.getState()).toBe('failed');
  });

  it('should name the jobs by account, language and file, keeping their names and ids', async () => {
    const client = await env.newClient();
    const token = (
      await env.request('POST', '/oauth/token', {
        body: { grant_type: 'client_credentials', client_id: client.client_id, client_secret: client.client_secret },
      })
    ).body.access_token as string;
    await env.request('POST', '/api/v1/languages', { token, body: { language: { id: 'nl', name: 'nl', code: 'nl' } } });
    const upload = await env.request('POST', '/api/v1/languages/nl/bulk', {
      token,
      raw: JSON.stringify({ product: { id: 'P1', name: 'One' } }),
      headers: { 'content-type': 'application/x-ndjson' },
    });
    expect(upload.status).toBe(202);
    const fileId = upload.body.bulk_job.id as string;
    await env.drain(30_000);

    const jobsOf = async (queue: string) => {
      const response = await env.request('GET', `/admin/queues/api/queues?activeQueue=${queue}&status=completed&page=1&jobsPerPage=50`, {
        headers: env.adminHeaders,
      });
      expect(response.status).toBe(200);
      return response.body.queues.find((each: { name: string }) => each.name === queue).jobs as Array<{ id: string; name: string }>;
    };
    expect(await jobsOf('bulk')).toContainEqual(
      expect.objectContaining({ id: `bulk-${fileId}-start`, name: `process-bulk · ${client.account} / nl / file ${fileId}` }),
    );
    expect((await jobsOf('effects')).map((job) => job.name)).toContain(`apply-outbox · ${client.account} / nl`);
    // In BullMQ the jobs are as they were: the name picks the processor.
    const stored = await queues.queues.bulk.getJob(`bulk-${fileId}-start`);
    expect(stored?.name).toBe('process-bulk');
    expect(stored?.data).toEqual({ bulkJobId: fileId, requestId: expect.any(String) });

    await page.goto(`${env.baseUrl}/admin/queues/queue/bulk?status=completed`);
    const named = page.getByText(`process-bulk · ${client.account} / nl / file ${fileId}`).first();
    await expect.poll(() => named.isVisible(), { timeout: 10_000 }).toBe(true);
    await page.screenshot({ path: path.join(ARTIFACTS, 'dashboard-job-names.png') });
  });

  it('should load when opened with the credentials in its URL', async () => {
    // No credentials of its own: only those of the URL.
    const bare = await launchBrowser({ checkAgainst: env.baseUrl });
    try {
      const opened = await bare.context.newPage();
      const withCredentials = env.baseUrl.replace('://', `://${env.config.ADMIN_USER}:${env.config.ADMIN_PASSWORD}@`);
      const response = await opened.goto(`${withCredentials}/admin/queues`);
      expect(response?.status()).toBe(200);
      const sidebar = opened.locator('#bull-board-sidebar');
      for (const { name } of Object.values(QUEUES)) {
        await expect.poll(() => sidebar.getByText(name, { exact: true }).isVisible(), { timeout: 10_000 }).toBe(true);
      }
      // The address no longer shows the password.
      expect(opened.url()).toBe(`${env.baseUrl}/admin/queues`);
      await opened.screenshot({ path: path.join(ARTIFACTS, 'dashboard-url-credentials.png') });
      expect(await bare.undocumented()).toEqual([]);
    } finally {
      await bare.close();
    }
  });

  it('should load nothing from another site', () => {
    expect(offSite).toEqual([]);
  });
});
