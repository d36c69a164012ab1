import { execFile, spawn } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { sql } from 'slonik';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startEnvironment, type TestEnvironment } from './support/harness.js';
import { type CheckingProxy, startCheckingProxy } from './support/openapi-check.js';
import { pollUntil } from './support/poll.js';

/*
 * `commerce-sync changes` (interface §22.7), run as a shop runs it (a process
 * of its own) against the real API and worker, through a proxy that checks
 * every response against /openapi.json.
 */

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BIN = path.join(ROOT, 'bin/commerce-sync.mjs');
const CLI_TIMEOUT = 120_000;

let env: TestEnvironment;
let proxy: CheckingProxy;
let shopToken: string;
let credentials: Record<string, string>;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

const processEnv = () => ({ PATH: process.env['PATH'] ?? '', HOME: os.tmpdir(), ...credentials });

function commerceSync(args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { cwd: ROOT, env: processEnv(), timeout: CLI_TIMEOUT }, (error, stdout, stderr) =>
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr }),
    );
  });
}

const lines = (text: string) => text.trim().split('\n').filter(Boolean);
const entries = (run: Run) => lines(run.stdout).map((line) => JSON.parse(line) as Record<string, unknown>);

beforeAll(async () => {
  env = await startEnvironment();
  proxy = await startCheckingProxy(env.baseUrl);
  const client = await env.newClient();
  const token = await env.request('POST', '/oauth/token', {
    body: { grant_type: 'client_credentials', client_id: client.client_id, client_secret: client.client_secret },
  });
  credentials = { SYNC_URL: proxy.url, SYNC_CLIENT_ID: client.client_id, SYNC_CLIENT_SECRET: client.client_secret };
  shopToken = token.body.access_token as string;
  const created = await env.request('PUT', '/api/v2/languages', { token: shopToken, body: { language: { id: 'nl' } } });
  expect(created.status).toBe(200);
});

afterEach(() => {
  expect(proxy.take(), 'responses the command line received that /openapi.json does not describe').toEqual([]);
});

afterAll(async () => {
  await proxy?.close();
  await env?.close();
});

const put = async (kind: 'product' | 'category', id: string) => {
  const segment = kind === 'product' ? 'products' : 'categories';
  const response = await env.request('PUT', `/api/v2/languages/nl/${segment}`, { token: shopToken, body: { [kind]: { id, name: id } } });
  expect(response.status).toBe(200);
};

describe('when a shop reads the changes of a language', { timeout: 3 * CLI_TIMEOUT }, () => {
  it('should print every entry as NDJSON and the cursor to resume from on stderr', async () => {
    await put('category', 'c1');
    await put('product', 'p1');
    await env.drain();
    const run = await commerceSync(['changes', '--language', 'nl']);
    expect(run.code, run.stderr).toBe(0);
    expect(entries(run).map((entry) => [entry['kind'], entry['record_id'], entry['action']])).toEqual([
      ['language', 'nl', 'create'],
      ['category', 'c1', 'create'],
      ['product', 'p1', 'create'],
    ]);
    const cursor = lines(run.stderr).at(-1)!;
    expect(cursor).toBe(entries(run).at(-1)!['cursor']);

    await put('product', 'p2');
    await env.drain();
    const next = await commerceSync(['changes', '--language', 'nl', '--after', cursor]);
    expect(next.code, next.stderr).toBe(0);
    expect(entries(next).map((entry) => entry['record_id'])).toEqual(['p2']);
    const categories = await commerceSync(['changes', '--language', 'nl', '--kinds', 'category']);
    expect(entries(categories).map((entry) => entry['record_id'])).toEqual(['c1']);
  });

  it('should follow new changes until interrupted, then print the cursor and exit 130', async () => {
    const start = lines((await commerceSync(['changes', '--language', 'nl'])).stderr).at(-1)!;
    const child = spawn(process.execPath, [BIN, 'changes', '--language', 'nl', '--after', start, '--follow'], {
      cwd: ROOT,
      env: processEnv(),
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    await put('product', 'followed');
    const seen = await pollUntil(
      async () => stdout,
      (text) => text.includes('"followed"'),
      { timeoutMs: 30_000 },
    );
    expect(seen).toContain('"followed"');
    child.kill('SIGINT');
    expect(await exited).toBe(130);
    const cursor = lines(stderr).at(-1)!;
    const after = await commerceSync(['changes', '--language', 'nl', '--after', cursor]);
    expect(after.code, after.stderr).toBe(0);
    expect(entries(after)).toEqual([]);
  });

  it('should say how to start again when the cursor has expired, and exit 2', async () => {
    const start = lines((await commerceSync(['changes', '--language', 'nl'])).stderr).at(-1)!;
    const seq = Number(await env.db.oneFirst(sql.unsafe`SELECT max(seq) + 1 FROM audit_log`));
    await env.db.query(sql.unsafe`UPDATE audit_retention SET removed_through = ${seq}`);
    try {
      const run = await commerceSync(['changes', '--language', 'nl', '--after', start]);
      expect(run.code).toBe(2);
      expect(run.stderr).toContain('from=now');
    } finally {
      await env.db.query(sql.unsafe`UPDATE audit_retention SET removed_through = 0`);
    }
  });

  it('should refuse an unknown kind before asking the service', async () => {
    const run = await commerceSync(['changes', '--language', 'nl', '--kinds', 'widget']);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('kinds must be among');
  });
});
