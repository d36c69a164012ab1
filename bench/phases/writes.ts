import { freePort } from '../../test/support/processes.js';
import type { Bench } from '../context.js';
import { log, waitFor } from '../context.js';
import { CpuWatch, perUnit } from '../cpu.js';
import { perCall } from '../figures.js';

/** The single write every write load sends: a product naming three categories. */
export const SINGLE_WRITE_BODY = JSON.stringify({
  product: { id: '[<id>]', name: 'Bench product', price: 9.99, category_ids: ['c1', 'c2', 'c3'] },
});

/** Which language a write load writes to, and how: as fast as it is answered at 32 connections by default, or at a steady rate. */
export interface WriteLoad {
  language?: string;
  connections?: number;
  /** Requests a second across all connections. */
  rate?: number;
}

/**
 * The service's single writes, measured warm, with the CPU of the API, worker
 * and Postgres; the warm-up's changes are applied before the measured run, so
 * its cost and catch-up are its own.
 */
export async function measureServiceWrites(bench: Bench, { language = 'bench', connections = 32, rate }: WriteLoad = {}) {
  const serviceUrl = `${bench.base}/api/v1/languages/${language}/products`;
  const serviceLoad = { connections, method: 'POST' as const, body: SINGLE_WRITE_BODY, headers: bench.auth, ...(rate ? { rate } : {}) };
  await bench.loader.warmUp(serviceUrl, serviceLoad);
  await bench.drainTime(120);
  const statementsBefore = await bench.writeStatements();
  const watch = await CpuWatch.start({ api: bench.api.pid, worker: bench.worker.pid }, bench.databaseUrl);
  const result = await bench.loader.run(serviceUrl, { ...serviceLoad, duration: bench.config.durationS });
  const statementsAfter = await bench.writeStatements();
  const backlog = await bench.pending();
  const catchUp = await bench.drainTime(120);
  const cost = await watch.stop();
  const statements = Math.max(statementsAfter.statements - statementsBefore.statements, 1);
  return { result, cost, backlog, catchUp, writesPerStatement: (statementsAfter.writes - statementsBefore.writes) / statements };
}

/** Single writes, against a bare `node:http` + `pg` upsert first, so our worker's catch-up does not overlap it. */
export async function writesPhase(bench: Bench): Promise<void> {
  const { durationS, warmupS } = bench.config;
  await bench.psql('CREATE TABLE floor_records (LIKE records INCLUDING DEFAULTS INCLUDING INDEXES)');
  const floorPort = await freePort();
  const floor = bench.start('bench/floor-server.ts', [String(floorPort), bench.databaseUrl], {});
  const floorUrl = `http://127.0.0.1:${floorPort}/`;
  await waitFor(floorUrl);
  const floorLoad = { connections: 32, method: 'POST' as const, body: SINGLE_WRITE_BODY, headers: { 'content-type': 'application/json' } };
  log(`single writes: floor, ${warmupS}s of warm-up, then ${durationS}s at 32 connections`);
  await bench.loader.warmUp(floorUrl, floorLoad);
  const floorWatch = await CpuWatch.start({ floor: floor.pid }, bench.databaseUrl);
  const floorResult = await bench.loader.run(floorUrl, { ...floorLoad, duration: durationS });
  const floorCost = await floorWatch.stop();
  floor.kill('SIGTERM');

  log(`single writes: service, ${warmupS}s of warm-up, then ${durationS}s at 32 connections`);
  const { result: ours, cost, backlog, catchUp, writesPerStatement } = await measureServiceWrites(bench);
  bench.record('writes', {
    warmup_s: warmupS,
    rps: ours.rps,
    floor_rps: floorResult.rps,
    rps_ratio: Number((ours.rps / floorResult.rps).toFixed(2)),
    p50_ms: ours.p50_ms,
    floor_p50_ms: floorResult.p50_ms,
    p99_ms: ours.p99_ms,
    floor_p99_ms: floorResult.p99_ms,
    p99_ratio: Number((ours.p99_ms / Math.max(floorResult.p99_ms, 1)).toFixed(2)),
    non_2xx: ours.non_2xx,
    writes_per_statement: Number(writesPerStatement.toFixed(2)),
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
  bench.record('writes.latency_ms', ours.latency);
  bench.record('writes.floor_latency_ms', floorResult.latency);
}
