/**
 * `npm run bench`: measures the service against the machine's own floors, in
 * one run, in a database of its own. Prints a table and writes
 * bench/results.json. Bounded to about 10 minutes (BENCH_BULK_TIMEOUT_S caps
 * the bulk phase).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createReadStream, createWriteStream } from 'node:fs';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import autocannon from 'autocannon';
import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { createClient } from '../auth/auth.service.js';
import { createDatabase } from '../platform/db.js';
import { migrate } from '../platform/migrator.js';

const POSTGRES = process.env['BENCH_POSTGRES_URL'] ?? 'postgres://postgres@127.0.0.1:5432';
const REDIS_URL = process.env['BENCH_REDIS_URL'] ?? 'redis://127.0.0.1:6379';
const DURATION_S = Number(process.env['BENCH_DURATION_S'] ?? 30);
const READ_DURATION_S = Number(process.env['BENCH_READ_DURATION_S'] ?? 20);
const BULK_LINES = Number(process.env['BENCH_BULK_LINES'] ?? 1_000_000);
const BULK_TIMEOUT_S = Number(process.env['BENCH_BULK_TIMEOUT_S'] ?? 300);
const CATEGORIES = 1_000;
/** Comma-separated subset of writes,bulk,reads (all by default): for profiling one phase. */
const PHASES = new Set((process.env['BENCH_PHASES'] ?? 'writes,bulk,reads').split(','));
/** When set, the API and worker write V8 CPU profiles (--cpu-prof) into this directory. */
const PROFILE_DIR = process.env['BENCH_PROFILE_DIR'];

const databaseName = `commerce_bench_${process.pid}`;
const databaseUrl = `${POSTGRES}/${databaseName}`;
const children: ChildProcess[] = [];
const results: Record<string, unknown> = {
  started_at: new Date().toISOString(),
  machine: { cpus: (await import('node:os')).cpus().length },
};

const log = (message: string) => process.stderr.write(`[bench] ${message}\n`);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function freePort(): Promise<number> {
  const net = await import('node:net');
  return new Promise((resolve) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

function start(script: string, args: string[], env: Record<string, string>, profile = false): ChildProcess {
  // One node process with tsx as a loader, so the pid (and /proc memory) is the real process's.
  const flags = profile && PROFILE_DIR ? ['--cpu-prof', '--cpu-prof-dir', PROFILE_DIR] : [];
  const child = spawn(process.execPath, [...flags, '--import', 'tsx', script, ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.push(child);
  return child;
}

/** Peak resident memory per process while a phase runs. */
class MemoryWatch {
  private readonly peaks = new Map<string, number>();
  private readonly timer: NodeJS.Timeout;
  constructor(private readonly processes: Record<string, ChildProcess>) {
    this.timer = setInterval(() => void this.sample(), 100);
  }
  private async sample() {
    for (const [name, child] of Object.entries(this.processes)) {
      try {
        const status = await readFile(`/proc/${child.pid}/status`, 'utf8');
        const rss = Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) / 1024;
        this.peaks.set(name, Math.max(this.peaks.get(name) ?? 0, rss));
      } catch {
        // The process may be between restarts.
      }
    }
  }
  stop(): Record<string, number> {
    clearInterval(this.timer);
    return Object.fromEntries([...this.peaks].map(([name, mib]) => [name, Math.round(mib)]));
  }
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

async function load(
  url: string,
  options: { connections: number; duration: number; method?: 'GET' | 'POST'; body?: string; headers?: Record<string, string> },
) {
  // autocannon's own idReplacement sends nothing in programmatic use (v8), so ids are numbered here.
  let counter = 0;
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
                body: template.replace('[<id>]', `bench-${process.pid}-${++counter}`),
              }),
            },
          ],
        }
      : {}),
  } as autocannon.Options);
  return {
    requests_per_s: Math.round(result.requests.average),
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

async function main() {
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
  };
  const api = start('bin/api.ts', [], { ...common, PORT: String(apiPort) }, true);
  const worker = start('bin/worker.ts', [], { ...common, WORKER_CONCURRENCY: '4', WORKER_METRICS_PORT: '0' }, true);
  const base = `http://127.0.0.1:${apiPort}`;
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
  for (const language of ['bench', 'bulk']) {
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
    // Phase 1: single writes, the floor first so our worker's catch-up does not overlap it.
    await psql(`CREATE TABLE floor_records (LIKE records INCLUDING DEFAULTS INCLUDING INDEXES)`);
    const floorPort = await freePort();
    const floor = start('bench/floor-server.ts', [String(floorPort), databaseUrl], {});
    await sleep(1500);
    const body = JSON.stringify({ product: { id: '[<id>]', name: 'Bench product', price: 9.99, category_ids: ['c1', 'c2', 'c3'] } });
    log(`single writes: floor, ${DURATION_S}s at 32 connections`);
    const floorWatch = new MemoryWatch({ floor });
    const floorResult = await load(`http://127.0.0.1:${floorPort}/`, {
      connections: 32,
      duration: DURATION_S,
      method: 'POST',
      body,
      headers: { 'content-type': 'application/json' },
    });
    floorWatch.stop();
    floor.kill('SIGTERM');
    log(`single writes: service, ${DURATION_S}s at 32 connections`);
    const watch = new MemoryWatch({ api, worker });
    const ours = await load(`${base}/api/v1/languages/bench/products`, {
      connections: 32,
      duration: DURATION_S,
      method: 'POST',
      body,
      headers: auth,
    });
    const backlog = await pending();
    const catchUp = await drainTime(120);
    const singleMemory = watch.stop();
    results['single_writes'] = {
      service: ours,
      floor: floorResult,
      ratio_rps: Number((ours.requests_per_s / floorResult.requests_per_s).toFixed(2)),
      ratio_p99: Number((ours.p99_ms / Math.max(floorResult.p99_ms, 1)).toFixed(2)),
      targets: { ratio_rps: '>= 0.75', ratio_p99: '<= 2' },
      backlog_when_load_stopped: backlog,
      drain_s: catchUp,
      drain_target_s: 2,
      peak_rss_mib: singleMemory,
    };
  }

  if (PHASES.has('bulk')) {
    // Phase 2: bulk. Categories first, then the catalogue file (10% of products name a missing category).
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
    const watch = new MemoryWatch({ api, worker });
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
    const bulkMemory = watch.stop();
    const pendingAtEnd = await pending();
    const processed = bulkStatus.saved + bulkStatus.failed;
    // Unfinished: the slower of the two rates (lines stored, effects applied) decides.
    const linesRate = processed / Math.max(linesDone - uploaded, 0.001);
    const effectsRate = Math.max(bulkStatus.saved - pendingAtEnd, 1) / Math.max(bulkElapsed - uploaded, 0.001);
    const projection = Math.round(uploaded + BULK_LINES / Math.max(Math.min(linesRate, effectsRate), 1));
    results['bulk'] = {
      lines: BULK_LINES,
      upload_s: uploaded,
      status: bulkStatus.status,
      processed_lines: processed,
      lines_done_s: linesDone,
      effects_drained: drained !== null,
      elapsed_s: bulkElapsed,
      lines_per_s: Math.round(processed / Math.max(linesDone - uploaded, 0.001)),
      projected_s_for_all: bulkStatus.status === 'completed' && drained !== null ? bulkElapsed : projection,
      outbox_pending_at_end: pendingAtEnd,
      peak_rss_mib: bulkMemory,
    };

    // Bulk floor: COPY of the same final rows into tables of the same shape.
    await psql(
      `CREATE TABLE IF NOT EXISTS floor_records (LIKE records INCLUDING DEFAULTS INCLUDING INDEXES);
       TRUNCATE floor_records;
       CREATE TABLE floor_links (LIKE links INCLUDING DEFAULTS INCLUDING INDEXES);
       CREATE TABLE floor_audit (LIKE audit_log INCLUDING DEFAULTS INCLUDING INDEXES)`,
    );
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
    const floorBulk = (Date.now() - floorStarted) / 1000;
    (results['bulk'] as Record<string, unknown>)['floor_copy_s'] = floorBulk;
    (results['bulk'] as Record<string, unknown>)['ratio'] = Number(
      ((results['bulk'] as { projected_s_for_all: number }).projected_s_for_all / floorBulk).toFixed(2),
    );
    (results['bulk'] as Record<string, unknown>)['targets'] = { seconds: '< 60', ratio: '<= 2' };
    await rm(file, { force: true });
  }

  if (PHASES.has('reads')) {
    // Phase 3: reads on a 1,000,000-product language. Whatever the bulk phase did not reach is inserted directly,
    // and the worker is stopped first so an unfinished bulk job does not load the machine during the reads.
    worker.kill('SIGTERM');
    await new Promise((resolve) => worker.once('exit', resolve));
    const langKey = (await psql(`SELECT lang_key FROM languages WHERE id = 'bulk' AND deleted_at IS NULL`)).rows[0].lang_key as number;
    const have = Number(
      (await psql(`SELECT count(*) FROM records WHERE lang_key = $1 AND kind = 'product' AND live`, [langKey])).rows[0].count,
    );
    if (have < BULK_LINES) {
      log(`reads: topping up ${BULK_LINES - have} products directly`);
      await psql(
        `INSERT INTO records (lang_key, kind, id, data, stamps, live, created_seq, write_seq, created_at, updated_at, w_live)
         SELECT $1, 'product', 'p' || g, jsonb_build_object('name', 'Product ' || g), '{}', true, 0, 0,
                now() - (g || ' milliseconds')::interval, now(), true
         FROM generate_series(0, $2 - 1) g
         ON CONFLICT DO NOTHING`,
        [langKey, BULK_LINES],
      );
    }
    await psql(`VACUUM ANALYZE records`);
    const watch = new MemoryWatch({ api });
    const reads: Record<string, unknown> = {};
    for (const [name, url, target] of [
      ['page_1', `${base}/api/v2/languages/bulk/products?page=1&per_page=250`, 20],
      ['page_1000', `${base}/api/v2/languages/bulk/products?page=1000&per_page=250`, 100],
      ['sub_listing', `${base}/api/v2/languages/bulk/products/p1/categories`, 20],
    ] as const) {
      const probe = await fetch(url, { headers: auth });
      if (probe.status !== 200) {
        reads[name] = { skipped: `answered ${probe.status}` };
        continue;
      }
      log(`reads: ${name}, ${READ_DURATION_S}s at 8 connections`);
      reads[name] = { ...(await load(url, { connections: 8, duration: READ_DURATION_S, headers: auth })), target_p99_ms: target };
    }
    reads['peak_rss_mib'] = watch.stop();
    results['reads'] = reads;
  }
}

function table() {
  const single = results['single_writes'] as any;
  const bulk = results['bulk'] as any;
  const reads = (results['reads'] ?? {}) as any;
  const rows: string[][] = [['figure', 'service', 'floor', 'ratio', 'target']];
  if (single) {
    rows.push([
      'single writes req/s',
      String(single.service.requests_per_s),
      String(single.floor.requests_per_s),
      String(single.ratio_rps),
      '>= 0.75',
    ]);
    rows.push(['single writes p50 ms', String(single.service.p50_ms), String(single.floor.p50_ms), '', '']);
    rows.push(['single writes p99 ms', String(single.service.p99_ms), String(single.floor.p99_ms), String(single.ratio_p99), '<= 2']);
    rows.push(['worker catch-up s', String(single.drain_s), '', '', '<= 2']);
    rows.push(['peak RSS MiB (writes)', JSON.stringify(single.peak_rss_mib), '', '', '']);
  }
  if (bulk) {
    rows.push([
      `bulk ${bulk.lines} lines s`,
      bulk.status === 'completed' && bulk.effects_drained
        ? `${bulk.elapsed_s} (lines stored at ${bulk.lines_done_s})`
        : `~${bulk.projected_s_for_all} (projected; ${bulk.processed_lines} lines stored, ${bulk.outbox_pending_at_end} effects pending at ${bulk.elapsed_s}s)`,
      String(bulk.floor_copy_s ?? ''),
      String(bulk.ratio ?? ''),
      '< 60 s, <= 2',
    ]);
    rows.push(['bulk lines/s', String(bulk.lines_per_s), '', '', '']);
    rows.push(['peak RSS MiB (bulk)', JSON.stringify(bulk.peak_rss_mib), '', '', '']);
  }
  for (const name of ['page_1', 'page_1000', 'sub_listing']) {
    const read = reads[name];
    if (!read) continue;
    rows.push([
      `v2 ${name} p50/p99 ms`,
      read.skipped ?? `${read.p50_ms} / ${read.p99_ms}`,
      '',
      '',
      read.target_p99_ms ? `p99 <= ${read.target_p99_ms}` : '',
    ]);
  }
  if (reads['peak_rss_mib']) rows.push(['peak RSS MiB (reads)', JSON.stringify(reads['peak_rss_mib']), '', '', '']);
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => (row[column] ?? '').length)));
  return rows.map((row) => row.map((cell, column) => (cell ?? '').padEnd(widths[column]!)).join(' | ')).join('\n');
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
  const admin = new pg.Client({ connectionString: `${POSTGRES}/postgres` });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${databaseName} WITH (FORCE)`);
  await admin.end();
  results['finished_at'] = new Date().toISOString();
  await writeFile(new URL('./results.json', import.meta.url), `${JSON.stringify(results, null, 2)}\n`);
  process.stdout.write(`${table()}\n`);
}
