import { freePort } from '../../test/support/processes.js';
import type { Bench } from '../context.js';
import { log, waitFor } from '../context.js';
import { CpuWatch, perUnit } from '../cpu.js';
import { median, round1 } from '../figures.js';
import { fillCatalogue } from './reads-setup.js';

/** The pages measured, with their p99 targets (ms); `page_1_read` is served by an API that keeps no pages. */
export const READ_PAGES = [
  ['page_1', 20],
  ['page_1000', 100],
  ['sub_listing', 20],
  ['page_1_read', null],
] as const;

/**
 * v2 reads on the 1,000,000-product language, 8 connections each. The worker
 * is stopped first, so an unfinished bulk job does not load the machine
 * during the reads.
 */
export async function readsPhase(bench: Bench): Promise<void> {
  const { base, config } = bench;
  bench.worker.kill('SIGTERM');
  await new Promise((resolve) => bench.worker.once('exit', resolve));
  await fillCatalogue(bench);
  const readAuth = { authorization: bench.auth.authorization };
  const readLoad = { connections: 8, headers: readAuth };
  // The same first page from a second API process that keeps no pages (LIST_PAGE_CACHE_MB=0): what a page
  // costs when its language was written since it was last read. Started now, so it is idle until its turn.
  const freshPort = await freePort();
  const fresh = bench.start('bin/api.ts', [], { ...bench.common, PORT: String(freshPort), LIST_PAGE_CACHE_MB: '0' });
  const freshBase = `http://127.0.0.1:${freshPort}`;
  await waitFor(`${freshBase}/healthz`);
  const urls: Record<(typeof READ_PAGES)[number][0], [string, number | undefined]> = {
    page_1: [`${base}/api/v2/languages/bulk/products?page=1&per_page=250`, bench.api.pid],
    page_1000: [`${base}/api/v2/languages/bulk/products?page=1000&per_page=250`, bench.api.pid],
    sub_listing: [`${base}/api/v2/languages/bulk/products/p1/categories`, bench.api.pid],
    page_1_read: [`${freshBase}/api/v2/languages/bulk/products?page=1&per_page=250`, fresh.pid],
  };
  const pagesBefore = await bench.listPages();
  for (const [name, target] of READ_PAGES) {
    const [url, pid] = urls[name];
    const probe = await fetch(url, { headers: readAuth });
    if (probe.status !== 200) {
      bench.record(`reads.${name}`, { skipped: `answered ${probe.status}` });
      continue;
    }
    log(`reads: ${name}, ${config.warmupS}s of warm-up, then ${config.readDurationS}s at 8 connections`);
    await bench.loader.warmUp(url, readLoad);
    const watch = await CpuWatch.start({ api: pid }, bench.databaseUrl);
    const result = await bench.loader.run(url, { ...readLoad, duration: config.readDurationS });
    const cost = await watch.stop();
    bench.record(`reads.${name}`, {
      warmup_s: config.warmupS,
      rps: result.rps,
      p50_ms: result.p50_ms,
      p99_ms: result.p99_ms,
      target_p99_ms: target,
      non_2xx: result.non_2xx,
      api_cpu_us: perUnit(cost.cpu['api'], result.requests),
      pg_cpu_us: perUnit(cost.cpu['postgres'], result.requests),
      api_rss_mib: cost.rss['api'],
    });
  }
  fresh.kill('SIGTERM');
  // How the service's API answered its pages (reads/list-page-cache.ts): most of the three figures above
  // are pages kept and answered again, as nothing was written to the language during them.
  const pagesAfter = await bench.listPages();
  bench.record('reads.pages', {
    read: pagesAfter.read - pagesBefore.read,
    stale: pagesAfter.stale - pagesBefore.stale,
    reused: pagesAfter.reused - pagesBefore.reused,
  });
  await walkWithCursor(bench, readAuth);
}

/** A whole catalogue paged through with `cursor`: the last pages should cost what the first ones do. */
async function walkWithCursor(bench: Bench, headers: Record<string, string>): Promise<void> {
  const pageUrl = `${bench.base}/api/v2/languages/bulk/products?per_page=250`;
  const first = await fetch(pageUrl, { headers });
  const body = (await first.json()) as { meta?: { next_cursor?: string | null } };
  if (!body.meta || !('next_cursor' in body.meta)) {
    bench.record('reads.cursor', { skipped: 'no next_cursor in meta' });
    return;
  }
  log(`reads: a whole walk with cursor, capped at ${bench.config.walkTimeoutS}s`);
  const times: number[] = [];
  let cursor: string | null | undefined = body.meta.next_cursor;
  const started = Date.now();
  while (cursor && Date.now() - started < bench.config.walkTimeoutS * 1000) {
    const at = performance.now();
    const response = await fetch(`${pageUrl}&cursor=${encodeURIComponent(cursor)}`, { headers });
    const page = (await response.json()) as { meta: { next_cursor: string | null } };
    times.push(performance.now() - at);
    cursor = page.meta.next_cursor;
  }
  bench.record('reads.cursor', {
    pages: times.length + 1,
    complete: !cursor,
    first_p50_ms: round1(median(times.slice(0, 50))),
    last_p50_ms: round1(median(times.slice(-50))),
  });
}
