import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { sql } from 'slonik';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ARTIFACTS, type Browser, launchBrowser } from './support/browser.js';
import { startEnvironment, type TestEnvironment } from './support/harness.js';
import { pollUntil } from './support/poll.js';

/* The operator's page of set-aside changes, driven in headless Chromium. */

describe('when an admin opens the set-aside page in a browser', () => {
  let env: TestEnvironment;
  let browser: Browser;
  let page: Page;
  let token: string;
  const offSite: string[] = [];
  const consoleErrors: string[] = [];

  const poison = async (product: string) => {
    const response = await env.request('POST', '/api/v1/languages/nl/products', {
      token,
      headers: { 'x-request-id': `req-${product}` },
      body: { product: { id: product, name: product, category_ids: [`C-blocked-${product}`] } },
    });
    expect(response.status).toBe(200);
  };
  const setAsideCount = async () =>
    (await env.request('GET', '/admin/api/set-aside', { headers: env.adminHeaders })).body.data.length as number;

  beforeAll(async () => {
    env = await startEnvironment();
    token = await env.token();
    await env.request('POST', '/api/v1/languages', { token, body: { language: { id: 'nl', name: 'nl', code: 'nl' } } });
    await env.db.query(sql.unsafe`ALTER TABLE links ADD CONSTRAINT ops_blocked CHECK (b NOT LIKE 'C-blocked%') NOT VALID`);
    await poison('P1');
    await poison('P2');
    expect(await pollUntil(setAsideCount, (count) => count === 2, { timeoutMs: 60_000, intervalMs: 200 })).toBe(2);

    await mkdir(ARTIFACTS, { recursive: true });
    browser = await launchBrowser({
      httpCredentials: { username: env.config.ADMIN_USER, password: env.config.ADMIN_PASSWORD! },
      checkAgainst: env.baseUrl,
    });
    page = browser.context.pages()[0] ?? (await browser.context.newPage());
    page.on('request', (outgoing) => {
      if (!outgoing.url().startsWith(env.baseUrl)) offSite.push(outgoing.url());
    });
    page.on('console', (message) => {
      if (message.type() === 'error') consoleErrors.push(message.text());
    });
  }, 120_000);

  afterEach(async () => {
    // Every response the pages received from the API is one /openapi.json describes.
    if (browser) expect(await browser.undocumented()).toEqual([]);
  });
  afterAll(async () => {
    await browser?.close();
    await env?.close();
  });

  it('should list every set-aside change with its language, kind, record, request id, error and times', async () => {
    const response = await page.goto(`${env.baseUrl}/admin/set-aside`);
    expect(response?.status()).toBe(200);
    const rows = page.locator('#changes tbody tr');
    await expect.poll(() => rows.count(), { timeout: 10_000 }).toBe(2);
    const first = await rows.first().locator('td').allInnerTexts();
    expect(first.slice(2, 7)).toEqual(['nl', 'product', 'P1', 'upsert', 'req-P1']);
    expect(first[7]).toContain('ops_blocked');
    expect(first[9]).toMatch(/^\d{4}-\d{2}-\d{2}T/);
    expect(first[10]).toMatch(/^\d{4}-\d{2}-\d{2}T/);
    await page.screenshot({ path: path.join(ARTIFACTS, 'set-aside.png'), fullPage: true });
  });

  it('should retry one after the fix, and the worker applies it', async () => {
    await env.db.query(sql.unsafe`ALTER TABLE links DROP CONSTRAINT ops_blocked`);
    await page.locator('#changes tbody tr', { hasText: 'P1' }).getByRole('button', { name: 'Retry' }).click();
    await expect.poll(() => page.locator('#status').innerText(), { timeout: 10_000 }).toMatch(/^Retried change \d+$/);
    await expect.poll(() => page.locator('#changes tbody tr').count(), { timeout: 10_000 }).toBe(1);
    await env.drain(30_000);
    const product = await env.request('GET', '/api/v2/languages/nl/products/P1', { token });
    expect(product.body.category_ids).toEqual(['C-blocked-P1']);
  });

  it('should discard one after confirming, with an audit entry naming the admin user', async () => {
    page.once('dialog', (dialog) => void dialog.accept());
    await page.locator('#changes tbody tr', { hasText: 'P2' }).getByRole('button', { name: 'Discard' }).click();
    await expect.poll(() => page.locator('#count').innerText(), { timeout: 10_000 }).toBe('Nothing is set aside.');
    await page.screenshot({ path: path.join(ARTIFACTS, 'set-aside-empty.png'), fullPage: true });
    const audit = await env.request('GET', '/admin/api/audit?record_id=P2', { headers: env.adminHeaders });
    expect(audit.status, audit.text).toBe(200);
    expect(audit.body.data.filter((entry: { action: string }) => entry.action === 'discard')).toEqual([
      expect.objectContaining({ actor: `admin:${env.config.ADMIN_USER}`, kind: 'product' }),
    ]);
  });

  it('should be reachable from the queue dashboard', async () => {
    await page.goto(`${env.baseUrl}/admin/queues`);
    // bull-board puts its misc links in the menu at the end of the header's actions.
    const menu = page.locator('header ul[class*="actions"] > li').last().locator('button');
    await expect.poll(() => menu.isVisible(), { timeout: 10_000 }).toBe(true);
    await menu.click();
    await page.screenshot({ path: path.join(ARTIFACTS, 'dashboard-set-aside-link.png') });
    const link = page.getByRole('menuitem', { name: 'Set-aside changes' }).or(page.getByRole('link', { name: 'Set-aside changes' }));
    await expect.poll(() => link.first().isVisible(), { timeout: 10_000 }).toBe(true);
    await link.first().click();
    await expect.poll(() => page.url(), { timeout: 10_000 }).toBe(`${env.baseUrl}/admin/set-aside`);
  });

  describe('when the page is opened with the credentials in its URL', () => {
    let bare: Browser;
    let opened: Page;
    const colourOf = (selector: string) => opened.locator(selector).evaluate((element) => getComputedStyle(element).color);

    beforeAll(async () => {
      await env.db.query(sql.unsafe`ALTER TABLE links ADD CONSTRAINT ops_blocked CHECK (b NOT LIKE 'C-blocked%') NOT VALID`);
      await poison('P3');
      expect(await pollUntil(setAsideCount, (count) => count === 1, { timeoutMs: 60_000, intervalMs: 200 })).toBe(1);
      // No credentials of its own: only those of the URL.
      bare = await launchBrowser({ checkAgainst: env.baseUrl });
      opened = await bare.context.newPage();
      // The discard that finds nothing is a 404 Chromium reports on the console; anything else counts.
      opened.on('console', (message) => {
        if (message.type() === 'error' && !/status of 404/.test(message.text())) consoleErrors.push(message.text());
      });
    }, 90_000);
    afterAll(async () => {
      await bare?.close();
      await env.db.query(sql.unsafe`ALTER TABLE links DROP CONSTRAINT IF EXISTS ops_blocked`);
    });

    it('should list the changes', async () => {
      const withCredentials = env.baseUrl.replace('://', `://${env.config.ADMIN_USER}:${env.config.ADMIN_PASSWORD}@`);
      const response = await opened.goto(`${withCredentials}/admin/set-aside`);
      expect(response?.status()).toBe(200);
      await expect.poll(() => opened.locator('#changes tbody tr').count(), { timeout: 10_000 }).toBe(1);
      expect(await opened.locator('#changes tbody tr td').nth(4).innerText()).toBe('P3');
      expect(await opened.locator('#status').innerText()).toBe('');
      await opened.screenshot({ path: path.join(ARTIFACTS, 'set-aside-url-credentials.png'), fullPage: true });
    });

    it('should show a failed action in the error colour', async () => {
      // Another operator discards it first: this page's discard then finds nothing.
      const seq = await opened.locator('#changes tbody tr').first().getAttribute('data-seq');
      expect((await env.request('DELETE', `/admin/api/set-aside/${seq}`, { headers: env.adminHeaders })).status).toBe(200);
      opened.once('dialog', (dialog) => void dialog.accept());
      await opened.locator('#changes tbody tr', { hasText: 'P3' }).getByRole('button', { name: 'Discard' }).click();
      await expect.poll(() => opened.locator('#status').innerText(), { timeout: 10_000 }).toBe('Failed: Set-aside change not found');
      expect(await colourOf('#status')).toBe('rgb(185, 28, 28)');
      await opened.screenshot({ path: path.join(ARTIFACTS, 'set-aside-failed-action.png'), fullPage: true });
      // A success says so in the other colour.
      await opened.getByRole('button', { name: 'Reload' }).click();
      await expect.poll(() => opened.locator('#status').innerText(), { timeout: 10_000 }).toBe('Reloaded');
      expect(await colourOf('#status')).toBe('rgb(6, 95, 70)');
      expect(await bare.undocumented()).toEqual([]);
    });
  });

  it('should load nothing from another site and break no rule of its content security policy', () => {
    expect(offSite).toEqual([]);
    expect(consoleErrors).toEqual([]);
  });
});
