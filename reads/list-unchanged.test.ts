import { readFile } from 'node:fs/promises';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { POSTGRES_URL } from '../test/support/harness.js';

/*
 * xmin_visible_in_snapshot (reads/sql/list_unchanged.sql): a row's 32-bit
 * xmin widened to its 64-bit id from the current snapshot's xmax, then asked
 * of a kept snapshot. The functions are created in a transaction that is
 * rolled back, so nothing stays behind.
 */

const client = new pg.Client({ connectionString: `${POSTGRES_URL}/postgres` });
const EPOCH = 2 ** 32;
/** The 64-bit id `low` of epoch `epoch`, as text. */
const id = (epoch: number, low: number) => String(BigInt(epoch) * BigInt(EPOCH) + BigInt(low));

beforeAll(async () => {
  await client.connect();
  await client.query('BEGIN');
  await client.query(await readFile(new URL('./sql/list_unchanged.sql', import.meta.url), 'utf8'));
});
afterAll(async () => {
  await client.query('ROLLBACK');
  await client.end();
});

const visible = async (xmin: number, snapshot: string, next: string) =>
  (
    await client.query<{ visible: boolean }>('SELECT xmin_visible_in_snapshot($1::text::xid, $2::pg_snapshot, $3::int8) AS visible', [
      String(xmin),
      snapshot,
      next,
    ])
  ).rows[0]!.visible;

describe('when a row is asked about against a kept snapshot', () => {
  // The kept snapshot: ids below 90 of epoch 5 had ended, 92 was in flight, 95 and later had not begun.
  const kept = `${id(5, 90)}:${id(5, 95)}:${id(5, 92)}`;
  const next = id(5, 200);

  it.each([
    ['committed before the snapshot', 50, true],
    ['committed between its xmin and xmax, not in flight', 93, true],
    ['in flight when the snapshot was taken', 92, false],
    ['begun after the snapshot', 96, false],
    ['frozen', 2, true],
  ])('should say whether a row written by a transaction %s was seen', async (_, xmin, expected) => {
    expect(await visible(xmin, kept, next)).toBe(expected);
  });
});

describe('when transaction ids wrapped into a new epoch since the row was written', () => {
  // Now: id 10 of epoch 5. A row with xmin 4294967290 was written late in epoch 4.
  const next = id(5, 10);
  const late = EPOCH - 6;

  it('should place the row in the epoch before: seen by a snapshot taken after it', async () => {
    expect(await visible(late, `${id(5, 5)}:${id(5, 8)}:`, next)).toBe(true);
  });

  it('should place the row in the epoch before: not seen by a snapshot taken before it', async () => {
    expect(await visible(late, `${id(4, EPOCH - 20)}:${id(4, EPOCH - 10)}:`, next)).toBe(false);
  });
});
