/**
 * What every phase of `npm run bench` shares: the Postgres server and bench
 * database, the API and worker processes, a signed-in shop, the figures
 * recorded so far, and small helpers over them. Built once by `openBench`.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { cpus } from 'node:os';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { createClient } from '../auth/auth.service.js';
import { createDatabase } from '../platform/db.js';
import { migrate } from '../platform/migrator.js';
import { sample } from '../test/support/metrics.js';
import { type PrivatePostgres, startPrivatePostgres } from '../test/support/postgres.js';
import { freePort } from '../test/support/processes.js';
import type { BenchConfig } from './config.js';
import { Loader } from './load.js';
import { shippedPostgresSettings } from './postgres-settings.js';

export type Figure = number | string | boolean | null;

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
export const log = (message: string) => process.stderr.write(`[bench] ${message}\n`);

export async function waitFor(url: string): Promise<void> {
  // A process's first start compiles the TypeScript it loads: on a loaded machine that alone can take half a minute.
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    if (
      await fetch(url).then(
        (response) => response.ok,
        () => false,
      )
    )
      return;
    await sleep(50);
  }
  throw new Error(`${url} did not come up`);
}

/** The languages the phases write to: single writes, the bulk catalogue, the customer file. */
const LANGUAGES = ['bench', 'bulk', 'customers'];

export class Bench {
  /** Every figure under a flat, stable key (`writes.rps`, `writes.floor_rps`, ...). */
  readonly results: Record<string, Figure>;
  readonly loader: Loader;
  readonly databaseName = `commerce_bench_${process.pid}`;
  postgresUrl = '';
  databaseUrl = '';
  /** The bench's own server, unless BENCH_POSTGRES_URL gave one. */
  ownPostgres: PrivatePostgres | undefined;
  private readonly children: ChildProcess[] = [];
  /** Environment the service's processes share. */
  common: Record<string, string> = {};
  api!: ChildProcess;
  worker!: ChildProcess;
  workerMetricsPort = 0;
  base = '';
  token = '';
  /** A shop's headers for writes (JSON). */
  auth: { authorization: string; 'content-type': string } = { authorization: '', 'content-type': 'application/json' };
  readonly admin = { authorization: `Basic ${Buffer.from('admin:bench').toString('base64')}` };

  constructor(readonly config: BenchConfig) {
    this.loader = new Loader(config.warmupS);
    this.results = { started_at: new Date().toISOString(), 'machine.cpus': cpus().length, rate_limit: config.rateLimit };
  }

  record(prefix: string, figures: Record<string, Figure | undefined>): void {
    for (const [key, value] of Object.entries(figures)) this.results[`${prefix}.${key}`] = value ?? null;
  }

  /** Starts a TypeScript entry point as one node process with tsx as a loader, so the pid (and /proc) is the real process's. */
  start(script: string, args: string[], env: Record<string, string>, profile = false): ChildProcess {
    const flags = profile && this.config.profileDir ? ['--cpu-prof', '--cpu-prof-dir', this.config.profileDir] : [];
    const child = spawn(process.execPath, [...flags, '--import', 'tsx', script, ...args], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    this.children.push(child);
    return child;
  }

  /** Starts a worker against the bench database; its metrics are served on `metricsPort`. */
  startWorker(metricsPort: number, env: Record<string, string> = {}): ChildProcess {
    return this.start(
      'bin/worker.ts',
      [],
      { ...this.common, WORKER_CONCURRENCY: '4', WORKER_METRICS_PORT: String(metricsPort), ...env },
      true,
    );
  }

  /** A worker running again if a phase before stopped it (the reads phase does). */
  async ensureWorker(): Promise<void> {
    if (this.worker.exitCode === null && this.worker.signalCode === null) return;
    this.workerMetricsPort = await freePort();
    this.worker = this.startWorker(this.workerMetricsPort);
    await sleep(2_000);
  }

  async psql(text: string, values: unknown[] = []): Promise<pg.QueryResult> {
    const client = new pg.Client({ connectionString: this.databaseUrl });
    await client.connect();
    try {
      return await client.query(text, values);
    } finally {
      await client.end();
    }
  }

  async copyRows(table: string, columns: string, rows: AsyncIterable<string>): Promise<void> {
    const client = new pg.Client({ connectionString: this.databaseUrl });
    await client.connect();
    try {
      await pipeline(Readable.from(rows), client.query(copyFrom(`COPY ${table} (${columns}) FROM STDIN`)));
    } finally {
      await client.end();
    }
  }

  /** The worker's metrics text (sync_changes_applied_total: who applied the changes). */
  async workerMetrics(): Promise<string> {
    return (await fetch(`http://127.0.0.1:${this.workerMetricsPort}/metrics`)).text();
  }

  async apiMetrics(): Promise<string> {
    return (await fetch(`${this.base}/metrics`)).text();
  }

  /** The API's single writes and the statements that carried them, so far (sync/prepared-write.ts). */
  async writeStatements(): Promise<{ writes: number; statements: number }> {
    const text = await this.apiMetrics();
    return { writes: sample(text, 'sync_single_writes_total') ?? 0, statements: sample(text, 'sync_single_write_statements_total') ?? 0 };
  }

  /** The API's v2 list pages so far, by how it answered them (reads/list-page-cache.ts). */
  async listPages(): Promise<{ read: number; stale: number; reused: number }> {
    const text = await this.apiMetrics();
    const count = (source: string) => sample(text, 'sync_list_pages_total', { source }) ?? 0;
    return { read: count('read'), stale: count('stale'), reused: count('reused') };
  }

  /** Changes accepted but not yet applied, as the admin's sync-status counts them. */
  async pending(): Promise<number> {
    return ((await (await fetch(`${this.base}/admin/api/sync-status`, { headers: this.admin })).json()) as { pending: number }).pending;
  }

  /** Seconds until nothing is pending, or null past `capS`. */
  async drainTime(capS: number, pollMs = 20): Promise<number | null> {
    const started = Date.now();
    while ((await this.pending()) > 0) {
      if (Date.now() - started > capS * 1000) return null;
      await sleep(pollMs);
    }
    return (Date.now() - started) / 1000;
  }

  /** Polls a bulk job until it is completed or failed, or `capS` has passed. */
  async bulkJob<T extends { status: string }>(location: string, initial: T, capS: number, since = Date.now()): Promise<T> {
    let job = initial;
    while (Date.now() - since < capS * 1000) {
      job = ((await (await fetch(`${this.base}${location}`, { headers: this.auth })).json()) as { bulk_job: T }).bulk_job;
      if (job.status === 'completed' || job.status === 'failed') break;
      await sleep(250);
    }
    return job;
  }

  /** Stops the processes; removes the database (or its own server), unless asked to keep it. */
  async close(): Promise<void> {
    for (const child of this.children) child.kill('SIGTERM');
    await sleep(1000);
    if (this.config.keepDatabase) {
      log(`kept database ${this.databaseUrl}`);
      if (this.ownPostgres)
        log(
          `its server keeps running at ${this.postgresUrl}; stop it with pg_ctl -D ${this.ownPostgres.dataDirectory} stop (as the postgres user)`,
        );
    } else if (this.ownPostgres) await this.ownPostgres.destroy();
    else if (this.databaseUrl) {
      const admin = new pg.Client({ connectionString: `${this.postgresUrl}/postgres` });
      await admin.connect();
      await admin.query(`DROP DATABASE IF EXISTS ${this.databaseName} WITH (FORCE)`);
      await admin.end();
    }
  }
}

/** Starts Postgres (or uses the given one), the API and a worker, signs a shop in and creates the languages. */
export async function openBench(bench: Bench): Promise<void> {
  const { config } = bench;
  if (config.givenPostgres) {
    bench.postgresUrl = config.givenPostgres;
    bench.results['postgres.server'] = 'given';
  } else {
    // The floor and the service both run on it, so their ratio is measured on the settings a deployment gets.
    const settings = await shippedPostgresSettings();
    log(`postgres: a server of its own on docker-compose.yml's settings (${settings.join(' ')})`);
    bench.ownPostgres = await startPrivatePostgres({ durable: true, settings }).catch((error: Error) => {
      throw new Error(
        `could not start a Postgres server of its own (initdb and pg_ctl must be on the PATH; Debian keeps them in /usr/lib/postgresql/15/bin), or give one in BENCH_POSTGRES_URL: ${error.message.split('\n')[0]}`,
      );
    });
    bench.postgresUrl = bench.ownPostgres.url;
    bench.results['postgres.server'] = 'own';
    bench.results['postgres.settings'] = settings.join(' ');
  }
  bench.databaseUrl = `${bench.postgresUrl}/${bench.databaseName}`;
  log(`database ${bench.databaseName}`);
  await migrate(bench.databaseUrl);
  const db = await createDatabase(bench.databaseUrl, { maximumPoolSize: 2 });
  const credentials = await createClient(db, 'bench-shop');
  await db.end();

  const apiPort = await freePort();
  bench.common = {
    DATABASE_URL: bench.databaseUrl,
    REDIS_URL: config.redisUrl,
    QUEUE_PREFIX: `bench${process.pid}`,
    LOG_LEVEL: 'error',
    ADMIN_PASSWORD: 'bench',
    HOST: '127.0.0.1',
    // The request limiter runs on every request but never refuses one (its cost is what is measured);
    // BENCH_RATE_LIMIT=off runs without it, to compare.
    RATE_LIMIT_ENABLED: String(config.rateLimit),
    RATE_LIMIT_RPS: '1000000',
    // The webhook phase's receiver listens on 127.0.0.1.
    WEBHOOK_ALLOW_PRIVATE: 'true',
  };
  bench.api = bench.start('bin/api.ts', [], { ...bench.common, PORT: String(apiPort) }, true);
  bench.workerMetricsPort = await freePort();
  bench.worker = bench.startWorker(bench.workerMetricsPort);
  bench.base = `http://127.0.0.1:${apiPort}`;
  await waitFor(`${bench.base}/healthz`);
  const response = await fetch(`${bench.base}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ grant_type: 'client_credentials', client_id: credentials.client_id, client_secret: credentials.client_secret }),
  });
  bench.token = ((await response.json()) as { access_token: string }).access_token;
  bench.auth = { authorization: `Bearer ${bench.token}`, 'content-type': 'application/json' };
  for (const language of LANGUAGES) {
    await fetch(`${bench.base}/api/v1/languages`, {
      method: 'POST',
      headers: bench.auth,
      body: JSON.stringify({ language: { id: language, name: language, code: 'xx' } }),
    });
  }
}
