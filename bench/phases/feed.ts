import type { Bench } from '../context.js';
import { log } from '../context.js';
import { CpuWatch, perUnit } from '../cpu.js';
import { quantile } from '../figures.js';

/**
 * The change feed phase: a consumer catching up on the bulk catalogue's whole
 * history (every product's create, links and stubs), reading the language's
 * feed from the start, 1,000 entries a page (the most a page has), following
 * next_cursor. Capped at BENCH_FEED_TIMEOUT_S; the rate is of what was read by then.
 */
export async function feedPhase(bench: Bench): Promise<void> {
  const capS = bench.config.feedTimeoutS;
  log(`feed: the bulk language's changes from the start, 1,000 a page, capped at ${capS}s`);
  const headers = { authorization: bench.auth.authorization };
  const url = (cursor: string | null) =>
    `${bench.base}/api/v2/languages/bulk/changes?limit=1000${cursor ? `&after=${encodeURIComponent(cursor)}` : ''}`;
  const watch = await CpuWatch.start({ api: bench.api.pid }, bench.databaseUrl);
  const times: number[] = [];
  let entries = 0;
  let cursor: string | null = null;
  let complete = false;
  const started = performance.now();
  while (performance.now() - started < capS * 1000) {
    const at = performance.now();
    const response = await fetch(url(cursor), { headers });
    if (response.status !== 200) throw new Error(`feed: answered ${response.status}: ${(await response.text()).slice(0, 200)}`);
    const page = (await response.json()) as { data: unknown[]; meta: { next_cursor: string; has_more: boolean } };
    times.push(performance.now() - at);
    entries += page.data.length;
    cursor = page.meta.next_cursor;
    if (!page.meta.has_more) {
      complete = true;
      break;
    }
  }
  const seconds = (performance.now() - started) / 1000;
  const cost = await watch.stop();
  bench.record('feed', {
    entries,
    pages: times.length,
    complete,
    seconds: Number(seconds.toFixed(2)),
    read_entries_per_s: Math.round(entries / Math.max(seconds, 0.001)),
    page_p50_ms: quantile(times, 0.5),
    page_p99_ms: quantile(times, 0.99),
    api_cpu_us_per_entry: perUnit(cost.cpu['api'], entries),
    pg_cpu_us_per_entry: perUnit(cost.cpu['postgres'], entries),
  });
}
