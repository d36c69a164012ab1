import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { encodeFeedCursor } from '../../feed/feed-cursor.js';
import { sample } from '../../test/support/metrics.js';
import { freePort } from '../../test/support/processes.js';
import type { Bench, Figure } from '../context.js';
import { log, sleep, waitFor } from '../context.js';
import { CpuWatch, perUnit } from '../cpu.js';
import { measureBulkFile, sendCategories, writeCatalogue } from './bulk.js';
import { readFeed } from './feed.js';
import { growLanguage, settleGrown } from './scale-grow.js';
import { measureServiceWrites } from './writes.js';

/** The two languages of the bench's account: measured alike, one before and one after it is grown. */
const EMPTY = 'scale-empty';
const GROWN = 'scale-grown';
/** The deep page: 50,000 items in, inside the catalogue file's products in both languages. */
const DEEP_PAGE = 200;
const PER_PAGE = 250;
/** The single writes' connections (their rate is BENCH_SCALE_WRITE_RATE). */
const WRITE_CONNECTIONS = 16;
/**
 * Pages a second, at 4 connections: a steady rate, so their latency is the
 * page's own and not the queue of a load read as fast as the machine answers
 * (which, on a shared machine, is whatever else runs on it).
 */
const PAGE_RATE = 25;
/** How long a deep page may wait for its list's anchors to be read before it is measured anyway. */
const ANCHOR_CAP_S = 120;

/**
 * The figures compared, by group: [group, figure, what it is, which way is better]; `grows`: one scan of the
 * whole list, expected to grow with it (kept to show by how much).
 */
export const SCALE_FIGURES = [
  ['writes', 'api_cpu_us', 'single write API CPU µs', 'less'],
  ['writes', 'pg_cpu_us', 'single write Postgres CPU µs', 'less'],
  ['writes', 'worker_cpu_us', 'single write worker CPU µs', 'less'],
  ['writes', 'p99_ms', 'single write p99 ms', 'less'],
  ['bulk', 'seconds', 'bulk file s', 'less'],
  ['bulk', 'api_cpu_us_per_line', 'bulk API CPU µs per line', 'less'],
  ['bulk', 'worker_cpu_us_per_line', 'bulk worker CPU µs per line', 'less'],
  ['bulk', 'pg_cpu_us_per_line', 'bulk Postgres CPU µs per line', 'less'],
  ['page_1', 'p50_ms', 'v2 page 1 p50 ms', 'less'],
  ['page_1', 'p99_ms', 'v2 page 1 p99 ms', 'less'],
  ['page_1', 'api_cpu_us', 'v2 page 1 API CPU µs', 'less'],
  ['page_1', 'pg_cpu_us', 'v2 page 1 Postgres CPU µs', 'less'],
  ['page_deep', 'anchors_read_s', `v2 page ${DEEP_PAGE}: its list's anchors read s`, 'grows'],
  ['page_deep', 'p50_ms', `v2 page ${DEEP_PAGE} p50 ms`, 'less'],
  ['page_deep', 'p99_ms', `v2 page ${DEEP_PAGE} p99 ms`, 'less'],
  ['page_deep', 'api_cpu_us', `v2 page ${DEEP_PAGE} API CPU µs`, 'less'],
  ['page_deep', 'pg_cpu_us', `v2 page ${DEEP_PAGE} Postgres CPU µs`, 'less'],
  ['feed', 'read_entries_per_s', 'feed entries/s', 'more'],
  ['feed', 'api_cpu_us_per_entry', 'feed API CPU µs per entry', 'less'],
  ['feed', 'pg_cpu_us_per_entry', 'feed Postgres CPU µs per entry', 'less'],
] as const;
/** Each figure of the grown language should be within this factor of the empty one's. */
export const SCALE_TARGET = 1.3;

type Figures = Record<string, Record<string, Figure>>;

const suffixed = (figures: Record<string, Figure>, suffix: string) =>
  Object.fromEntries(Object.entries(figures).map(([figure, value]) => [`${figure}.${suffix}`, value]));

/**
 * Cost as data grows (opt-in: BENCH_PHASES=scale). Two languages of the
 * bench's account are measured alike: single writes at a steady rate, a
 * catalogue file, the first and a deep v2 page read by an API that keeps no
 * pages, and the change feed. The empty one first; then the other is grown
 * to BENCH_SCALE_RECORDS products and the audit log by BENCH_SCALE_AUDIT
 * entries (scale-grow.ts) and measured the same way, its feed read from a
 * cursor in the middle of its grown history. Each figure is recorded for
 * both with their ratio (grown / empty) under `scale.<group>.<figure>`.
 */
export async function scalePhase(bench: Bench): Promise<void> {
  const { config } = bench;
  for (const language of [EMPTY, GROWN]) {
    await fetch(`${bench.base}/api/v1/languages`, {
      method: 'POST',
      headers: bench.auth,
      body: JSON.stringify({ language: { id: language, name: language, code: 'xx' } }),
    });
    await sendCategories(bench, language);
  }
  const file = path.join(tmpdir(), `bench-scale-${process.pid}.ndjson`);
  await writeCatalogue(file, config.scaleBulkLines, config.categories);
  // The pages are read by an API process that keeps none (LIST_PAGE_CACHE_MB=0): each costs its statement.
  const readPort = await freePort();
  const reader = bench.start('bin/api.ts', [], { ...bench.common, PORT: String(readPort), LIST_PAGE_CACHE_MB: '0' });
  const readBase = `http://127.0.0.1:${readPort}`;
  await waitFor(`${readBase}/healthz`);
  try {
    const empty = await measureLanguage(bench, EMPTY, file, { base: readBase, pid: reader.pid }, null);
    // Kept at once: growing takes most of the phase, and a run cut short there still reports the empty figures.
    for (const [group, figures] of Object.entries(empty)) bench.record(`scale.${group}`, suffixed(figures, 'empty'));

    const grown = await growLanguage(bench, GROWN, config.scaleRecords, config.scaleAudit, config.categories);
    const settleS = await settleGrown(bench, grown.langKey);
    const size = await bench.psql(
      `SELECT pg_database_size(current_database()) AS database,
              pg_total_relation_size('records') AS records, pg_total_relation_size('links') AS links,
              (SELECT sum(pg_total_relation_size(inhrelid)) FROM pg_inherits WHERE inhparent = 'audit_log'::regclass) AS audit`,
    );
    const gib = (bytes: string) => Number((Number(bytes) / 2 ** 30).toFixed(1));
    bench.record('scale.grow', {
      records: grown.records,
      links_per_record: grown.linksPerRecord,
      audit_entries: grown.auditEntries,
      seconds: Math.round(grown.seconds),
      settle_s: Math.round(settleS),
      database_gib: gib(size.rows[0].database),
      records_gib: gib(size.rows[0].records),
      links_gib: gib(size.rows[0].links),
      audit_gib: gib(size.rows[0].audit),
    });
    const deepCursor = encodeFeedCursor({
      langKey: grown.langKey,
      seq: grown.firstAuditSeq + Math.floor(grown.auditEntries / 2),
      languageId: GROWN,
    });
    const measured = await measureLanguage(bench, GROWN, file, { base: readBase, pid: reader.pid }, deepCursor);

    for (const [group, figures] of Object.entries(empty)) {
      for (const [figure, value] of Object.entries(figures)) {
        const other = measured[group]?.[figure] ?? null;
        const ratio = typeof value === 'number' && typeof other === 'number' && value > 0 ? Number((other / value).toFixed(2)) : null;
        bench.record(`scale.${group}.${figure}`, { grown: other, ratio });
      }
    }
  } finally {
    reader.kill('SIGTERM');
    await rm(file, { force: true });
  }
}

/** The same figures for one language: writes, the catalogue file, two pages, the feed from `feedCursor`. */
async function measureLanguage(
  bench: Bench,
  language: string,
  file: string,
  reader: { base: string; pid: number | undefined },
  feedCursor: string | null,
): Promise<Figures> {
  const { config } = bench;
  log(`scale: ${language}: single writes, ${config.scaleWriteRate}/s at ${WRITE_CONNECTIONS} connections for ${config.durationS}s`);
  const writes = await measureServiceWrites(bench, { language, connections: WRITE_CONNECTIONS, rate: config.scaleWriteRate });
  const written = writes.result.requests;

  log(`scale: ${language}: a ${config.scaleBulkLines}-line catalogue file`);
  const bulk = await measureBulkFile(bench, language, file, config.scaleBulkLines, config.bulkTimeoutS);

  const figures: Figures = {
    writes: {
      writes: written,
      non_2xx: writes.result.non_2xx,
      p50_ms: writes.result.p50_ms,
      p99_ms: writes.result.p99_ms,
      api_cpu_us: perUnit(writes.cost.cpu['api'], written),
      pg_cpu_us: perUnit(writes.cost.cpu['postgres'], written),
      worker_cpu_us: perUnit(writes.cost.cpu['worker'], written),
      catch_up_s: writes.catchUp,
    },
    bulk: {
      lines: config.scaleBulkLines,
      seconds: bulk.seconds,
      projected: bulk.projected,
      lines_per_s: Math.round(config.scaleBulkLines / Math.max(bulk.seconds, 0.001)),
      api_cpu_us_per_line: perUnit(bulk.cost.cpu['api'], bulk.processed),
      worker_cpu_us_per_line: perUnit(bulk.cost.cpu['worker'], bulk.processed),
      pg_cpu_us_per_line: perUnit(bulk.cost.cpu['postgres'], bulk.processed),
    },
  };
  const live = Number(
    (
      await bench.psql(
        `SELECT count(*) FROM records r JOIN languages l USING (lang_key)
         WHERE l.id = $1 AND l.deleted_at IS NULL AND r.kind = 'product' AND r.live`,
        [language],
      )
    ).rows[0].count,
  );
  for (const [name, page] of [
    ['page_1', 1],
    ['page_deep', DEEP_PAGE],
  ] as const) {
    figures[name] = {
      page,
      ...(await measurePage(bench, reader, `/api/v2/languages/${language}/products?page=${page}&per_page=${PER_PAGE}`, live, page > 1)),
    };
  }
  log(`scale: ${language}: the change feed, ${config.scaleFeedEntries} entries from ${feedCursor ? 'the middle' : 'the start'}`);
  figures['feed'] = await readFeed(bench, language, feedCursor, config.scaleFeedEntries, config.feedTimeoutS);
  return figures;
}

/** One page read at a steady PAGE_RATE, warm, on the API that keeps no pages; its `total` checked against the live products counted. */
async function measurePage(bench: Bench, reader: { base: string; pid: number | undefined }, pagePath: string, live: number, deep: boolean) {
  const { config } = bench;
  const url = `${reader.base}${pagePath}`;
  const headers = { authorization: bench.auth.authorization };
  const deepPages = async (start: 'anchor' | 'walked') =>
    sample(await (await fetch(`${reader.base}/metrics`)).text(), 'sync_list_deep_pages_total', { start }) ?? 0;
  const anchoredBefore = await deepPages('anchor');
  const probed = Date.now();
  const probe = await fetch(url, { headers });
  const body = (await probe.json()) as { data?: unknown[]; meta?: { total?: number } };
  if (probe.status !== 200) throw new Error(`scale: ${pagePath} answered ${probe.status}`);
  // A deep page is read from the list's anchors once this process has read them (reads/list-anchors.ts): one
  // scan of the whole list, which grows with it. Timed apart, and over before the page is measured.
  let anchorsReadS: number | null = null;
  if (deep) {
    while ((await deepPages('anchor')) === anchoredBefore && Date.now() - probed < ANCHOR_CAP_S * 1000) {
      await sleep(200);
      await fetch(url, { headers }).then((response) => response.arrayBuffer());
    }
    anchorsReadS = (Date.now() - probed) / 1000;
  }
  const [anchored, walked] = [await deepPages('anchor'), await deepPages('walked')];
  log(`scale: ${pagePath}, ${config.warmupS}s of warm-up, then ${config.readDurationS}s at ${PAGE_RATE}/s`);
  const load = { connections: 4, rate: PAGE_RATE, headers };
  await bench.loader.warmUp(url, load);
  const watch = await CpuWatch.start({ api: reader.pid }, bench.databaseUrl);
  const result = await bench.loader.run(url, { ...load, duration: config.readDurationS });
  const cost = await watch.stop();
  return {
    ...(deep
      ? {
          anchors_read_s: anchorsReadS,
          pages_from_anchor: (await deepPages('anchor')) - anchored,
          pages_walked: (await deepPages('walked')) - walked,
        }
      : {}),
    total: body.meta?.total ?? null,
    total_is_count: body.meta?.total === live,
    items: body.data?.length ?? null,
    rps: result.rps,
    non_2xx: result.non_2xx,
    p50_ms: result.p50_ms,
    p99_ms: result.p99_ms,
    api_cpu_us: perUnit(cost.cpu['api'], result.requests),
    pg_cpu_us: perUnit(cost.cpu['postgres'], result.requests),
  };
}
