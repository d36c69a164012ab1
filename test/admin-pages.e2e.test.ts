import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ARTIFACTS, type Browser, launchBrowser } from './support/browser.js';
import { drainWithWorker, startEnvironment, type TestEnvironment } from './support/harness.js';

/* The admin landing page and the page of bulk files, driven in headless Chromium, opened with the credentials in the URL. */

describe('when an operator opens the admin pages in a browser', () => {
  let env: TestEnvironment;
  let browser: Browser;
  let page: Page;
  let account: string;
  let fileId: string;
  let withCredentials: string;
  const offSite: string[] = [];
  const consoleErrors: string[] = [];
  const failed: string[] = [];

  beforeAll(async () => {
    env = await startEnvironment({ worker: false });
    const client = await env.newClient();
    account = client.account;
    const token = (
      await env.request('POST', '/oauth/token', {
        body: { grant_type: 'client_credentials', client_id: client.client_id, client_secret: client.client_secret },
      })
    ).body.access_token as string;
    await env.request('POST', '/api/v1/languages', { token, body: { language: { id: 'nl', name: 'nl', code: 'nl' } } });
    await drainWithWorker(env);
    const lines = [JSON.stringify({ product: { id: 'P1', name: 'One' } }), JSON.stringify({ product: { id: 'P2' } })];
    const upload = await env.request('POST', '/api/v1/languages/nl/bulk', {
      token,
      raw: lines.join('\n'),
      headers: { 'content-type': 'application/x-ndjson' },
    });
    fileId = upload.body.bulk_job.id as string;

    await mkdir(ARTIFACTS, { recursive: true });
    // No credentials of its own: only those of the URL, as an operator may type them.
    browser = await launchBrowser({ checkAgainst: env.baseUrl });
    page = await browser.context.newPage();
    withCredentials = env.baseUrl.replace('://', `://${env.config.ADMIN_USER}:${env.config.ADMIN_PASSWORD}@`);
    page.on('request', (outgoing) => {
      if (!outgoing.url().startsWith(env.baseUrl) && !outgoing.url().startsWith(withCredentials)) offSite.push(outgoing.url());
    });
    page.on('response', (response) => {
      if (response.status() >= 400) failed.push(`${response.status()} ${new URL(response.url()).pathname}`);
    });
    page.on('console', (message) => {
      if (message.type() === 'error') consoleErrors.push(message.text());
    });
  }, 60_000);

  afterEach(async () => {
    if (browser) expect(await browser.undocumented()).toEqual([]);
  });
  afterAll(async () => {
    await browser?.close();
    await env?.close();
  });

  it('should say on the landing page that a file waits, with the counts of its account', async () => {
    const response = await page.goto(`${withCredentials}/admin`);
    expect(response?.status()).toBe(200);
    await expect
      .poll(() => page.locator('#sync-words').innerText(), { timeout: 10_000 })
      .toMatch(/^2 changes are accepted and not applied yet .* Nothing failed\.$/);
    const row = page.locator('#accounts tbody tr', { hasText: account });
    await expect.poll(() => row.count(), { timeout: 10_000 }).toBe(1);
    expect(await row.locator('td').allInnerTexts()).toEqual([account, '1', '0', '2', '0', '1', '0']);
    expect(await page.locator('#status').getAttribute('class')).toBe('ok');
    await page.screenshot({ path: path.join(ARTIFACTS, 'admin-home.png'), fullPage: true });
  });

  it("should list the account's files from its link, and then show them applied with a link to their errors", async () => {
    await page.locator('#accounts tbody tr', { hasText: account }).getByRole('link', { name: account }).click();
    await expect.poll(() => page.locator('#files tbody tr').count(), { timeout: 10_000 }).toBe(1);
    expect(await page.locator('#account').inputValue()).toBe(account);
    const cells = async () => (await page.locator('#files tbody tr').first().locator('td').allInnerTexts()).map((text) => text.trim());
    expect((await cells()).slice(0, 8)).toEqual([fileId, account, 'nl', 'queued', '2', '0', '0', '0 %']);

    await drainWithWorker(env);
    await page.getByRole('button', { name: 'Show' }).click();
    await expect.poll(async () => (await cells())[3], { timeout: 10_000 }).toBe('completed');
    expect((await cells()).slice(4, 8)).toEqual(['2', '2', '1', '100 %']);
    await page.screenshot({ path: path.join(ARTIFACTS, 'admin-bulk-jobs.png'), fullPage: true });

    await page.getByRole('link', { name: 'Line errors' }).click();
    await expect.poll(() => page.url(), { timeout: 10_000 }).toContain(`/admin/api/bulk-jobs/${fileId}/errors`);
    expect(JSON.parse(await page.locator('body').innerText())).toMatchObject({ data: [{ line: 2 }], next_after: null });
  });

  it('should say in red when the files cannot be listed', async () => {
    await page.goto(`${withCredentials}/admin/bulk-jobs?account=${'x'.repeat(256)}`);
    await expect.poll(() => page.locator('#status').innerText(), { timeout: 10_000 }).toMatch(/^Could not load the files: /);
    expect(await page.locator('#status').evaluate((element) => getComputedStyle(element).color)).toBe('rgb(185, 28, 28)');
    await page.screenshot({ path: path.join(ARTIFACTS, 'admin-bulk-jobs-failed.png') });
  });

  it('should load nothing from another site and break no rule of its content security policy', () => {
    expect(offSite).toEqual([]);
    // The one 400 of the last test; Chromium also reports on the console the icon it asked for beside the errors' JSON (a 404).
    expect(failed).toEqual(['400 /admin/api/bulk-jobs']);
    expect(consoleErrors.filter((text) => !/status of (400|404)/.test(text))).toEqual([]);
  });
});
