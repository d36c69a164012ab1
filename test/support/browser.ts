import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { type BrowserContext, chromium, type Response } from 'playwright-core';
import { checkResponse, openApiCheckEnabled } from './openapi-check.js';

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
  /** With `checkAgainst`: what /openapi.json does not describe of the API's responses the browser received so far. */
  undocumented(): Promise<string[]>;
  close(): Promise<void>;
}

/**
 * A browser with a fresh profile of its own, removed on close. With
 * `checkAgainst` (the API's base URL), every response the pages receive from
 * the API is checked against its /openapi.json, as the harness's requests
 * are (./openapi-check.ts): the browser is a client of the document too.
 */
export async function launchBrowser(
  options: { httpCredentials?: { username: string; password: string }; checkAgainst?: string } = {},
): Promise<Browser> {
  const { checkAgainst, ...contextOptions } = options;
  const userDataDir = await mkdtemp(path.join(os.tmpdir(), 'chromium-e2e-'));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
    viewport: { width: 1280, height: 800 },
    ...contextOptions,
  });
  const problems: string[] = [];
  const checks = new Set<Promise<void>>();
  const check = async (response: Response) => {
    const request = response.request();
    // A redirect has no body to read; the document lists no redirect, so a 3xx would be flagged by its status alone.
    const text =
      response.status() >= 300 && response.status() < 400 ? '' : (await response.body().catch(() => Buffer.alloc(0))).toString('utf8');
    let body: unknown;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      body = undefined;
    }
    // A response still arriving as the browser closes has nothing left to check (and must not reject unhandled).
    const all = await response.allHeaders().catch(() => undefined);
    if (!all) return;
    const headers = new Headers(all);
    await checkResponse(checkAgainst!, request.method(), request.url(), { status: response.status(), headers, body, text }).catch(
      (error: Error) => problems.push(error.message),
    );
  };
  if (checkAgainst && openApiCheckEnabled) {
    context.on('response', (response) => {
      if (!response.url().startsWith(`${checkAgainst}/`)) return;
      const pending = check(response).finally(() => checks.delete(pending));
      checks.add(pending);
    });
  }
  return {
    context,
    async undocumented() {
      await Promise.all([...checks]);
      return problems.splice(0);
    },
    async close() {
      await context.close();
      await rm(userDataDir, { recursive: true, force: true });
    },
  };
}
