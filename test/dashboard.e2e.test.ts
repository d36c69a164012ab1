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
