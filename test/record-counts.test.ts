import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { startEnvironment, type TestEnvironment } from './support/harness.js';
import { at, openShop, type Shop } from './support/v2-client.js';

/*
 * The live-record counter rows (reads/sql/record_counts.sql): a list's total
 * is their sum, and each says where in the list its change landed (the least
 * created_at it touched), which deep pages' anchors rely on. Folding rows
 * together must keep both.
 */

let env: TestEnvironment;
let shop: Shop;
let langKey: number;

const counterRow = z.object({ delta: z.number(), low_created_at: z.string().nullable(), folded: z.boolean() });

const rows = (key: number, kind: string) =>
  env.db.any(sql.type(counterRow)`
    SELECT delta::int AS delta, to_char(low_created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS low_created_at, folded
    FROM record_count_deltas WHERE lang_key = ${key} AND kind = ${kind}
    ORDER BY folded, low_created_at NULLS FIRST, delta
  `);
const fold = (key: number, kind: string) => env.db.query(sql.unsafe`SELECT record_count_fold(${key}, ${kind})`);

beforeAll(async () => {
  env = await startEnvironment();
  shop = await openShop(env);
  langKey = await env.db.oneFirst(
    sql.type(z.object({ lang_key: z.number() }))`SELECT lang_key FROM languages WHERE id = ${shop.lang} AND deleted_at IS NULL`,
  );
});
afterAll(async () => {
  await env.close();
});

describe('when records are written and their counter rows folded', () => {
  it('should keep the total and the earliest place in the list any of them touched', async () => {
    for (const [id, index] of [
      ['b', 10],
      ['a', 5],
      ['c', 20],
    ] as const)
      await shop.save('product', { id, created_at: at(index) });
    expect((await shop.del('/products/c')).status).toBe(204);
    await env.drain();
    await fold(langKey, 'product');
    // One row, or two if a write folded the rows before (one write in 128 does).
    const folded = await rows(langKey, 'product');
    expect(folded.every((row) => row.folded)).toBe(true);
    expect(folded.reduce((sum, row) => sum + row.delta, 0)).toBe(2);
    expect(folded.map((row) => row.low_created_at).sort()[0]).toBe(at(5));
    expect((await shop.get('/products')).body.meta.total).toBe(2);
  });
});

describe('when counter rows are folded many times', () => {
  // A key of its own, written directly: the rows, not the records, are under test.
  const key = 900_000_001;
  const add = (delta: number, low: string | null, folded = false) =>
    env.db.query(sql.unsafe`
      INSERT INTO record_count_deltas (lang_key, kind, delta, low_created_at, folded)
      VALUES (${key}, 'product', ${delta}, ${low}::timestamptz, ${folded})
    `);

  it("should leave earlier folds' rows alone until there are 64, then fold them all into one with the least time", async () => {
    await add(1_000, at(1), true);
    for (let index = 0; index < 62; index += 1) await add(1, at(100 + index), true);
    await add(1, at(500));
    await add(1, at(400));
    await fold(key, 'product');
    const once = await rows(key, 'product');
    expect(once).toHaveLength(64);
    expect(once.every((row) => row.folded)).toBe(true);
    // The two changes' row: their sum and the earlier of their times, not the earliest of all.
    expect(once).toContainEqual({ delta: 2, low_created_at: at(400), folded: true });

    await add(-1, at(600));
    await fold(key, 'product');
    expect(await rows(key, 'product')).toEqual([{ delta: 1_000 + 62 + 2 - 1, low_created_at: at(1), folded: true }]);
  });

  it('should keep a row for changes that sum to nothing (a record moved), and say "anywhere" for a row without a time', async () => {
    const moved = key + 1;
    await env.db.query(sql.unsafe`
      INSERT INTO record_count_deltas (lang_key, kind, delta, low_created_at) VALUES (${moved}, 'product', 0, ${at(7)}::timestamptz)
    `);
    await fold(moved, 'product');
    expect(await rows(moved, 'product')).toEqual([{ delta: 0, low_created_at: at(7), folded: true }]);

    await env.db.query(sql.unsafe`
      INSERT INTO record_count_deltas (lang_key, kind, delta, low_created_at) VALUES (${moved}, 'product', 3, NULL), (${moved}, 'product', 1, ${at(9)}::timestamptz)
    `);
    await fold(moved, 'product');
    const after = await rows(moved, 'product');
    expect(after).toContainEqual({ delta: 4, low_created_at: null, folded: true });
  });
});
