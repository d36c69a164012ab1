import type { Bench } from '../context.js';
import { log } from '../context.js';
import { CpuWatch, type PhaseCost, perUnit } from '../cpu.js';
import type { LoadResult } from '../load.js';

/** Single writes a second to the read language while its pages are read (BENCH_MIXED_WRITE_RATE). */
const PRODUCT_BODY = JSON.stringify({ product: { id: '[<id>]', name: 'Written while read', visible: true } });
/** Pages of the cursor walk that the readers take in turn. */
const WALK_PAGES = 200;

/** The pages read while the language is written, with their p99 targets (ms). */
export const MIXED_PAGES = [
  ['page_1', 20],
  ['deep_page', 40],
  ['sub_listing', 20],
  ['cursor_walk', null],
] as const;
type MixedPage = (typeof MIXED_PAGES)[number][0];

/**
 * v2 reads as a deployment serves them: 8 connections read pages of the
 * 1,000,000-product language while another client writes single products to
 * that same language at a steady rate, so pages kept by the API go stale as
 * they would. The writer runs alone first, for as long as each read run, so
 * its CPU can be taken off the reads' figures.
 */
export async function mixedPhase(bench: Bench): Promise<void> {
  await bench.ensureWorker();
  const { base, config } = bench;
  const language = `${base}/api/v2/languages/bulk`;
  const readHeaders = { authorization: bench.auth.authorization };
  const probe = await fetch(`${language}/products?per_page=1`, { headers: readHeaders });
  if (probe.status !== 200) {
    bench.record('reads.mixed', { skipped: `the bulk language answered ${probe.status} (run the bulk phase)` });
    return;
  }
  const urls: Record<MixedPage, { url: string; paths?: string[] }> = {
    page_1: { url: `${language}/products?page=1&per_page=250` },
    deep_page: { url: `${language}/products?page=1000&per_page=250` },
    sub_listing: { url: `${language}/products/p1/categories` },
    cursor_walk: { url: `${language}/products?per_page=250`, paths: await walkPaths(bench, readHeaders) },
  };
  const duration = config.readDurationS;
  const writer = (seconds: number) =>
    bench.loader.run(`${language}/products`, {
      // Enough connections to hold the rate while pages load the machine; autocannon paces them to `rate`.
      connections: 16,
      duration: seconds,
      method: 'PUT',
      body: PRODUCT_BODY,
      headers: bench.auth,
      rate: config.mixedWriteRate,
    });
  log(`reads.mixed: ${duration}s of single writes alone at ${config.mixedWriteRate}/s, to take their cost off the reads'`);
  await writer(config.warmupS);
  const writesAlone = await watched(bench, () => writer(duration));
  bench.record('reads.mixed.writes', {
    rate: config.mixedWriteRate,
    rps: writesAlone.result.rps,
    p99_ms: writesAlone.result.p99_ms,
    non_2xx: writesAlone.result.non_2xx,
  });
  for (const [name, target] of MIXED_PAGES) {
    const { url, paths } = urls[name];
    const load = { connections: 8, headers: readHeaders, paths };
    log(`reads.mixed: ${name}, 8 connections for ${duration}s while ${config.mixedWriteRate} products/s are written`);
    await Promise.all([bench.loader.warmUp(url, load), writer(config.warmupS)]);
    let writes: LoadResult | undefined;
    const reads = await watched(bench, async () => {
      const [read, written] = await Promise.all([bench.loader.run(url, { ...load, duration }), writer(duration)]);
      writes = written;
      return read;
    });
    const readsOnly = (process: 'api' | 'postgres') => Math.max(0, (reads.cost.cpu[process] ?? 0) - (writesAlone.cost.cpu[process] ?? 0));
    bench.record(`reads.mixed.${name}`, {
      rps: reads.result.rps,
      p50_ms: reads.result.p50_ms,
      p99_ms: reads.result.p99_ms,
      target_p99_ms: target,
      non_2xx: reads.result.non_2xx,
      api_cpu_us: perUnit(readsOnly('api'), reads.result.requests),
      pg_cpu_us: perUnit(readsOnly('postgres'), reads.result.requests),
      writes_rps: writes?.rps,
      writes_non_2xx: writes?.non_2xx,
    });
    bench.record(`reads.mixed.${name}.latency_ms`, reads.result.latency);
  }
}

/** A load run under a CPU watch of the API and Postgres. */
async function watched(bench: Bench, run: () => Promise<LoadResult>): Promise<{ result: LoadResult; cost: PhaseCost }> {
  const watch = await CpuWatch.start({ api: bench.api.pid }, bench.databaseUrl);
  const result = await run();
  return { result, cost: await watch.stop() };
}

/** The paths of the first pages of a cursor walk of the language's products, for readers to take in turn. */
async function walkPaths(bench: Bench, headers: Record<string, string>): Promise<string[]> {
  const first = `/api/v2/languages/bulk/products?per_page=250`;
  const paths = [first];
  let cursor: string | null | undefined;
  for (let page = 0; page < WALK_PAGES; page++) {
    const response = await fetch(`${bench.base}${paths.at(-1)}`, { headers });
    const body = (await response.json()) as { meta?: { next_cursor?: string | null } };
    cursor = body.meta?.next_cursor;
    if (!cursor) break;
    paths.push(`${first}&cursor=${encodeURIComponent(cursor)}`);
  }
  return paths;
}
