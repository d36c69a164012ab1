import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ARTIFACTS, type Browser, launchBrowser } from './support/browser.js';
import { startEnvironment, type TestEnvironment } from './support/harness.js';

describe('when a person opens /docs in a browser', () => {
  let env: TestEnvironment;
  let browser: Browser;
  let page: Page;
  const offSite: string[] = [];

  beforeAll(async () => {
    env = await startEnvironment({ worker: false });
    await mkdir(ARTIFACTS, { recursive: true });
    browser = await launchBrowser({ checkAgainst: env.baseUrl });
    page = browser.context.pages()[0] ?? (await browser.context.newPage());
    page.on('request', (outgoing) => {
      if (!outgoing.url().startsWith(env.baseUrl) && !outgoing.url().startsWith('data:')) offSite.push(outgoing.url());
    });
  });
  afterEach(async () => {
    // Every response the pages received from the API is one /openapi.json describes.
    if (browser) expect(await browser.undocumented()).toEqual([]);
  });
  afterAll(async () => {
    await browser?.close();
    await env?.close();
  });

  it('should render every tag and the token operation from /openapi.json', async () => {
    const response = await page.goto(`${env.baseUrl}/docs`);
    expect(response?.status()).toBe(200);
    // Swagger UI lays out a large document: on a loaded 2-core machine that takes tens of seconds.
    await expect.poll(() => page.locator('.opblock').count(), { timeout: 75_000 }).toBeGreaterThan(20);
    for (const tag of ['oauth', 'v1', 'admin', 'operations']) {
      expect(await page.locator(`.opblock-tag[data-tag="${tag}"]`).count(), tag).toBe(1);
    }
    expect(await page.getByText('/oauth/token', { exact: true }).first().isVisible()).toBe(true);
    await page.screenshot({ path: path.join(ARTIFACTS, 'docs.png') });
  }, 120_000);

  it('should load nothing from another site', () => {
    expect(offSite).toEqual([]);
  });
});
