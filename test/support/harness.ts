import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { type RunningApi, startApi } from '../../api/server.js';
import { createClient } from '../../auth/auth.service.js';
import { type Config, parseConfig } from '../../platform/config.js';
import { createDatabase, type Database } from '../../platform/db.js';
import { createLogger, type Logger } from '../../platform/logger.js';
import { migrate } from '../../platform/migrator.js';
import { type RunningWorker, startWorker } from '../../worker/worker.js';
import { checkResponse, openApiCheckEnabled } from './openapi-check.js';

export const POSTGRES_URL = process.env['TEST_POSTGRES_URL'] ?? 'postgres://postgres@127.0.0.1:5432';
export const REDIS_URL = process.env['TEST_REDIS_URL'] ?? 'redis://127.0.0.1:6379';

export interface HttpResponse {
  status: number;
  headers: Headers;
  body: any;
  text: string;
}

export interface RequestOptions {
  body?: unknown;
  raw?: string | Buffer;
  token?: string | null;
  headers?: Record<string, string>;
}

export interface Credentials {
  account: string;
  client_id: string;
  client_secret: string;
}

export interface TestEnvironment {
  config: Config;
  databaseName: string;
  baseUrl: string;
  db: Database;
  api: RunningApi;
  worker?: RunningWorker;
  request(method: string, path: string, options?: RequestOptions): Promise<HttpResponse>;
  /** A new client in `account` (a fresh account by default). */
  newClient(account?: string): Promise<Credentials>;
  /** A bearer token for a fresh client of `account`. */
  token(account?: string): Promise<string>;
  /** Admin Basic header for this environment. */
  adminHeaders: Record<string, string>;
  /** Waits until sync-status reports nothing pending (the queue has drained). */
  drain(timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

export const uniqueName = (prefix: string) => `${prefix}_${process.pid}_${randomBytes(4).toString('hex')}`;

export async function dropDatabase(name: string, server = POSTGRES_URL): Promise<void> {
  const client = new pg.Client({ connectionString: `${server}/postgres` });
  await client.connect();
  try {
    await client.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`);
  } finally {
    await client.end();
  }
}

export function testConfig(databaseName: string, overrides: Record<string, string> = {}, server = POSTGRES_URL): Config {
  return parseConfig({
    DATABASE_URL: `${server}/${databaseName}`,
    REDIS_URL,
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: process.env['TEST_LOG_LEVEL'] ?? 'silent',
    QUEUE_PREFIX: uniqueName('tq'),
    ADMIN_PASSWORD: 'test-admin-password',
    WORKER_CONCURRENCY: '2',
    // Request limits stay on (their cost and headers are part of every test) but out of reach;
    // test/limits.test.ts sets its own.
    RATE_LIMIT_RPS: '100000',
    // Likewise the failed sign-in limits: many tests send wrong credentials on purpose (test/sign-in-limits.test.ts sets its own).
    AUTH_FAILURE_LIMIT: '100000',
    AUTH_ADDRESS_FAILURE_LIMIT: '100000',
    ...overrides,
  });
}

/**
 * One request to the API. Every response is checked against the API's own
 * /openapi.json (./openapi-check.ts): one the document does not describe
 * fails the test that received it.
 */
export async function httpRequest(baseUrl: string, method: string, path: string, options: RequestOptions = {}): Promise<HttpResponse> {
  const headers: Record<string, string> = { ...options.headers };
  let body: string | Buffer | undefined;
  if (options.raw !== undefined) body = options.raw;
  else if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers['content-type'] ??= 'application/json';
  }
  if (options.token) headers['authorization'] = `Bearer ${options.token}`;
  const response = await fetch(`${baseUrl}${path}`, { method, headers, body: body as BodyInit | undefined });
  const text = await response.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  const result = { status: response.status, headers: response.headers, body: parsed, text };
  if (openApiCheckEnabled) await checkResponse(baseUrl, method, path, result);
  return result;
}

export interface EnvironmentOptions {
  worker?: boolean;
  env?: Record<string, string>;
  logger?: Logger;
  /** The Postgres server of the test's database (`postgres://…:port`, no database): the shared one unless given. */
  server?: string;
  /** Streaming replicas of `server` (no database): DATABASE_REPLICA_URLS names the test's database on each. */
  replicas?: readonly string[];
}

/**
 * A fresh database (migrated), the real API on a free port and, unless
 * `worker: false`, a real worker, all on their own queue prefix.
 */
export async function startEnvironment(options: EnvironmentOptions = {}): Promise<TestEnvironment> {
  const databaseName = uniqueName('cs_test');
  const replicaUrls = (options.replicas ?? []).map((replica) => `${replica}/${databaseName}`).join(',');
  const config = testConfig(
    databaseName,
    { ...(replicaUrls ? { DATABASE_REPLICA_URLS: replicaUrls } : {}), ...options.env },
    options.server,
  );
  await migrate(config.DATABASE_URL);
  const logger = options.logger ?? createLogger(config.LOG_LEVEL, 'test');
  const api = await startApi(config, logger);
  const worker = options.worker === false ? undefined : await startWorker(config, logger);
  const db = await createDatabase(config.DATABASE_URL, { maximumPoolSize: 4 });
  const baseUrl = `http://127.0.0.1:${api.port}`;
  const request = (method: string, path: string, requestOptions?: RequestOptions) => httpRequest(baseUrl, method, path, requestOptions);
  const newClient = (account = uniqueName('acct')) => createClient(db, account);
  return {
    config,
    databaseName,
    baseUrl,
    db,
    api,
    worker,
    request,
    newClient,
    adminHeaders: { authorization: `Basic ${Buffer.from(`${config.ADMIN_USER}:${config.ADMIN_PASSWORD}`).toString('base64')}` },
    async drain(timeoutMs = 20_000) {
      await waitForDrain(request, config, timeoutMs);
    },
    async token(account?: string) {
      const client = await newClient(account);
      const response = await request('POST', '/oauth/token', {
        body: { grant_type: 'client_credentials', client_id: client.client_id, client_secret: client.client_secret },
      });
      if (response.status !== 200) throw new Error(`token request failed: ${response.status} ${response.text}`);
      return response.body.access_token as string;
    },
    async close() {
      await api.close();
      await worker?.close();
      await db.end();
      await dropDatabase(databaseName, options.server);
    },
  };
}

/** Polls /admin/api/sync-status until `pending` is 0. */
export async function waitForDrain(
  request: (method: string, path: string, options?: RequestOptions) => Promise<HttpResponse>,
  config: Config,
  timeoutMs = 20_000,
): Promise<void> {
  const headers = { authorization: `Basic ${Buffer.from(`${config.ADMIN_USER}:${config.ADMIN_PASSWORD}`).toString('base64')}` };
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const status = await request('GET', '/admin/api/sync-status', { headers });
    if (status.status === 200 && status.body.pending === 0) return;
    if (Date.now() > deadline) throw new Error(`queue did not drain: ${status.text}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Runs a worker until nothing is pending, then stops it: for tests that run bulk batches themselves, with no worker of their own. */
export async function drainWithWorker(env: TestEnvironment): Promise<void> {
  const worker = await startWorker(env.config);
  try {
    await waitForDrain(env.request, env.config);
  } finally {
    await worker.close();
  }
}
