import { AUDIT_BLOCK_SIZE } from '../../sync/audit-blocks.js';
import type { Bench } from '../context.js';
import { log } from '../context.js';

/** Records a statement inserts: large enough that per-statement work is nothing, small enough to show progress. */
const CHUNK = 500_000;

/** What growing a language gave it. */
export interface Grown {
  langKey: number;
  records: number;
  /** Links per record (product → category), each with an audit entry of its own. */
  linksPerRecord: number;
  auditEntries: number;
  /** The audit seq of the language's first grown entry; its entries are consecutive from there. */
  firstAuditSeq: number;
  seconds: number;
}

/**
 * Gives a language `records` products, each linked to categories of the bench
 * catalogue's (cat-0 ... which must exist in it), and audit entries as the
 * service writes them (a create, then a link entry per category), about
 * `auditEntries` in all, straight into the tables: what years of writes would
 * have left, in minutes.
 *
 * What the service derives from these rows stays true: the live-record totals
 * are kept by records' own insert trigger (reads/sql/record_counts.sql); the
 * write numbers and audit seqs are taken from their sequences first (the
 * sequences are moved past them), so the service's next numbers come after;
 * the audit rows go through the partitioned parent, so each lands in the block
 * its seq belongs to, and all must fall inside the blocks there are. Ids are
 * zero-padded, so every index takes its rows in key order (as a log written
 * over time takes them at its end). One series of entries, not a product's
 * series joined with its entries' (which Postgres may nest either way), keeps
 * a product's entries together on the table's pages, as the applier writes them.
 */
export async function growLanguage(
  bench: Pick<Bench, 'psql'>,
  languageId: string,
  records: number,
  auditEntries: number,
  categories: number,
): Promise<Grown> {
  const language = (await bench.psql(`SELECT lang_key, account_id FROM languages WHERE id = $1 AND deleted_at IS NULL`, [languageId]))
    .rows[0] as { lang_key: string; account_id: string };
  const langKey = Number(language.lang_key);
  const perRecord = Math.max(1, Math.round(auditEntries / records));
  const linksPerRecord = perRecord - 1;
  const audit = records * perRecord;
  // One statement each: nothing else writes while the bench grows a language.
  const reserve = async (sequence: string, count: number) =>
    Number((await bench.psql(`SELECT setval($1, nextval($1) + $2 - 1) - $2 + 1 AS first`, [sequence, count])).rows[0].first);
  const firstWriteSeq = await reserve('write_seq', records);
  const firstAuditSeq = await reserve('audit_log_seq_seq', audit);
  const newest = Number((await bench.psql('SELECT max(k) AS k FROM audit_partitions')).rows[0].k);
  if (firstAuditSeq + audit > (newest + 1) * AUDIT_BLOCK_SIZE)
    throw new Error('scale: the grown audit entries would fall past the newest block');
  const startedAt = new Date(Date.now() - records - 3_600_000).toISOString();
  const id = `'g' || lpad(g::text, 9, '0')`;
  const name = `jsonb_build_object('name', 'Product ' || g, 'price', (g % 1000)::float8 / 10)`;

  log(`scale: growing ${languageId} to ${records} products, ${linksPerRecord} links each, ${audit} audit entries`);
  const started = Date.now();
  const chunks = async (what: string, statement: string, parameters: unknown[]) => {
    for (let low = 0; low < records; low += CHUNK) {
      const high = Math.min(low + CHUNK, records) - 1;
      await bench.psql(statement, [...parameters, low, high]);
      if ((high + 1) % (CHUNK * 4) === 0 || high + 1 === records) log(`scale: ${what} of ${high + 1} products written`);
    }
  };
  const recordsAndLinks = async () => {
    await chunks(
      'records',
      `INSERT INTO records (lang_key, kind, id, data, stamps, live, created_seq, write_seq, created_at, updated_at, w_live)
       SELECT $1, 'product', ${id}, ${name}, jsonb_build_object('name', $2::bigint + g, 'price', $2::bigint + g),
              true, $2::bigint + g, $2::bigint + g, $3::timestamptz + g * interval '1 millisecond',
              $3::timestamptz + g * interval '1 millisecond', true
       FROM generate_series($4::bigint, $5::bigint) g`,
      [langKey, firstWriteSeq, startedAt],
    );
    if (linksPerRecord > 0)
      await chunks(
        'links',
        `INSERT INTO links (lang_key, rel, a, b, seq)
         SELECT $1, 'product_category', ${id}, 'cat-' || ((g + o * 7) % $3), $2::bigint + g
         FROM generate_series($5::bigint * $4, ($6::bigint + 1) * $4 - 1) e, LATERAL (SELECT e / $4 AS g, e % $4 AS o) p`,
        [langKey, firstWriteSeq, categories, linksPerRecord],
      );
  };
  const auditLog = () =>
    chunks(
      'audit entries',
      `INSERT INTO audit_log (seq, at, account_id, lang_key, language_id, kind, record_id, action, actor, request_id, write_seq, changes)
       SELECT $1::bigint + e, $3::timestamptz + g * interval '1 millisecond', $4, $5, $6, 'product', ${id},
              CASE WHEN o = 0 THEN 'create' ELSE 'link' END, CASE WHEN o = 0 THEN 'client' ELSE 'system' END,
              'scale-grow', $7::bigint + g,
              CASE WHEN o = 0 THEN ${name} ELSE jsonb_build_object('category_ids', 'cat-' || ((g + (o - 1) * 7) % $8)) END
       FROM generate_series($9::bigint * $2, ($10::bigint + 1) * $2 - 1) e, LATERAL (SELECT e / $2 AS g, e % $2 AS o) p`,
      [firstAuditSeq, perRecord, startedAt, Number(language.account_id), langKey, languageId, firstWriteSeq, categories],
    );
  // Two connections: the machine's two cores.
  await Promise.all([recordsAndLinks(), auditLog()]);
  return { langKey, records, linksPerRecord, auditEntries: audit, firstAuditSeq, seconds: (Date.now() - started) / 1000 };
}

/**
 * What autovacuum and the checkpointer would have done long since: statistics
 * of the grown tables, their visibility maps (index-only scans of the lists
 * skip the heap) and hint bits set, the counter rows folded, and the dirty
 * pages written, so the grown language is measured as a settled one is.
 */
export async function settleGrown(bench: Pick<Bench, 'psql'>, langKey: number): Promise<number> {
  const started = Date.now();
  log('scale: vacuuming and analysing the grown tables');
  await bench.psql(`SELECT record_count_fold($1, 'product')`, [langKey]);
  await bench.psql('VACUUM (ANALYZE) records, links, audit_log, record_count_deltas');
  await bench.psql('CHECKPOINT');
  return (Date.now() - started) / 1000;
}
