/**
 * `npm run bench`: measures the service against the machine's own floors, in
 * one run, in a database of its own, and reports both speed and cost: CPU
 * time per unit of work of every process it starts and of the Postgres
 * backends serving the bench database (steadier than rates on a shared
 * machine). Prints a table and writes bench/results.json (flat keys, e.g.
 * `writes.api_cpu_us`). Bounded to about 10 minutes (BENCH_BULK_TIMEOUT_S
 * caps the bulk phase).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createReadStream, createWriteStream } from 'node:fs';
import { rm, writeFile } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import autocannon from 'autocannon';
import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { createClient } from '../auth/auth.service.js';
import { createDatabase } from '../platform/db.js';
import type { AppliedBy } from '../platform/metrics.js';
import { migrate } from '../platform/migrator.js';
import { sample } from '../test/support/metrics.js';
import { startNewlineUploads } from '../test/support/newline-uploads.js';
import { type PrivatePostgres, startPrivatePostgres } from '../test/support/postgres.js';
import { freePort } from '../test/support/processes.js';
import { CpuWatch, perUnit } from './cpu.js';
import { readWholeFeed } from './feed-phase.js';
import { shippedPostgresSettings } from './postgres-settings.js';

/** A Postgres server to run against instead of one of the bench's own (started on docker-compose.yml's settings). */
const GIVEN_POSTGRES = process.env['BENCH_POSTGRES_URL'];
const REDIS_URL = process.env['BENCH_REDIS_URL'] ?? 'redis://127.0.0.1:6379';
const DURATION_S = Number(process.env['BENCH_DURATION_S'] ?? 20);
const READ_DURATION_S = Number(process.env['BENCH_READ_DURATION_S'] ?? 15);
/**
 * Load each measured run is given first, not counted: a process just started runs its code unoptimised for its first
 * seconds (V8 tiers a function up only after many calls), which would put most of a short run's slowest responses
 * in its first second. The floor warms too; both are measured warm, as a deployment runs.
 */
const WARMUP_S = Number(process.env['BENCH_WARMUP_S'] ?? 3);
const BULK_LINES = Number(process.env['BENCH_BULK_LINES'] ?? 1_000_000);
/** Lines of the customer file (the profiles phase): new profiles, each matched by the profile rule (interface §4.5) before it is written. */
const PROFILE_LINES = Number(process.env['BENCH_PROFILE_LINES'] ?? 200_000);
const BULK_TIMEOUT_S = Number(process.env['BENCH_BULK_TIMEOUT_S'] ?? 300);
const WALK_TIMEOUT_S = Number(process.env['BENCH_WALK_TIMEOUT_S'] ?? 60);
const CATEGORIES = 1_000;
/** Comma-separated subset of writes,uploads,bulk,profiles,reads,feed (all by default): for profiling one phase. */
const PHASES = new Set((process.env['BENCH_PHASES'] ?? 'writes,uploads,bulk,profiles,reads,feed').split(','));
/** How long the feed phase reads the bulk catalogue's history before it stops counting. */
const FEED_TIMEOUT_S = Number(process.env['BENCH_FEED_TIMEOUT_S'] ?? 60);
/** Reads timed while bodies of newlines are uploaded (the uploads phase). */
const UPLOAD_READS = 1_000;
/** When set, the API and worker write V8 CPU profiles (--cpu-prof) into this directory. */
const PROFILE_DIR = process.env['BENCH_PROFILE_DIR'];
const RATE_LIMIT = process.env['BENCH_RATE_LIMIT'] ?? 'on';
/** When set, the bench database is left behind (its name is logged), to look into a figure with psql afterwards. */
const KEEP_DATABASE = Boolean(process.env['BENCH_KEEP_DATABASE']);

const databaseName = `commerce_bench_${process.pid}`;
/** The server's and the bench database's URLs, once the server is known (main). */
let postgresUrl = '';
let databaseUrl = '';
/** The bench's own server, unless BENCH_POSTGRES_URL gave one. */
let ownPostgres: PrivatePostgres | undefined;
const children: ChildProcess[] = [];
/** Every figure under a flat, stable key (`writes.rps`, `writes.floor_rps`, ...). */
const results: Record<string, number | string | boolean | null> = {
  started_at: new Date().toISOString(),
  'machine.cpus': cpus().length,
  rate_limit: RATE_LIMIT !== 'off',
};
const record = (prefix: string, figures: Record<string, number | string | boolean | null | undefined>) => {
  for (const [key, value] of Object.entries(figures)) results[`${prefix}.${key}`] = value ?? null;
};

const log = (message: string) => process.stderr.write(`[bench] ${message}\n`);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function start(script: string, args: string[], env: Record<string, string>, profile = false): ChildProcess {
  // One node process with tsx as a loader, so the pid (and /proc) is the real process's.
  const flags = profile && PROFILE_DIR ? ['--cpu-prof', '--cpu-prof-dir', PROFILE_DIR] : [];
  const child = spawn(process.execPath, [...flags, '--import', 'tsx', script, ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.push(child);
  return child;
}

async function waitFor(url: string) {
  for (let attempt = 0; attempt < 400; attempt += 1) {
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

interface LoadResult {
  requests: number;
  rps: number;
  p50_ms: number;
  p99_ms: number;
  non_2xx: number;
  errors: number;
}

/**
 * Numbers the ids of the records a load writes, across loads (a warm-up and the run after it write new records alike):
 * autocannon's own idReplacement sends nothing in programmatic use (v8).
 */
let loadCounter = 0;

/** `load` for WARMUP_S seconds, its figures dropped: run before the CPU watch of a measured load starts. */
async function warmUp(url: string, options: Omit<LoadOptions, 'duration'>): Promise<void> {
  if (WARMUP_S > 0) await load(url, { ...options, duration: WARMUP_S });
}

interface LoadOptions {
  connections: number;
  duration: number;
  method?: 'GET' | 'POST';
  body?: string;
  headers?: Record<string, string>;
}

async function load(url: string, options: LoadOptions): Promise<LoadResult> {
  const template = options.body;
  const result = await autocannon({
    url,
    connections: options.connections,
    duration: options.duration,
    method: options.method ?? 'GET',
    headers: options.headers,
    ...(template
      ? {
          requests: [
            {
              setupRequest: (request: Record<string, unknown>) => ({
                ...request,
                body: template.replace('[<id>]', `bench-${process.pid}-${++loadCounter}`),
              }),
            },
          ],
        }
      : {}),
  } as autocannon.Options);
  return {
    requests: result.requests.total - result.non2xx,
    rps: Math.round(result.requests.average),
    p50_ms: result.latency.p50,
    p99_ms: result.latency.p99,
    non_2xx: result.non2xx,
    errors: result.errors,
  };
}

async function psql(text: string, values: unknown[] = []) {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    return await client.query(text, values);
  } finally {
    await client.end();
  }
}

async function copyRows(table: string, columns: string, rows: AsyncIterable<string>) {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await pipeline(Readable.from(rows), client.query(copyFrom(`COPY ${table} (${columns}) FROM STDIN`)));
  } finally {
    await client.end();
  }
}

/** System calls per unit of work, to two decimals. */
const perCall = (calls: number | undefined, units: number): number | null =>
  calls === undefined || units <= 0 ? null : Math.round((calls * 100) / units) / 100;

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length === 0 ? null : sorted[Math.floor(sorted.length / 2)]!;
};

async function main() {
  if (GIVEN_POSTGRES) {
    postgresUrl = GIVEN_POSTGRES;
    results['postgres.server'] = 'given';
  } else {
    // The floor and the service both run on it, so their ratio is measured on the settings a deployment gets.
    const settings = await shippedPostgresSettings();
    log(`postgres: a server of its own on docker-compose.yml's settings (${settings.join(' ')})`);
    ownPostgres = await startPrivatePostgres({ durable: true, settings }).catch((error: Error) => {
      throw new Error(
        `could not start a Postgres server of its own (initdb and pg_ctl must be on the PATH; Debian keeps them in /usr/lib/postgresql/15/bin), or give one in BENCH_POSTGRES_URL: ${error.message.split('\n')[0]}`,
      );
    });
    postgresUrl = ownPostgres.url;
    results['postgres.server'] = 'own';
    results['postgres.settings'] = settings.join(' ');
  }
  databaseUrl = `${postgresUrl}/${databaseName}`;
  log(`database ${databaseName}`);
  await migrate(databaseUrl);
  const db = await createDatabase(databaseUrl, { maximumPoolSize: 2 });
  const credentials = await createClient(db, 'bench-shop');
  await db.end();

  const apiPort = await freePort();
  const common = {
    DATABASE_URL: databaseUrl,
    REDIS_URL,
    QUEUE_PREFIX: `bench${process.pid}`,
    LOG_LEVEL: 'error',
    ADMIN_PASSWORD: 'bench',
    HOST: '127.0.0.1',
    // The request limiter runs on every request but never refuses one (its cost is what is measured);
    // BENCH_RATE_LIMIT=off runs without it, to compare.
    RATE_LIMIT_ENABLED: String(RATE_LIMIT !== 'off'),
    RATE_LIMIT_RPS: '1000000',
  };
  const api = start('bin/api.ts', [], { ...common, PORT: String(apiPort) }, true);
  const workerMetricsPort = await freePort();
  const worker = start('bin/worker.ts', [], { ...common, WORKER_CONCURRENCY: '4', WORKER_METRICS_PORT: String(workerMetricsPort) }, true);
  /** The worker's metrics text (sync_changes_applied_total: who applied the changes). */
  const workerMetrics = async () => (await fetch(`http://127.0.0.1:${workerMetricsPort}/metrics`)).text();
  const base = `http://127.0.0.1:${apiPort}`;
  const apiMetrics = async () => (await fetch(`${base}/metrics`)).text();
  /** The API's single writes and the statements that carried them, so far (sync/prepared-write.ts). */
  const writeStatements = async () => {
    const text = await apiMetrics();
    return { writes: sample(text, 'sync_single_writes_total') ?? 0, statements: sample(text, 'sync_single_write_statements_total') ?? 0 };
  };
  /** The API's v2 list pages so far, by how it answered them (reads/list-page-cache.ts). */
  const listPages = async () => {
    const text = await apiMetrics();
    const count = (source: string) => sample(text, 'sync_list_pages_total', { source }) ?? 0;
    return { read: count('read'), stale: count('stale'), reused: count('reused') };
  };
  await waitFor(`${base}/healthz`);
  const token = (
    (await (
      await fetch(`${base}/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          grant_type: 'client_credentials',
          client_id: credentials.client_id,
          client_secret: credentials.client_secret,
        }),
      })
    ).json()) as { access_token: string }
  ).access_token;
  const auth = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  const admin = { authorization: `Basic ${Buffer.from('admin:bench').toString('base64')}` };
  for (const language of ['bench', 'bulk', 'customers']) {
    await fetch(`${base}/api/v1/languages`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ language: { id: language, name: language, code: 'xx' } }),
    });
  }
  const pending = async () =>
    ((await (await fetch(`${base}/admin/api/sync-status`, { headers: admin })).json()) as { pending: number }).pending;
  const drainTime = async (capS: number, pollMs = 20) => {
    const started = Date.now();
    while ((await pending()) > 0) {
      if (Date.now() - started > capS * 1000) return null;
      await sleep(pollMs);
    }
    return (Date.now() - started) / 1000;
  };

  if (PHASES.has('writes')) {
    // Single writes, the floor first so our worker's catch-up does not overlap it.
    await psql('CREATE TABLE floor_records (LIKE records INCLUDING DEFAULTS INCLUDING INDEXES)');
    const floorPort = await freePort();
    const floor = start('bench/floor-server.ts', [String(floorPort), databaseUrl], {});
    await waitFor(`http://127.0.0.1:${floorPort}/`);
    const body = JSON.stringify({ product: { id: '[<id>]', name: 'Bench product', price: 9.99, category_ids: ['c1', 'c2', 'c3'] } });
    const floorUrl = `http://127.0.0.1:${floorPort}/`;
    const floorLoad = { connections: 32, method: 'POST' as const, body, headers: { 'content-type': 'application/json' } };
    log(`single writes: floor, ${WARMUP_S}s of warm-up, then ${DURATION_S}s at 32 connections`);
    await warmUp(floorUrl, floorLoad);
    const floorWatch = await CpuWatch.start({ floor: floor.pid }, databaseUrl);
    const floorResult = await load(floorUrl, { ...floorLoad, duration: DURATION_S });
    const floorCost = await floorWatch.stop();
    floor.kill('SIGTERM');

    const serviceUrl = `${base}/api/v1/languages/bench/products`;
    const serviceLoad = { connections: 32, method: 'POST' as const, body, headers: auth };
    log(`single writes: service, ${WARMUP_S}s of warm-up, then ${DURATION_S}s at 32 connections`);
    await warmUp(serviceUrl, serviceLoad);
    // The warm-up's changes are applied before the measured run, so its cost and catch-up are its own.
    await drainTime(120);
    const statementsBefore = await writeStatements();
    const watch = await CpuWatch.start({ api: api.pid, worker: worker.pid }, databaseUrl);
    const ours = await load(serviceUrl, { ...serviceLoad, duration: DURATION_S });
    const statementsAfter = await writeStatements();
    const backlog = await pending();
    const catchUp = await drainTime(120);
    const cost = await watch.stop();
    record('writes', {
      warmup_s: WARMUP_S,
      rps: ours.rps,
      floor_rps: floorResult.rps,
      rps_ratio: Number((ours.rps / floorResult.rps).toFixed(2)),
      p50_ms: ours.p50_ms,
      floor_p50_ms: floorResult.p50_ms,
      p99_ms: ours.p99_ms,
      floor_p99_ms: floorResult.p99_ms,
      p99_ratio: Number((ours.p99_ms / Math.max(floorResult.p99_ms, 1)).toFixed(2)),
      non_2xx: ours.non_2xx,
      writes_per_statement: Number(
        (
          (statementsAfter.writes - statementsBefore.writes) /
          Math.max(statementsAfter.statements - statementsBefore.statements, 1)
        ).toFixed(2),
      ),
      api_cpu_us: perUnit(cost.cpu['api'], ours.requests),
      floor_cpu_us: perUnit(floorCost.cpu['floor'], floorResult.requests),
      api_syscalls_per_write: perCall(cost.syscalls['api'], ours.requests),
      floor_syscalls_per_write: perCall(floorCost.syscalls['floor'], floorResult.requests),
      pg_cpu_us: perUnit(cost.cpu['postgres'], ours.requests),
      floor_pg_cpu_us: perUnit(floorCost.cpu['postgres'], floorResult.requests),
      pg_background_cpu_us: perUnit(cost.cpu['postgres_background'], ours.requests),
      floor_pg_background_cpu_us: perUnit(floorCost.cpu['postgres_background'], floorResult.requests),
      worker_cpu_us_per_change: perUnit(cost.cpu['worker'], ours.requests),
      backlog_at_end: backlog,
      catch_up_s: catchUp,
      api_rss_mib: cost.rss['api'],
      worker_rss_mib: cost.rss['worker'],
      floor_rss_mib: floorCost.rss['floor'],
    });
  }

  if (PHASES.has('uploads')) {
    // A client sending 20 MB bodies of newlines, one after another, must not hold up other requests: a record read
    // alongside, timed (test/bulk-uploads.test.ts checks the behaviour, this measures it).
    const readUrl = `${base}/api/v2/languages/bench/products/upload-reader`;
    await fetch(`${base}/api/v1/languages/bench/products`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ product: { id: 'upload-reader', name: 'read while uploads come in' } }),
    });
    const read = async () => {
      const at = performance.now();
      const response = await fetch(readUrl, { headers: { authorization: auth.authorization } });
      await response.arrayBuffer();
      return response.status === 200 ? performance.now() - at : null;
    };
    for (let index = 0; index < 20; index += 1) await read();
    log(`uploads: ${UPLOAD_READS} reads while 20 MB bodies of newlines are uploaded`);
    const uploader = startNewlineUploads(`${base}/api/v1/languages/bench/bulk`, token);
    const times: number[] = [];
    let failed = 0;
    try {
      while (times.length + failed < UPLOAD_READS) {
        const time = await read();
        if (time === null) failed += 1;
        else times.push(time);
      }
    } finally {
      uploader.stop();
    }
    times.sort((x, y) => x - y);
    const uploads = uploader.uploads();
    record('uploads', {
      files: uploads.length,
      files_accepted: uploads.filter((upload) => upload.status === 202).length,
      reads: times.length,
      reads_failed: failed,
      read_p50_ms: Number(times[times.length >> 1]?.toFixed(1)),
      read_p99_ms: Number(times[Math.ceil(times.length * 0.99) - 1]?.toFixed(1)),
      target_read_p99_ms: 250,
    });
  }

  if (PHASES.has('bulk')) {
    // Categories first, then the catalogue file (10% of products name a missing category).
    const file = path.join(tmpdir(), `bench-${process.pid}.ndjson`);
    const out = createWriteStream(file);
    for (let index = 0; index < BULK_LINES; index += 1) {
      const categories = [0, 1, 2].map((offset) =>
        index % 10 === 0 && offset === 0 ? `missing-${index}` : `cat-${(index + offset * 7) % CATEGORIES}`,
      );
      const line = `{"product":{"id":"p${index}","name":"Product ${index}","price":${(index % 1000) / 10},"category_ids":${JSON.stringify(categories)}}}\n`;
      if (!out.write(line)) await new Promise<void>((resolve) => out.once('drain', () => resolve()));
    }
    await new Promise<void>((resolve) => out.end(() => resolve()));
    const categoriesFile = Array.from(
      { length: CATEGORIES },
      (_, index) => `{"category":{"id":"cat-${index}","name":"Category ${index}"}}`,
    ).join('\n');
    const categoryUpload = await fetch(`${base}/api/v1/languages/bulk/bulk`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/x-ndjson' },
      body: categoriesFile,
    });
    const categoryJob = ((await categoryUpload.json()) as { bulk_job: { id: string } }).bulk_job.id;
    for (;;) {
      const status = (
        (await (await fetch(`${base}/api/v1/languages/bulk/bulk/${categoryJob}`, { headers: auth })).json()) as {
          bulk_job: { status: string };
        }
      ).bulk_job.status;
      if (status === 'completed') break;
      await sleep(100);
    }
    await drainTime(60);

    log(`bulk: ${BULK_LINES} lines, capped at ${BULK_TIMEOUT_S}s`);
    const appliedBefore = await workerMetrics();
    const watch = await CpuWatch.start({ api: api.pid, worker: worker.pid }, databaseUrl);
    const bulkStarted = Date.now();
    const upload = await fetch(`${base}/api/v1/languages/bulk/bulk`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/x-ndjson' },
      body: Readable.toWeb(createReadStream(file)) as unknown as BodyInit,
      duplex: 'half',
    } as RequestInit);
    const uploaded = (Date.now() - bulkStarted) / 1000;
    const location = upload.headers.get('location')!;
    let bulkStatus = { status: 'queued', saved: 0, failed: 0, lines: 0 };
    while (Date.now() - bulkStarted < BULK_TIMEOUT_S * 1000) {
      bulkStatus = ((await (await fetch(`${base}${location}`, { headers: auth })).json()) as { bulk_job: typeof bulkStatus }).bulk_job;
      if (bulkStatus.status === 'completed' || bulkStatus.status === 'failed') break;
      await sleep(250);
    }
    const linesDone = (Date.now() - bulkStarted) / 1000;
    // Done means the final rows exist: stubs, links and audit entries too, as in the floor's COPY.
    // Polled once a second: counting a million pending changes is itself work.
    const drained = bulkStatus.status === 'completed' ? await drainTime(Math.max(BULK_TIMEOUT_S - linesDone, 1), 1_000) : null;
    const bulkElapsed = (Date.now() - bulkStarted) / 1000;
    const cost = await watch.stop();
    const pendingAtEnd = await pending();
    const appliedAfter = await workerMetrics();
    const appliedDuring = (by: AppliedBy) =>
      (sample(appliedAfter, 'sync_changes_applied_total', { by }) ?? 0) -
      (sample(appliedBefore, 'sync_changes_applied_total', { by }) ?? 0);
    const processed = bulkStatus.saved + bulkStatus.failed;
    // Unfinished: the slower of the two rates (lines stored, effects applied) decides.
    const linesRate = processed / Math.max(linesDone - uploaded, 0.001);
    const effectsRate = Math.max(bulkStatus.saved - pendingAtEnd, 1) / Math.max(bulkElapsed - uploaded, 0.001);
    const projection = Math.round(uploaded + BULK_LINES / Math.max(Math.min(linesRate, effectsRate), 1));
    const finished = bulkStatus.status === 'completed' && drained !== null;

    // The floor: COPY of the same final rows (records, links, audit entries) into tables of the same shape.
    await psql(
      `CREATE TABLE IF NOT EXISTS floor_records (LIKE records INCLUDING DEFAULTS INCLUDING INDEXES);
       TRUNCATE floor_records;
       CREATE TABLE floor_links (LIKE links INCLUDING DEFAULTS INCLUDING INDEXES);
       CREATE TABLE floor_audit (LIKE audit_log INCLUDING DEFAULTS INCLUDING INDEXES)`,
    );
    log('bulk: the COPY floor');
    const floorWatch = await CpuWatch.start({}, databaseUrl);
    const floorStarted = Date.now();
    const now = new Date().toISOString();
    async function* productRows() {
      for (let index = 0; index < BULK_LINES; index += 1) {
        yield `2\tproduct\tp${index}\t{"name":"Product ${index}","price":${(index % 1000) / 10}}\t{"name":${index},"price":${index}}\ttrue\t${index}\t${index}\t0\t${now}\t${now}\ttrue\t\\N\n`;
      }
    }
    async function* linkRows() {
      for (let index = 0; index < BULK_LINES; index += 1) {
        for (const offset of [0, 1, 2]) {
          const category = index % 10 === 0 && offset === 0 ? `missing-${index}` : `cat-${(index + offset * 7) % CATEGORIES}`;
          yield `2\tproduct_category\tp${index}\t${category}\t${index}\n`;
        }
      }
    }
    async function* auditRows() {
      for (let index = 0; index < BULK_LINES; index += 1) {
        yield `1\t2\tbulk\tproduct\tp${index}\tcreate\tclient\treq\t${index}\t{}\n`;
        if (index % 10 === 0) yield `1\t2\tbulk\tcategory\tmissing-${index}\tstub\tsystem\treq\t${index}\t{}\n`;
        for (const offset of [0, 1, 2]) yield `1\t2\tbulk\tproduct\tp${index}\tlink\tsystem\treq\t${index}\t{"category_ids":"${offset}"}\n`;
      }
    }
    await copyRows(
      'floor_records',
      'lang_key, kind, id, data, stamps, live, created_seq, write_seq, deleted_seq, created_at, updated_at, w_live, w_ref',
      productRows(),
    );
    await copyRows('floor_links', 'lang_key, rel, a, b, seq', linkRows());
    await copyRows(
      'floor_audit',
      'account_id, lang_key, language_id, kind, record_id, action, actor, request_id, write_seq, changes',
      auditRows(),
    );
    const floorSeconds = (Date.now() - floorStarted) / 1000;
    const floorCost = await floorWatch.stop();
    // Left behind, the floor's millions of fresh rows were vacuumed by autovacuum during the reads that follow,
    // taking Postgres time from the service's pages; they are not needed once measured.
    await psql('DROP TABLE floor_records, floor_links, floor_audit');
    const seconds = finished ? bulkElapsed : projection;
    record('bulk', {
      lines: BULK_LINES,
      seconds,
      projected: !finished,
      floor_seconds: floorSeconds,
      ratio: Number((seconds / floorSeconds).toFixed(2)),
      upload_s: uploaded,
      lines_stored_s: bulkStatus.status === 'completed' ? linesDone : null,
      lag_s: finished ? Number((bulkElapsed - linesDone).toFixed(1)) : null,
      lines_per_s: Math.round(linesRate),
      pending_at_end: pendingAtEnd,
      // Who applied the file's changes: its own batches, in turn, or the applier from the outbox (queued).
      changes_applied_in_turn: appliedDuring('bulk_in_turn'),
      changes_applied_by_applier: appliedDuring('applier'),
      api_cpu_us_per_line: perUnit(cost.cpu['api'], processed),
      worker_cpu_us_per_line: perUnit(cost.cpu['worker'], processed),
      pg_cpu_us_per_line: perUnit(cost.cpu['postgres'], processed),
      floor_pg_cpu_us_per_line: perUnit(floorCost.cpu['postgres'], BULK_LINES),
      pg_background_cpu_us_per_line: perUnit(cost.cpu['postgres_background'], processed),
      floor_pg_background_cpu_us_per_line: perUnit(floorCost.cpu['postgres_background'], BULK_LINES),
      api_rss_mib: cost.rss['api'],
      worker_rss_mib: cost.rss['worker'],
    });
    await rm(file, { force: true });
  }

  if (PHASES.has('profiles')) {
    // A shop's customers, sent whole: profiles are matched (the profile rule, interface §4.5: by id, then by email) before they are written.
    log(`profiles: ${PROFILE_LINES} lines`);
    const lines = Array.from(
      { length: PROFILE_LINES },
      (_, index) =>
        `{"profile":{"id":"c${index}","email":"c${index}@example.test","first_name":"First ${index}","city":"City ${index % 100}"}}\n`,
    ).join('');
    const watch = await CpuWatch.start({ api: api.pid, worker: worker.pid }, databaseUrl);
    const started = Date.now();
    const upload = await fetch(`${base}/api/v1/languages/customers/bulk`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/x-ndjson' },
      body: lines,
    });
    const location = upload.headers.get('location')!;
    let job = { status: 'queued', saved: 0, failed: 0 };
    while (Date.now() - started < BULK_TIMEOUT_S * 1000) {
      job = ((await (await fetch(`${base}${location}`, { headers: auth })).json()) as { bulk_job: typeof job }).bulk_job;
      if (job.status === 'completed' || job.status === 'failed') break;
      await sleep(250);
    }
    const drained = job.status === 'completed' ? await drainTime(BULK_TIMEOUT_S, 1_000) : null;
    const seconds = (Date.now() - started) / 1000;
    const cost = await watch.stop();
    const processed = job.saved + job.failed;
    record('profiles', {
      lines: PROFILE_LINES,
      finished: job.status === 'completed' && drained !== null,
      saved: job.saved,
      seconds,
      lines_per_s: Math.round(processed / Math.max(seconds, 0.001)),
      api_cpu_us_per_line: perUnit(cost.cpu['api'], processed),
      worker_cpu_us_per_line: perUnit(cost.cpu['worker'], processed),
      pg_cpu_us_per_line: perUnit(cost.cpu['postgres'], processed),
    });
  }

  if (PHASES.has('reads')) {
    // Reads on a 1,000,000-product language. Whatever the bulk phase did not reach is inserted directly,
    // and the worker is stopped first so an unfinished bulk job does not load the machine during the reads.
    worker.kill('SIGTERM');
    await new Promise((resolve) => worker.once('exit', resolve));
    const langKey = (await psql(`SELECT lang_key FROM languages WHERE id = 'bulk' AND deleted_at IS NULL`)).rows[0].lang_key as number;
    const have = Number(
      (await psql(`SELECT count(*) FROM records WHERE lang_key = $1 AND kind = 'product' AND live`, [langKey])).rows[0].count,
    );
    if (have < BULK_LINES) {
      // Shaped as the bulk file's products (a name and a price; three categories, every tenth product's first
      // one a stub), so a page costs what it costs after the bulk phase (bare products would cost about half).
      log(`reads: topping up ${BULK_LINES - have} products directly, shaped as the bulk file's`);
      const insertRecords = (kind: string, rows: string, parameters: unknown[]) =>
        psql(
          `INSERT INTO records (lang_key, kind, id, data, stamps, live, created_seq, write_seq, created_at, updated_at, w_live)
           SELECT $1, '${kind}', r.id, r.data, '{}', true, 0, 0, r.created_at, now(), true
           FROM (${rows}) r
           ON CONFLICT DO NOTHING`,
          [langKey, ...parameters],
        );
      await insertRecords(
        'category',
        `SELECT 'cat-' || g AS id, jsonb_build_object('name', 'Category ' || g) AS data, now() AS created_at
         FROM generate_series(0, $3 - 1) g
         UNION ALL
         SELECT 'missing-' || g, '{}', now() FROM generate_series(0, $2 - 1, 10) g`,
        [BULK_LINES, CATEGORIES],
      );
      await insertRecords(
        'product',
        `SELECT 'p' || g AS id, jsonb_build_object('name', 'Product ' || g, 'price', (g % 1000)::float8 / 10) AS data,
                now() - (g || ' milliseconds')::interval AS created_at
         FROM generate_series(0, $2 - 1) g`,
        [BULK_LINES],
      );
      await psql(
        `INSERT INTO links (lang_key, rel, a, b, seq)
         SELECT $1, 'product_category', 'p' || g,
                CASE WHEN g % 10 = 0 AND o = 0 THEN 'missing-' || g ELSE 'cat-' || ((g + o * 7) % $3) END, 0
         FROM generate_series(0, $2 - 1) g, generate_series(0, 2) o
         ON CONFLICT DO NOTHING`,
        [langKey, BULK_LINES, CATEGORIES],
      );
    }
    // What the reads touch is vacuumed as autovacuum would soon after a load (its visibility map lets index-only
    // scans of the links skip the table), so the reads measure reads, not an autovacuum catching up under them.
    await psql('VACUUM ANALYZE records, links');
    const readAuth = { authorization: auth.authorization };
    const readLoad = { connections: 8, headers: readAuth };
    // The same first page from a second API process that keeps no pages (LIST_PAGE_CACHE_MB=0): what a page
    // costs when its language was written since it was last read. Started now, so it is idle until its turn.
    const freshPort = await freePort();
    const fresh = start('bin/api.ts', [], { ...common, PORT: String(freshPort), LIST_PAGE_CACHE_MB: '0' });
    const freshBase = `http://127.0.0.1:${freshPort}`;
    await waitFor(`${freshBase}/healthz`);
    const pagesBefore = await listPages();
    for (const [name, url, target, pid] of [
      ['page_1', `${base}/api/v2/languages/bulk/products?page=1&per_page=250`, 20, api.pid],
      ['page_1000', `${base}/api/v2/languages/bulk/products?page=1000&per_page=250`, 100, api.pid],
      ['sub_listing', `${base}/api/v2/languages/bulk/products/p1/categories`, 20, api.pid],
      ['page_1_read', `${freshBase}/api/v2/languages/bulk/products?page=1&per_page=250`, null, fresh.pid],
    ] as const) {
      const probe = await fetch(url, { headers: readAuth });
      if (probe.status !== 200) {
        record(`reads.${name}`, { skipped: `answered ${probe.status}` });
        continue;
      }
      log(`reads: ${name}, ${WARMUP_S}s of warm-up, then ${READ_DURATION_S}s at 8 connections`);
      await warmUp(url, readLoad);
      const watch = await CpuWatch.start({ api: pid }, databaseUrl);
      const result = await load(url, { ...readLoad, duration: READ_DURATION_S });
      const cost = await watch.stop();
      record(`reads.${name}`, {
        warmup_s: WARMUP_S,
        rps: result.rps,
        p50_ms: result.p50_ms,
        p99_ms: result.p99_ms,
        target_p99_ms: target,
        non_2xx: result.non_2xx,
        api_cpu_us: perUnit(cost.cpu['api'], result.requests),
        pg_cpu_us: perUnit(cost.cpu['postgres'], result.requests),
        api_rss_mib: cost.rss['api'],
      });
    }
    fresh.kill('SIGTERM');
    // How the service's API answered its pages (reads/list-page-cache.ts): most of the three figures above
    // are pages kept and answered again, as nothing was written to the language during them.
    const pagesAfter = await listPages();
    record('reads.pages', {
      read: pagesAfter.read - pagesBefore.read,
      stale: pagesAfter.stale - pagesBefore.stale,
      reused: pagesAfter.reused - pagesBefore.reused,
    });
    await walkWithCursor(base, readAuth);
  }

  if (PHASES.has('feed')) {
    // The bulk catalogue's history (every product's create, links and stubs), read by a consumer catching up.
    log(`feed: the bulk language's changes from the start, 1,000 a page, capped at ${FEED_TIMEOUT_S}s`);
    record(
      'feed',
      await readWholeFeed({
        base,
        headers: { authorization: auth.authorization },
        language: 'bulk',
        capS: FEED_TIMEOUT_S,
        apiPid: api.pid,
        databaseUrl,
      }),
    );
  }
}

/**
 * A whole catalogue paged through with `cursor` (when the service offers
 * it): the last pages should cost what the first ones do.
 */
async function walkWithCursor(base: string, headers: Record<string, string>) {
  const first = await fetch(`${base}/api/v2/languages/bulk/products?per_page=250`, { headers });
  const body = (await first.json()) as { meta?: { next_cursor?: string | null } };
  if (!body.meta || !('next_cursor' in body.meta)) {
    record('reads.cursor', { skipped: 'no next_cursor in meta' });
    return;
  }
  log(`reads: a whole walk with cursor, capped at ${WALK_TIMEOUT_S}s`);
  const times: number[] = [];
  let cursor: string | null | undefined = body.meta.next_cursor;
  const started = Date.now();
  while (cursor && Date.now() - started < WALK_TIMEOUT_S * 1000) {
    const at = performance.now();
    const response = await fetch(`${base}/api/v2/languages/bulk/products?per_page=250&cursor=${encodeURIComponent(cursor)}`, { headers });
    const page = (await response.json()) as { meta: { next_cursor: string | null } };
    times.push(performance.now() - at);
    cursor = page.meta.next_cursor;
  }
  const round = (value: number | null) => (value === null ? null : Number(value.toFixed(1)));
  record('reads.cursor', {
    pages: times.length + 1,
    complete: !cursor,
    first_p50_ms: round(median(times.slice(0, 50))),
    last_p50_ms: round(median(times.slice(-50))),
  });
}

function table(): string {
  const value = (key: string) => (results[key] === undefined || results[key] === null ? '' : String(results[key]));
  const rows: string[][] = [['figure', 'service', 'floor', 'ratio', 'target']];
  const row = (figure: string, service: string, floor = '', ratio = '', target = '') => rows.push([figure, service, floor, ratio, target]);
  if (results['writes.rps'] !== undefined) {
    row('single writes req/s', value('writes.rps'), value('writes.floor_rps'), value('writes.rps_ratio'), '>= 0.6 (0.75)');
    row('single writes p50 ms', value('writes.p50_ms'), value('writes.floor_p50_ms'));
    row('single writes p99 ms', value('writes.p99_ms'), value('writes.floor_p99_ms'), value('writes.p99_ratio'), '<= 3 (2)');
    const apiCpu = Number(results['writes.api_cpu_us']);
    const floorCpu = Number(results['writes.floor_cpu_us']);
    row(
      'API CPU µs per write',
      value('writes.api_cpu_us'),
      value('writes.floor_cpu_us'),
      floorCpu ? (apiCpu / floorCpu).toFixed(2) : '',
      '<= 2',
    );
    row('single writes per statement', value('writes.writes_per_statement'));
    row('API system calls per write', value('writes.api_syscalls_per_write'), value('writes.floor_syscalls_per_write'));
    row('Postgres CPU µs per write', value('writes.pg_cpu_us'), value('writes.floor_pg_cpu_us'));
    row('Postgres background CPU µs per write', value('writes.pg_background_cpu_us'), value('writes.floor_pg_background_cpu_us'));
    row('worker CPU µs per change', value('writes.worker_cpu_us_per_change'));
    row('worker catch-up s', value('writes.catch_up_s'), '', '', '<= 2');
    row(
      'peak RSS MiB (writes)',
      `api ${value('writes.api_rss_mib')}, worker ${value('writes.worker_rss_mib')}`,
      value('writes.floor_rss_mib'),
    );
  }
  if (results['uploads.read_p99_ms'] !== undefined) {
    row(
      'reads during 20 MB newline uploads p50/p99 ms',
      `${value('uploads.read_p50_ms')} / ${value('uploads.read_p99_ms')} (${value('uploads.files_accepted')} of ${value('uploads.files')} files taken)`,
      '',
      '',
      'p99 <= 250',
    );
  }
  if (results['bulk.seconds'] !== undefined) {
    const projected = results['bulk.projected'] ? ` (projected; ${value('bulk.pending_at_end')} effects pending)` : '';
    row(
      `bulk ${value('bulk.lines')} lines s`,
      `${value('bulk.seconds')}${projected}`,
      value('bulk.floor_seconds'),
      value('bulk.ratio'),
      '<= 2',
    );
    row('bulk lines stored s / lag s', `${value('bulk.lines_stored_s')} / ${value('bulk.lag_s')}`, '', '', 'lag <= 15');
    row('bulk lines/s', value('bulk.lines_per_s'));
    row('bulk changes applied in turn / queued', `${value('bulk.changes_applied_in_turn')} / ${value('bulk.changes_applied_by_applier')}`);
    row(
      'bulk CPU µs per line (api/worker/pg)',
      `${value('bulk.api_cpu_us_per_line')} / ${value('bulk.worker_cpu_us_per_line')} / ${value('bulk.pg_cpu_us_per_line')}`,
      value('bulk.floor_pg_cpu_us_per_line'),
    );
    row(
      'bulk Postgres background CPU µs per line',
      value('bulk.pg_background_cpu_us_per_line'),
      value('bulk.floor_pg_background_cpu_us_per_line'),
    );
    row('peak RSS MiB (bulk)', `api ${value('bulk.api_rss_mib')}, worker ${value('bulk.worker_rss_mib')}`);
  }
  if (results['profiles.seconds'] !== undefined) {
    row(
      `customer file: ${value('profiles.lines')} profiles s (lines/s)`,
      `${value('profiles.seconds')} (${value('profiles.lines_per_s')})${results['profiles.finished'] ? '' : ', unfinished'}`,
    );
    row(
      'customer file CPU µs per line (api/worker/pg)',
      `${value('profiles.api_cpu_us_per_line')} / ${value('profiles.worker_cpu_us_per_line')} / ${value('profiles.pg_cpu_us_per_line')}`,
    );
  }
  for (const [name, target] of [
    ['page_1', 20],
    ['page_1000', 100],
    ['sub_listing', 20],
    ['page_1_read', null],
  ] as const) {
    const key = `reads.${name}`;
    if (results[`${key}.skipped`]) row(`v2 ${name}`, value(`${key}.skipped`));
    else if (results[`${key}.p99_ms`] !== undefined) {
      row(`v2 ${name} p50/p99 ms`, `${value(`${key}.p50_ms`)} / ${value(`${key}.p99_ms`)}`, '', '', target ? `p99 <= ${target}` : '');
      row(`v2 ${name} CPU µs per page (api/pg)`, `${value(`${key}.api_cpu_us`)} / ${value(`${key}.pg_cpu_us`)}`);
    }
  }
  if (results['reads.pages.reused'] !== undefined) {
    row('v2 pages read / stale / reused', `${value('reads.pages.read')} / ${value('reads.pages.stale')} / ${value('reads.pages.reused')}`);
  }
  if (results['reads.cursor.skipped']) row('v2 cursor walk', value('reads.cursor.skipped'));
  else if (results['reads.cursor.pages'] !== undefined) {
    row(
      'v2 cursor walk first/last p50 ms',
      `${value('reads.cursor.first_p50_ms')} / ${value('reads.cursor.last_p50_ms')} (${value('reads.cursor.pages')} pages${results['reads.cursor.complete'] ? '' : ', capped'})`,
      '',
      '',
      'last ≈ first',
    );
  }
  if (results['feed.read_entries_per_s'] !== undefined) {
    row(
      'feed entries/s read from the start',
      `${value('feed.read_entries_per_s')} (${value('feed.entries')} entries${results['feed.complete'] ? '' : ', capped'})`,
    );
  }
  if (results['reads.page_1.api_rss_mib'] !== undefined) row('peak RSS MiB (reads)', `api ${value('reads.page_1000.api_rss_mib')}`);
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((cells) => (cells[column] ?? '').length)));
  return rows.map((cells) => cells.map((cell, column) => (cell ?? '').padEnd(widths[column]!)).join(' | ')).join('\n');
}

try {
  await main();
} catch (error) {
  results['error'] = String(error);
  log(`failed: ${String(error)}`);
  process.exitCode = 1;
} finally {
  for (const child of children) child.kill('SIGTERM');
  await sleep(1000);
  if (KEEP_DATABASE) {
    log(`kept database ${databaseUrl}`);
    if (ownPostgres)
      log(`its server keeps running at ${postgresUrl}; stop it with pg_ctl -D ${ownPostgres.dataDirectory} stop (as the postgres user)`);
  } else if (ownPostgres) await ownPostgres.destroy();
  else if (databaseUrl) {
    const admin = new pg.Client({ connectionString: `${postgresUrl}/postgres` });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS ${databaseName} WITH (FORCE)`);
    await admin.end();
  }
  results['finished_at'] = new Date().toISOString();
  await writeFile(new URL('./results.json', import.meta.url), `${JSON.stringify(results, null, 2)}\n`);
  process.stdout.write(`${table()}\n`);
}
