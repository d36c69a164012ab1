import { CpuWatch, perUnit } from './cpu.js';

/**
 * The change feed phase: a consumer catching up on the catalogue's whole
 * history, reading the language's feed from the start, 1,000 entries a page
 * (the most a page has), following next_cursor. Capped at `capS` seconds; the
 * rate is of what was read by then.
 */
export async function readWholeFeed(options: {
  base: string;
  headers: Record<string, string>;
  language: string;
  capS: number;
  apiPid: number | undefined;
  databaseUrl: string;
}): Promise<Record<string, number | boolean | null>> {
  const url = (cursor: string | null) =>
    `${options.base}/api/v2/languages/${encodeURIComponent(options.language)}/changes?limit=1000${cursor ? `&after=${encodeURIComponent(cursor)}` : ''}`;
  const watch = await CpuWatch.start(options.apiPid === undefined ? {} : { api: options.apiPid }, options.databaseUrl);
  const times: number[] = [];
  let entries = 0;
  let cursor: string | null = null;
  let complete = false;
  const started = performance.now();
  while (performance.now() - started < options.capS * 1000) {
    const at = performance.now();
    const response = await fetch(url(cursor), { headers: options.headers });
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
  const sorted = [...times].sort((a, b) => a - b);
  const at = (fraction: number) =>
    sorted.length === 0 ? null : Number(sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * fraction))]!.toFixed(1));
  return {
    entries,
    pages: times.length,
    complete,
    seconds: Number(seconds.toFixed(2)),
    read_entries_per_s: Math.round(entries / Math.max(seconds, 0.001)),
    page_p50_ms: at(0.5),
    page_p99_ms: at(0.99),
    api_cpu_us_per_entry: perUnit(cost.cpu['api'], entries),
    pg_cpu_us_per_entry: perUnit(cost.cpu['postgres'], entries),
  };
}
