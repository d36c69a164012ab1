import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { POSTGRES_URL } from '../test/support/harness.js';
import { copyEscape, copyInto, copyJson, copyText } from './copy-in.js';
import { createDatabase, type Database } from './db.js';

describe('when values are written as COPY text', () => {
  it('should escape backslash, tab, newline and carriage return, and nothing else', () => {
    expect(copyEscape('a\\b\tc\nd\re "f" é 😀')).toBe('a\\\\b\\tc\\nd\\re "f" é 😀');
    expect(copyText(null)).toBe('\\N');
    expect(copyText('\\N')).toBe('\\\\N');
  });

  it('should write JSON with its backslashes doubled, control characters already escaped by JSON', () => {
    expect(copyJson({ a: 'x\ty\n"q"\\' })).toBe('{"a":"x\\\\ty\\\\n\\\\"q\\\\"\\\\\\\\"}');
    expect(copyJson({ plain: 'text' })).toBe('{"plain":"text"}');
  });
});

describe('when rows are copied through a slonik connection', () => {
  let db: Database;
  const row = z.object({ n: z.number(), label: z.string().nullable(), doc: z.record(z.unknown()) });

  beforeAll(async () => {
    db = await createDatabase(`${POSTGRES_URL}/postgres`, { maximumPoolSize: 1 });
  });
  afterAll(() => db.end());

  const awkward = ['tab\there', 'line\nbreak', 'cr\rhere', 'back\\slash', '\\N', 'quote "q"', 'unicode é 😀', ''];

  it('should store every value exactly, in the transaction, in the order given', async () => {
    const rows = await db.transaction(async (tx) => {
      await tx.query(sql.unsafe`CREATE TEMPORARY TABLE copied (n int8, label text, doc jsonb) ON COMMIT DROP`);
      const text = awkward.map((label, n) => `${n}\t${copyText(label)}\t${copyJson({ label, n })}\n`).join('');
      await copyInto(tx, 'copied', ['n', 'label', 'doc'], `${text}${awkward.length}\t${copyText(null)}\t{}\n`);
      return tx.any(sql.type(row)`SELECT n, label, doc FROM copied ORDER BY ctid`);
    });
    expect(rows).toEqual([...awkward.map((label, n) => ({ n, label, doc: { label, n } })), { n: awkward.length, label: null, doc: {} }]);
  });

  it('should roll back with the transaction', async () => {
    await db.query(sql.unsafe`CREATE TABLE IF NOT EXISTS copy_in_rollback (n int8)`);
    await expect(
      db.transaction(async (tx) => {
        await copyInto(tx, 'copy_in_rollback', ['n'], '1\n2\n');
        throw new Error('changed my mind');
      }),
    ).rejects.toThrow('changed my mind');
    expect(await db.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*) AS n FROM copy_in_rollback`)).toBe(0);
    await db.query(sql.unsafe`DROP TABLE copy_in_rollback`);
  });

  it('should fail with the database error for bad data, and leave the connection usable', async () => {
    await expect(
      db.transaction(async (tx) => {
        await tx.query(sql.unsafe`CREATE TEMPORARY TABLE copied (n int8) ON COMMIT DROP`);
        await copyInto(tx, 'copied', ['n'], 'not a number\n');
      }),
    ).rejects.toThrow(/invalid input syntax for type bigint/);
    // The pool has one connection: it is the one the COPY failed on.
    expect(await db.oneFirst(sql.type(z.object({ one: z.number() }))`SELECT 1::int8 AS one`)).toBe(1);
  });

  it('should fail for a statement Postgres refuses, ignoring the data sent behind it, and leave the connection usable', async () => {
    await expect(db.transaction((tx) => copyInto(tx, 'no_such_table', ['n'], '1\n2\n'))).rejects.toThrow(
      /relation "no_such_table" does not exist/,
    );
    expect(await db.oneFirst(sql.type(z.object({ one: z.number() }))`SELECT 1::int8 AS one`)).toBe(1);
  });

  it('should run copies issued without waiting in the order they were issued, with the queries around them', async () => {
    const rows = await db.transaction(async (tx) => {
      await tx.query(sql.unsafe`CREATE TEMPORARY TABLE copied (n int8) ON COMMIT DROP`);
      const issued = [
        copyInto(tx, 'copied', ['n'], '1\n2\n'),
        tx.query(sql.unsafe`INSERT INTO copied VALUES (3)`),
        copyInto(tx, 'copied', ['n'], '4\n'),
      ];
      await Promise.all(issued);
      return tx.anyFirst(sql.type(z.object({ n: z.number() }))`SELECT n FROM copied ORDER BY ctid`);
    });
    expect(rows).toEqual([1, 2, 3, 4]);
  });

  it('should send a query that only looks like a COPY with data as the query it is', async () => {
    const text = 'COPY x FROM STDIN $1';
    expect(await db.oneFirst(sql.type(z.object({ t: z.string() }))`SELECT ${text}::text AS t`)).toBe(text);
  });
});
