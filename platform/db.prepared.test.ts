import { SchemaValidationError, sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { POSTGRES_URL } from '../test/support/harness.js';
import { copyInto } from './copy-in.js';
import { createDatabase, type Database } from './db.js';

const prepared = z.object({ statement: z.string() });
const answer = z.object({ n: z.number(), at: z.string() });

/** The statements the pool's one connection has prepared that mention `marker`. */
const preparedOf = (db: Database, marker: string) =>
  db.any(
    sql.type(
      prepared,
    )`SELECT statement FROM pg_prepared_statements WHERE statement LIKE ${`%${marker}%`} AND statement NOT LIKE '%pg_prepared_statements%'`,
  );

describe('when a pool prepares its statements', () => {
  let db: Database;
  let plain: Database;

  beforeAll(async () => {
    db = await createDatabase(`${POSTGRES_URL}/postgres`, { maximumPoolSize: 1, prepareStatements: true });
    plain = await createDatabase(`${POSTGRES_URL}/postgres`, { maximumPoolSize: 1 });
  });
  afterAll(async () => {
    await Promise.all([db.end(), plain.end()]);
  });

  it('should prepare a statement once on its connection and answer each run with its own values', async () => {
    const run = (n: number, on: Database) =>
      on.one(sql.type(answer)`SELECT ${n}::int8 AS n, '2026-01-02T03:04:05.678Z'::timestamptz AS at /* marker-one */`);
    for (const n of [1, 2, 3]) expect(await run(n, db)).toEqual({ n, at: '2026-01-02T03:04:05.678Z' });
    expect(await preparedOf(db, 'marker-one')).toHaveLength(1);
    expect(await run(4, plain)).toEqual({ n: 4, at: '2026-01-02T03:04:05.678Z' });
    expect(await preparedOf(plain, 'marker-one')).toHaveLength(0);
  });

  it('should validate rows, map errors and run transactions as any pool does', async () => {
    await expect(db.one(sql.type(z.object({ n: z.string() }))`SELECT 1 AS n /* marker-two */`)).rejects.toBeInstanceOf(
      SchemaValidationError,
    );
    // Twice: a statement Postgres refused to prepare is not taken for prepared the second time.
    for (const _ of [1, 2])
      await expect(db.query(sql.unsafe`SELECT * FROM no_such_table /* marker-two */`)).rejects.toThrow(/no_such_table/);
    const copied = await db.transaction(async (tx) => {
      await tx.query(sql.unsafe`CREATE TEMPORARY TABLE prepared_copy (n int8) ON COMMIT DROP`);
      await copyInto(tx, 'prepared_copy', ['n'], '1\n2\n');
      return tx.oneFirst(sql.type(z.object({ count: z.number() }))`SELECT count(*) FROM prepared_copy`);
    });
    expect(copied).toBe(2);
    // The connection is still usable after the failures, and its statement still prepared.
    expect(await db.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT ${5}::int8 AS n /* marker-two */`)).toBe(5);
  });
});
