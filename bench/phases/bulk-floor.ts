import type { Bench } from '../context.js';
import { log } from '../context.js';
import { CpuWatch, type PhaseCost } from '../cpu.js';

/**
 * The bulk phase's floor: COPY of the bulk file's final rows (records, links,
 * audit entries) into tables of the same shape as the service's. Dropped once
 * measured: left behind, autovacuum vacuumed their millions of fresh rows
 * during the reads that follow, taking Postgres time from the service's pages.
 */
export async function copyFloor(bench: Bench): Promise<{ seconds: number; cost: PhaseCost }> {
  const { bulkLines: lines, categories } = bench.config;
  await bench.psql(
    `CREATE TABLE IF NOT EXISTS floor_records (LIKE records INCLUDING DEFAULTS INCLUDING INDEXES);
     TRUNCATE floor_records;
     CREATE TABLE floor_links (LIKE links INCLUDING DEFAULTS INCLUDING INDEXES);
     CREATE TABLE floor_audit (LIKE audit_log INCLUDING DEFAULTS INCLUDING INDEXES)`,
  );
  log('bulk: the COPY floor');
  const watch = await CpuWatch.start({}, bench.databaseUrl);
  const started = Date.now();
  const now = new Date().toISOString();
  async function* productRows() {
    for (let index = 0; index < lines; index += 1) {
      yield `2\tproduct\tp${index}\t{"name":"Product ${index}","price":${(index % 1000) / 10}}\t{"name":${index},"price":${index}}\ttrue\t${index}\t${index}\t0\t${now}\t${now}\ttrue\t\\N\n`;
    }
  }
  async function* linkRows() {
    for (let index = 0; index < lines; index += 1) {
      for (const offset of [0, 1, 2]) {
        const category = index % 10 === 0 && offset === 0 ? `missing-${index}` : `cat-${(index + offset * 7) % categories}`;
        yield `2\tproduct_category\tp${index}\t${category}\t${index}\n`;
      }
    }
  }
  async function* auditRows() {
    for (let index = 0; index < lines; index += 1) {
      yield `1\t2\tbulk\tproduct\tp${index}\tcreate\tclient\treq\t${index}\t{}\n`;
      if (index % 10 === 0) yield `1\t2\tbulk\tcategory\tmissing-${index}\tstub\tsystem\treq\t${index}\t{}\n`;
      for (const offset of [0, 1, 2]) yield `1\t2\tbulk\tproduct\tp${index}\tlink\tsystem\treq\t${index}\t{"category_ids":"${offset}"}\n`;
    }
  }
  await bench.copyRows(
    'floor_records',
    'lang_key, kind, id, data, stamps, live, created_seq, write_seq, deleted_seq, created_at, updated_at, w_live, w_ref',
    productRows(),
  );
  await bench.copyRows('floor_links', 'lang_key, rel, a, b, seq', linkRows());
  await bench.copyRows(
    'floor_audit',
    'account_id, lang_key, language_id, kind, record_id, action, actor, request_id, write_seq, changes',
    auditRows(),
  );
  const seconds = (Date.now() - started) / 1000;
  const cost = await watch.stop();
  await bench.psql('DROP TABLE floor_records, floor_links, floor_audit');
  return { seconds, cost };
}
