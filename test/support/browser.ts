import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { type BrowserContext, chromium } from 'playwright-core';

/** Debian's Chromium (the `chromium` package; .ci/run installs it), driven headless by playwright-core. */
export const CHROMIUM = '/usr/bin/chromium';
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
export const ARTIFACTS = path.resolve('test-artifacts');

export interface Browser {
  context: BrowserContext;
  close(): Promise<void>;
}

/** A browser with a fresh profile of its own, removed on close. */
export async function launchBrowser(options: { httpCredentials?: { username: string; password: string } } = {}): Promise<Browser> {
  const userDataDir = await mkdtemp(path.join(os.tmpdir(), 'chromium-e2e-'));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
    viewport: { width: 1280, height: 800 },
    ...options,
  });
  return {
    context,
    async close() {
      await context.close();
      await rm(userDataDir, { recursive: true, force: true });
    },
  };
}
