import type { Bench } from '../context.js';
import { log } from '../context.js';
import { CpuWatch, perUnit } from '../cpu.js';

/** A shop's customers, sent whole: profiles are matched (the profile rule, interface §4.5: by id, then by email) before they are written. */
export async function profilesPhase(bench: Bench): Promise<void> {
  const { profileLines: lines, bulkTimeoutS } = bench.config;
  log(`profiles: ${lines} lines`);
  const body = Array.from(
    { length: lines },
    (_, index) =>
      `{"profile":{"id":"c${index}","email":"c${index}@example.test","first_name":"First ${index}","city":"City ${index % 100}"}}\n`,
  ).join('');
  const watch = await CpuWatch.start({ api: bench.api.pid, worker: bench.worker.pid }, bench.databaseUrl);
  const started = Date.now();
  const upload = await fetch(`${bench.base}/api/v1/languages/customers/bulk`, {
    method: 'POST',
    headers: { ...bench.auth, 'content-type': 'application/x-ndjson' },
    body,
  });
  const job = await bench.bulkJob(upload.headers.get('location')!, { status: 'queued', saved: 0, failed: 0 }, bulkTimeoutS, started);
  const drained = job.status === 'completed' ? await bench.drainTime(bulkTimeoutS, 1_000) : null;
  const seconds = (Date.now() - started) / 1000;
  const cost = await watch.stop();
  const processed = job.saved + job.failed;
  bench.record('profiles', {
    lines,
    finished: job.status === 'completed' && drained !== null,
    saved: job.saved,
    seconds,
    lines_per_s: Math.round(processed / Math.max(seconds, 0.001)),
    api_cpu_us_per_line: perUnit(cost.cpu['api'], processed),
    worker_cpu_us_per_line: perUnit(cost.cpu['worker'], processed),
    pg_cpu_us_per_line: perUnit(cost.cpu['postgres'], processed),
  });
}
