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
async function writeCatalogue(file: string, lines: number, categories: number): Promise<void> {
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
async function sendCategories(bench: Bench): Promise<void> {
  const body = Array.from(
    { length: bench.config.categories },
    (_, index) => `{"category":{"id":"cat-${index}","name":"Category ${index}"}}`,
  ).join('\n');
  const upload = await fetch(`${bench.base}/api/v1/languages/bulk/bulk`, {
    method: 'POST',
    headers: { ...bench.auth, 'content-type': 'application/x-ndjson' },
    body,
  });
  await bench.bulkJob(upload.headers.get('location')!, { status: 'queued' }, 120);
  await bench.drainTime(60);
}

/**
 * A 1,000,000-line catalogue file, counted until its effects are applied (done
 * means the final rows exist: stubs, links and audit entries too, as in the
 * floor's COPY of the same rows).
 */
export async function bulkPhase(bench: Bench): Promise<void> {
  const { bulkLines: lines, bulkTimeoutS } = bench.config;
  const file = path.join(tmpdir(), `bench-${process.pid}.ndjson`);
  await writeCatalogue(file, lines, bench.config.categories);
  await sendCategories(bench);

  log(`bulk: ${lines} lines, capped at ${bulkTimeoutS}s`);
  const appliedBefore = await bench.workerMetrics();
  const watch = await CpuWatch.start({ api: bench.api.pid, worker: bench.worker.pid }, bench.databaseUrl);
  const started = Date.now();
  const upload = await fetch(`${bench.base}/api/v1/languages/bulk/bulk`, {
    method: 'POST',
    headers: { ...bench.auth, 'content-type': 'application/x-ndjson' },
    body: Readable.toWeb(createReadStream(file)) as unknown as BodyInit,
    duplex: 'half',
  } as RequestInit);
  const uploaded = (Date.now() - started) / 1000;
  const job = await bench.bulkJob(upload.headers.get('location')!, { status: 'queued', saved: 0, failed: 0 }, bulkTimeoutS, started);
  const linesDone = (Date.now() - started) / 1000;
  // Polled once a second: counting a million pending changes is itself work.
  const drained = job.status === 'completed' ? await bench.drainTime(Math.max(bulkTimeoutS - linesDone, 1), 1_000) : null;
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

  const floor = await copyFloor(bench);
  const seconds = finished ? elapsed : projection;
  bench.record('bulk', {
    lines,
    seconds,
    projected: !finished,
    floor_seconds: floor.seconds,
    ratio: Number((seconds / floor.seconds).toFixed(2)),
    upload_s: uploaded,
    lines_stored_s: job.status === 'completed' ? linesDone : null,
    lag_s: finished ? Number((elapsed - linesDone).toFixed(1)) : null,
    lines_per_s: Math.round(linesRate),
    pending_at_end: pendingAtEnd,
    // Who applied the file's changes: its own batches, in turn, or the applier from the outbox (queued).
    changes_applied_in_turn: appliedDuring('bulk_in_turn'),
    changes_applied_by_applier: appliedDuring('applier'),
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
