import type { Bench } from '../context.js';
import { log, sleep } from '../context.js';
import { CpuWatch, perUnit } from '../cpu.js';
import { quantile } from '../figures.js';
import { BenchReceiver } from '../receiver.js';
import { measureServiceWrites } from './writes.js';

/**
 * Webhooks, against a local receiver that answers 200 at once: how fast the
 * bulk catalogue's history is delivered, what one active webhook costs the
 * single writes (measured side by side with none), and the lag from a write's
 * 200 to its entry arriving, at a steady rate of single writes.
 */
export async function webhooksPhase(bench: Bench): Promise<void> {
  // Deliveries are the worker's.
  await bench.ensureWorker();
  const receiver = new BenchReceiver();
  const url = await receiver.listen();
  try {
    await deliverCatalogue(bench, receiver, url);
    await writesWithWebhook(bench, receiver, url);
    await lagAtSteadyRate(bench, receiver, url);
  } finally {
    await receiver.close();
  }
}

async function putWebhook(bench: Bench, webhook: Record<string, unknown>): Promise<void> {
  const response = await fetch(`${bench.base}/api/v2/webhooks`, { method: 'PUT', headers: bench.auth, body: JSON.stringify({ webhook }) });
  if (response.status !== 200) throw new Error(`webhooks: PUT answered ${response.status}: ${(await response.text()).slice(0, 200)}`);
}

async function deleteWebhook(bench: Bench, id: string): Promise<void> {
  await fetch(`${bench.base}/api/v2/webhooks/${id}`, { method: 'DELETE', headers: bench.auth });
}

/**
 * The bulk language's whole history sent to one webhook: registered inactive,
 * its position set to the start (a new webhook starts at the present), then
 * enabled and timed until every entry arrived or BENCH_FEED_TIMEOUT_S passed.
 */
async function deliverCatalogue(bench: Bench, receiver: BenchReceiver, url: string): Promise<void> {
  const capS = bench.config.feedTimeoutS;
  const total = Number(
    (await bench.psql(`SELECT count(*) FROM audit_log a JOIN languages l USING (lang_key) WHERE l.id = 'bulk' AND l.deleted_at IS NULL`))
      .rows[0].count,
  );
  if (total === 0) {
    bench.record('feed', { webhook_skipped: 'the bulk language has no history (run the bulk phase)' });
    return;
  }
  const webhook = { id: 'bench-catalogue', url, languages: ['bulk'], events: ['changes'] };
  await putWebhook(bench, { ...webhook, active: false });
  await bench.psql(`UPDATE webhook_positions SET after_seq = 0 WHERE webhook_id = 'bench-catalogue'`);
  log(`webhooks: the bulk language's ${total} entries delivered to a local receiver, capped at ${capS}s`);
  const watch = await CpuWatch.start({ api: bench.api.pid, worker: bench.worker.pid }, bench.databaseUrl);
  const started = performance.now();
  const before = receiver.entries;
  await putWebhook(bench, { ...webhook, active: true });
  while (receiver.entries - before < total && performance.now() - started < capS * 1000) await sleep(50);
  const seconds = (performance.now() - started) / 1000;
  const cost = await watch.stop();
  const delivered = receiver.entries - before;
  await deleteWebhook(bench, webhook.id);
  bench.record('feed', {
    webhook_entries: delivered,
    webhook_complete: delivered >= total,
    webhook_seconds: Number(seconds.toFixed(2)),
    webhook_entries_per_s: Math.round(delivered / Math.max(seconds, 0.001)),
    webhook_worker_cpu_us_per_entry: perUnit(cost.cpu['worker'], delivered),
    webhook_pg_cpu_us_per_entry: perUnit(cost.cpu['postgres'], delivered),
  });
}

/**
 * Single writes with no webhook, with one active webhook on their language,
 * and without again, back to back: the two runs without are averaged, so
 * what drifts over the phase (the table growing, the machine's other load)
 * weighs on both sides alike.
 */
async function writesWithWebhook(bench: Bench, receiver: BenchReceiver, url: string): Promise<void> {
  log(`webhooks: single writes without, with, and without one active webhook (${bench.config.durationS}s each)`);
  const before = await measureServiceWrites(bench);
  await putWebhook(bench, { id: 'bench-writes', url, languages: ['bench'], events: ['changes'] });
  const sent = { deliveries: receiver.deliveries, entries: receiver.entries };
  const withWebhook = await measureServiceWrites(bench);
  await deleteWebhook(bench, 'bench-writes');
  const deliveries = receiver.deliveries - sent.deliveries;
  const entries = receiver.entries - sent.entries;
  const after = await measureServiceWrites(bench);
  const without = {
    rps: (before.result.rps + after.result.rps) / 2,
    requests: before.result.requests + after.result.requests,
    api: (before.cost.cpu['api'] ?? 0) + (after.cost.cpu['api'] ?? 0),
    worker: (before.cost.cpu['worker'] ?? 0) + (after.cost.cpu['worker'] ?? 0),
    postgres: (before.cost.cpu['postgres'] ?? 0) + (after.cost.cpu['postgres'] ?? 0),
  };
  bench.record('webhooks', {
    writes_rps_without: Math.round(without.rps),
    writes_rps_with: withWebhook.result.rps,
    writes_rps_ratio: Number((withWebhook.result.rps / Math.max(without.rps, 1)).toFixed(2)),
    api_cpu_us_without: perUnit(without.api, without.requests),
    api_cpu_us_with: perUnit(withWebhook.cost.cpu['api'], withWebhook.result.requests),
    worker_cpu_us_per_write_without: perUnit(without.worker, without.requests),
    worker_cpu_us_per_write_with: perUnit(withWebhook.cost.cpu['worker'], withWebhook.result.requests),
    pg_cpu_us_per_write_without: perUnit(without.postgres, without.requests),
    pg_cpu_us_per_write_with: perUnit(withWebhook.cost.cpu['postgres'], withWebhook.result.requests),
    // Deliveries (and their entries) that arrived while the writes ran and caught up, warm-up included.
    deliveries_with: deliveries,
    entries_per_delivery_with: Number((entries / Math.max(deliveries, 1)).toFixed(1)),
  });
}

/**
 * New products written one by one at a steady rate (BENCH_WEBHOOK_LAG_RATE a
 * second) for BENCH_DURATION_S; each one's lag is from its write's 200 to its
 * `create` entry arriving at the receiver.
 */
async function lagAtSteadyRate(bench: Bench, receiver: BenchReceiver, url: string): Promise<void> {
  const rate = bench.config.webhookLagRate;
  const count = rate * bench.config.durationS;
  await putWebhook(bench, { id: 'bench-lag', url, languages: ['bench'], events: ['changes'] });
  receiver.watch('create');
  log(`webhooks: lag at ${rate} single writes a second, ${count} writes`);
  const answered = new Map<string, number>();
  let failed = 0;
  const writes: Promise<void>[] = [];
  const started = performance.now();
  for (let index = 0; index < count; index += 1) {
    const wait = started + (index * 1000) / rate - performance.now();
    if (wait > 1) await sleep(wait);
    const id = `lag-${process.pid}-${index}`;
    writes.push(
      fetch(`${bench.base}/api/v1/languages/bench/products`, {
        method: 'POST',
        headers: bench.auth,
        body: JSON.stringify({ product: { id, name: 'Lag product' } }),
      }).then(
        async (response) => {
          await response.arrayBuffer();
          if (response.status === 200) answered.set(id, performance.now());
          else failed += 1;
        },
        () => {
          failed += 1;
        },
      ),
    );
  }
  await Promise.all(writes);
  const sentS = (performance.now() - started) / 1000;
  const deadline = performance.now() + 30_000;
  while ([...answered.keys()].some((id) => !receiver.arrivals.has(id)) && performance.now() < deadline) await sleep(100);
  const lags = [...answered].flatMap(([id, at]) => {
    const arrived = receiver.arrivals.get(id);
    return arrived === undefined ? [] : [arrived - at];
  });
  await deleteWebhook(bench, 'bench-lag');
  bench.record('feed', {
    webhook_lag_writes_per_s: Math.round(answered.size / Math.max(sentS, 0.001)),
    webhook_lag_writes_failed: failed,
    webhook_lag_missing: answered.size - lags.length,
    webhook_lag_p50_ms: quantile(lags, 0.5),
    webhook_lag_p99_ms: quantile(lags, 0.99),
  });
}
