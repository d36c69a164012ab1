import { sql } from 'slonik';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { POSTGRES_URL } from '../test/support/harness.js';
import { PreparedReader } from './prepared-read.js';

const reader = new PreparedReader({ connectionString: `${POSTGRES_URL}/postgres`, max: 1, statementTimeoutMs: 5_000 });
afterAll(() => reader.end());

const row = z.object({ n: z.number(), at: z.string(), label: z.string() });
const statement = (n: number, label: string) =>
  sql.type(row)`SELECT ${n}::int8 + 1 AS n, '2026-01-02 03:04:05.678+00'::timestamptz AS at, ${label} || '' AS label`;

describe('when a list statement is read through the prepared reader', () => {
  it('should give the row as the service types it: int8 as a number, timestamps in ISO 8601 UTC', async () => {
    expect(await reader.one(statement(41, 'x'), true)).toEqual({ n: 42, at: '2026-01-02T03:04:05.678Z', label: 'x' });
  });

  it('should prepare each statement text once per connection, with a generic plan reused whatever the values', async () => {
    for (let index = 0; index < 3; index += 1) await reader.one(statement(index, `v${index}`), true);
    const prepared = await reader.one(
      sql.type(z.object({ statements: z.number(), generic: z.number(), custom: z.number() }))`
        SELECT count(*) AS statements, coalesce(sum(generic_plans), 0)::int8 AS generic, coalesce(sum(custom_plans), 0)::int8 AS custom
        FROM pg_prepared_statements WHERE statement LIKE '%AS label%' AND from_sql = false`,
      false,
    );
    expect(prepared).toEqual({ statements: 1, generic: 4, custom: 0 });
  });

  it('should send an unprepared statement unnamed, leaving nothing prepared behind', async () => {
    await reader.one(sql.type(z.object({ one: z.number() }))`SELECT 1::int8 AS one, 'unprepared-marker' AS m`, false);
    const left = await reader.one(
      sql.type(z.object({ n: z.number() }))`SELECT count(*) AS n FROM pg_prepared_statements WHERE statement LIKE '%unprepared-marker%'`,
      false,
    );
    expect(left.n).toBe(0);
  });

  it('should refuse a statement that does not give exactly one row', async () => {
    await expect(reader.one(sql.type(z.object({ n: z.number() }))`SELECT 1::int8 AS n WHERE false`, true)).rejects.toThrow(
      'expected one row, got 0',
    );
  });
});
