import type { Bench } from '../context.js';
import { log } from '../context.js';

/**
 * Makes the bulk language hold the whole catalogue for the reads: whatever the
 * bulk phase did not reach is inserted directly, shaped as the bulk file's
 * products (a name and a price; three categories, every tenth product's first
 * one a stub), so a page costs what it costs after the bulk phase (bare
 * products would cost about half). Then what the reads touch is vacuumed as
 * autovacuum would soon after a load (its visibility map lets index-only scans
 * of the links skip the table), so the reads measure reads, not an autovacuum
 * catching up under them.
 */
export async function fillCatalogue(bench: Bench): Promise<void> {
  const { bulkLines: lines, categories } = bench.config;
  const langKey = (await bench.psql(`SELECT lang_key FROM languages WHERE id = 'bulk' AND deleted_at IS NULL`)).rows[0].lang_key as number;
  const have = Number(
    (await bench.psql(`SELECT count(*) FROM records WHERE lang_key = $1 AND kind = 'product' AND live`, [langKey])).rows[0].count,
  );
  if (have < lines) {
    log(`reads: topping up ${lines - have} products directly, shaped as the bulk file's`);
    const insertRecords = (kind: string, rows: string, parameters: unknown[]) =>
      bench.psql(
        `INSERT INTO records (lang_key, kind, id, data, stamps, live, created_seq, write_seq, created_at, updated_at, w_live)
         SELECT $1, '${kind}', r.id, r.data, '{}', true, 0, 0, r.created_at, now(), true
         FROM (${rows}) r
         ON CONFLICT DO NOTHING`,
        [langKey, ...parameters],
      );
    await insertRecords(
      'category',
      `SELECT 'cat-' || g AS id, jsonb_build_object('name', 'Category ' || g) AS data, now() AS created_at
       FROM generate_series(0, $3 - 1) g
       UNION ALL
       SELECT 'missing-' || g, '{}', now() FROM generate_series(0, $2 - 1, 10) g`,
      [lines, categories],
    );
    await insertRecords(
      'product',
      `SELECT 'p' || g AS id, jsonb_build_object('name', 'Product ' || g, 'price', (g % 1000)::float8 / 10) AS data,
              now() - (g || ' milliseconds')::interval AS created_at
       FROM generate_series(0, $2 - 1) g`,
      [lines],
    );
    await bench.psql(
      `INSERT INTO links (lang_key, rel, a, b, seq)
       SELECT $1, 'product_category', 'p' || g,
              CASE WHEN g % 10 = 0 AND o = 0 THEN 'missing-' || g ELSE 'cat-' || ((g + o * 7) % $3) END, 0
       FROM generate_series(0, $2 - 1) g, generate_series(0, 2) o
       ON CONFLICT DO NOTHING`,
      [langKey, lines, categories],
    );
  }
  await bench.psql('VACUUM ANALYZE records, links');
}
