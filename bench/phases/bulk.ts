import { createReadStream, createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import type { AppliedBy } from '../../platform/metrics.js';
import { sample } from '../../test/support/metrics.js';
import type { Bench } from '../context.js';
import { log } from '../context.js';
import { CpuWatch, perUnit } from '../cpu.js';
import { copyFloor } from './bulk-floor.js';

/** The catalogue file: products with three categories each, every tenth one's first category missing (a stub). */
export async function writeCatalogue(file: string, lines: number, categories: number): Promise<void> {
  const out = createWriteStream(file);
  for (let index = 0; index < lines; index += 1) {
    const names = [0, 1, 2].map((offset) =>
      index % 10 === 0 && offset === 0 ? `missing-${index}` : `cat-${(index + offset * 7) % categories}`,
    );
    const line = `{"product":{"id":"p${index}","name":"Product ${index}","price":${(index % 1000) / 10},"category_ids":${JSON.stringify(names)}}}\n`;
    if (!out.write(line)) await new Promise<void>((resolve) => out.once('drain', () => resolve()));
  }
  await new Promise<void>((resolve) => out.end(() => resolve()));
}

/** Categories first, in a small file of their own, applied before the catalogue is sent. */
export async function sendCategories(bench: Bench, language = 'bulk'): Promise<void> {
  const body = Array.from(
    { length: bench.config.categories },
    (_, index) => `{"category":{"id":"cat-${index}","name":"Category ${index}"}}`,
  ).join('\n');
  const upload = await fetch(`${bench.base}/api/v1/languages/${language}/bulk`, {
    method: 'POST',
    headers: { ...bench.auth, 'content-type': 'application/x-ndjson' },
    body,
  });
  await bench.bulkJob(upload.headers.get('location')!, { status: 'queued' }, 120);
  await bench.drainTime(60);
}

/**
 * A catalogue file of `lines` lines sent to `language`, counted until its
 * effects are applied (done means the final rows exist: stubs, links and audit
 * entries too), or until `capS`; the CPU of the API, worker and Postgres over it.
 */
export async function measureBulkFile(bench: Bench, language: string, file: string, lines: number, capS: number) {
  const appliedBefore = await bench.workerMetrics();
  const watch = await CpuWatch.start({ api: bench.api.pid, worker: bench.worker.pid }, bench.databaseUrl);
  const started = Date.now();
  const upload = await fetch(`${bench.base}/api/v1/languages/${language}/bulk`, {
    method: 'POST',
    headers: { ...bench.auth, 'content-type': 'application/x-ndjson' },
    body: Readable.toWeb(createReadStream(file)) as unknown as BodyInit,
    duplex: 'half',
  } as RequestInit);
  const uploaded = (Date.now() - started) / 1000;
  const job = await bench.bulkJob(upload.headers.get('location')!, { status: 'queued', saved: 0, failed: 0 }, capS, started);
  const linesDone = (Date.now() - started) / 1000;
  // Polled once a second: counting a million pending changes is itself work.
  const drained = job.status === 'completed' ? await bench.drainTime(Math.max(capS - linesDone, 1), 1_000) : null;
  const elapsed = (Date.now() - started) / 1000;
  const cost = await watch.stop();
  const pendingAtEnd = await bench.pending();
  const appliedAfter = await bench.workerMetrics();
  const appliedDuring = (by: AppliedBy) =>
    (sample(appliedAfter, 'sync_changes_applied_total', { by }) ?? 0) - (sample(appliedBefore, 'sync_changes_applied_total', { by }) ?? 0);
  const processed = job.saved + job.failed;
  // Unfinished: the slower of the two rates (lines stored, effects applied) decides.
  const linesRate = processed / Math.max(linesDone - uploaded, 0.001);
  const effectsRate = Math.max(job.saved - pendingAtEnd, 1) / Math.max(elapsed - uploaded, 0.001);
  const projection = Math.round(uploaded + lines / Math.max(Math.min(linesRate, effectsRate), 1));
  const finished = job.status === 'completed' && drained !== null;
  return {
    seconds: finished ? elapsed : projection,
    projected: !finished,
    uploaded,
    linesStored: job.status === 'completed' ? linesDone : null,
    lag: finished ? Number((elapsed - linesDone).toFixed(1)) : null,
    linesRate,
    pendingAtEnd,
    appliedInTurn: appliedDuring('bulk_in_turn'),
    appliedByApplier: appliedDuring('applier'),
    processed,
    cost,
  };
}

/**
 * A 1,000,000-line catalogue file, counted until its effects are applied, and
 * the floor's COPY of the same final rows.
 */
export async function bulkPhase(bench: Bench): Promise<void> {
  const { bulkLines: lines, bulkTimeoutS } = bench.config;
  const file = path.join(tmpdir(), `bench-${process.pid}.ndjson`);
  await writeCatalogue(file, lines, bench.config.categories);
  await sendCategories(bench);

  log(`bulk: ${lines} lines, capped at ${bulkTimeoutS}s`);
  const run = await measureBulkFile(bench, 'bulk', file, lines, bulkTimeoutS);
  const { cost, processed } = run;
  const floor = await copyFloor(bench);
  bench.record('bulk', {
    lines,
    seconds: run.seconds,
    projected: run.projected,
    floor_seconds: floor.seconds,
    ratio: Number((run.seconds / floor.seconds).toFixed(2)),
    upload_s: run.uploaded,
    lines_stored_s: run.linesStored,
    lag_s: run.lag,
    lines_per_s: Math.round(run.linesRate),
    pending_at_end: run.pendingAtEnd,
    // Who applied the file's changes: its own batches, in turn, or the applier from the outbox (queued).
    changes_applied_in_turn: run.appliedInTurn,
    changes_applied_by_applier: run.appliedByApplier,
    api_cpu_us_per_line: perUnit(cost.cpu['api'], processed),
    worker_cpu_us_per_line: perUnit(cost.cpu['worker'], processed),
    pg_cpu_us_per_line: perUnit(cost.cpu['postgres'], processed),
    floor_pg_cpu_us_per_line: perUnit(floor.cost.cpu['postgres'], lines),
    pg_background_cpu_us_per_line: perUnit(cost.cpu['postgres_background'], processed),
    floor_pg_background_cpu_us_per_line: perUnit(floor.cost.cpu['postgres_background'], lines),
    api_rss_mib: cost.rss['api'],
    worker_rss_mib: cost.rss['worker'],
  });
  await rm(file, { force: true });
}
