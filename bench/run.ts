/**
 * `npm run bench`: measures the service against the machine's own floors, in
 * one run, in a database of its own, and reports both speed and cost: CPU
 * time per unit of work of every process it starts and of the Postgres
 * backends serving the bench database (steadier than rates on a shared
 * machine). Prints a table and writes bench/results.json (flat keys, e.g.
 * `writes.api_cpu_us`). Each phase is a file of its own in bench/phases/.
 */
import { writeFile } from 'node:fs/promises';
import { benchConfig } from './config.js';
import { Bench, log, openBench } from './context.js';
import { bulkPhase } from './phases/bulk.js';
import { feedPhase } from './phases/feed.js';
import { mixedPhase } from './phases/mixed.js';
import { profilesPhase } from './phases/profiles.js';
import { readsPhase } from './phases/reads.js';
import { retentionPhase } from './phases/retention.js';
import { scalePhase } from './phases/scale.js';
import { uploadsPhase } from './phases/uploads.js';
import { webhooksPhase } from './phases/webhooks.js';
import { writesPhase } from './phases/writes.js';
import { latencySvg } from './plot.js';
import { resultsTable } from './table.js';

/**
 * The phases in the order they run: the reads and the feed read what the bulk phase wrote; retention removes it.
 * `scale` runs only when named in BENCH_PHASES (it grows the database by tens of gigabytes).
 */
const PHASES: [string, (bench: Bench) => Promise<void>][] = [
  ['writes', writesPhase],
  ['uploads', uploadsPhase],
  ['bulk', bulkPhase],
  ['profiles', profilesPhase],
  ['reads', readsPhase],
  ['mixed', mixedPhase],
  ['feed', feedPhase],
  ['webhooks', webhooksPhase],
  ['retention', retentionPhase],
  ['scale', scalePhase],
];

const bench = new Bench(benchConfig);
try {
  await openBench(bench);
  for (const [name, phase] of PHASES) if (benchConfig.phases.has(name)) await phase(bench);
} catch (error) {
  bench.results['error'] = String(error);
  log(`failed: ${String(error)}`);
  process.exitCode = 1;
} finally {
  await bench.close();
  bench.results['finished_at'] = new Date().toISOString();
  await writeFile(new URL('./results.json', import.meta.url), `${JSON.stringify(bench.results, null, 2)}\n`);
  const svg = latencySvg(bench.results);
  if (svg) await writeFile(new URL('./latency.svg', import.meta.url), svg);
  process.stdout.write(`${resultsTable(bench.results)}\n`);
}
