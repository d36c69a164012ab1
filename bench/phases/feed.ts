import type { Bench } from '../context.js';
import { log } from '../context.js';
import { CpuWatch, perUnit } from '../cpu.js';
import { quantile } from '../figures.js';

/**
 * A consumer reading `language`'s feed, 1,000 entries a page (the most a page
 * has), following next_cursor from `cursor` (null: from the start), until it
 * has read `maxEntries` or the feed has no more, or `capS` have passed; the
 * rate is of what was read by then, with the API's and Postgres' CPU.
 */
export async function readFeed(bench: Bench, language: string, cursor: string | null, maxEntries: number, capS: number) {
  const headers = { authorization: bench.auth.authorization };
  const url = (after: string | null) =>
    `${bench.base}/api/v2/languages/${language}/changes?limit=1000${after ? `&after=${encodeURIComponent(after)}` : ''}`;
  const watch = await CpuWatch.start({ api: bench.api.pid }, bench.databaseUrl);
  const times: number[] = [];
  let entries = 0;
  let after = cursor;
  let complete = false;
  const started = performance.now();
  while (performance.now() - started < capS * 1000 && entries < maxEntries) {
    const at = performance.now();
    const response = await fetch(url(after), { headers });
    if (response.status !== 200) throw new Error(`feed: answered ${response.status}: ${(await response.text()).slice(0, 200)}`);
    const page = (await response.json()) as { data: unknown[]; meta: { next_cursor: string; has_more: boolean } };
    times.push(performance.now() - at);
    entries += page.data.length;
    after = page.meta.next_cursor;
    if (!page.meta.has_more) {
      complete = true;
      break;
    }
  }
  const seconds = (performance.now() - started) / 1000;
  const cost = await watch.stop();
  return {
    entries,
    pages: times.length,
    complete,
    seconds: Number(seconds.toFixed(2)),
    read_entries_per_s: Math.round(entries / Math.max(seconds, 0.001)),
    page_p50_ms: quantile(times, 0.5),
    page_p99_ms: quantile(times, 0.99),
    api_cpu_us_per_entry: perUnit(cost.cpu['api'], entries),
    pg_cpu_us_per_entry: perUnit(cost.cpu['postgres'], entries),
  };
}

/**
 * The change feed phase: a consumer catching up on the bulk catalogue's whole
 * history (every product's create, links and stubs), reading the language's
 * feed from the start. Capped at BENCH_FEED_TIMEOUT_S.
 */
export async function feedPhase(bench: Bench): Promise<void> {
  const capS = bench.config.feedTimeoutS;
  log(`feed: the bulk language's changes from the start, 1,000 a page, capped at ${capS}s`);
  bench.record('feed', await readFeed(bench, 'bulk', null, Number.POSITIVE_INFINITY, capS));
}
