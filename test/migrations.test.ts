import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { migrate, MIGRATIONS_DIR } from '../shared/migrator.js';
import { dropDatabase, POSTGRES_URL, uniqueName } from './support/harness.js';

const databases: string[] = [];
const temporaryDirectories: string[] = [];

afterAll(async () => {
  for (const name of databases) await dropDatabase(name);
  for (const directory of temporaryDirectories) await rm(directory, { recursive: true, force: true });
});

/** A database name nobody has created yet, dropped after the file's tests. */
function freshDatabase(): { name: string; url: string } {
  const name = uniqueName('cs_mig');
  databases.push(name);
  return { name, url: `${POSTGRES_URL}/${name}` };
}

async function query<T extends pg.QueryResultRow>(url: string, text: string): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(text)).rows;
  } finally {
    await client.end();
  }
}

/** Tables, columns, indexes and constraints of the public schema, in a stable order. */
async function catalogue(url: string) {
  const [columns, indexes, constraints] = await Promise.all([
    query(url, `
      SELECT table_name, column_name, data_type, is_nullable, column_default
      FROM information_schema.columns WHERE table_schema = 'public' ORDER BY 1, 2`),
    query(url, `SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'public' ORDER BY 1`),
    query(url, `
      SELECT conrelid::regclass::text AS table_name, conname, pg_get_constraintdef(oid) AS definition
      FROM pg_constraint WHERE connamespace = 'public'::regnamespace ORDER BY 1, 2`),
  ]);
  return { columns, indexes, constraints };
}

const recorded = (url: string) =>
  query<{ name: string; times: number }>(url, 'SELECT name, count(*)::int AS times FROM schema_migrations GROUP BY name ORDER BY name');

const databaseExists = async (name: string) =>
  (await query(`${POSTGRES_URL}/postgres`, `SELECT 1 FROM pg_database WHERE datname = '${name}'`)).length === 1;

describe('when migrate runs against a database that does not exist', () => {
  const { name, url } = freshDatabase();
  let files: string[];
  let before: Awaited<ReturnType<typeof catalogue>>;

  it('should create the database and apply every migration in order', async () => {
    files = (await readdir(MIGRATIONS_DIR)).filter((file) => file.endsWith('.sql')).sort();
    expect(files.length).toBeGreaterThan(0);
    expect(await databaseExists(name)).toBe(false);

    const result = await migrate(url);
    expect(result).toEqual({ createdDatabase: true, applied: files });
    expect(await recorded(url)).toEqual(files.map((file) => ({ name: file, times: 1 })));
    before = await catalogue(url);
    expect(before.columns.length).toBeGreaterThan(0);
    expect(before.indexes.length).toBeGreaterThan(0);
  });

  it('should apply nothing and leave the schema identical when run again', async () => {
    const result = await migrate(url);
    expect(result).toEqual({ createdDatabase: false, applied: [] });
    expect(await catalogue(url)).toEqual(before);
    expect(await recorded(url)).toEqual(files.map((file) => ({ name: file, times: 1 })));
  });
});

describe('when two migrate calls race on a database that does not exist', () => {
  // Both callers may see no database and both run CREATE DATABASE; the loser's
  // 23505 (or 42P04) must be taken as "already created".
  it('should let both succeed and record each migration once', async () => {
    const { url } = freshDatabase();
    const files = (await readdir(MIGRATIONS_DIR)).filter((file) => file.endsWith('.sql')).sort();

    const settled = await Promise.allSettled([migrate(url), migrate(url)]);
    expect(settled.map((outcome) => (outcome.status === 'rejected' ? String(outcome.reason) : 'fulfilled'))).toEqual(['fulfilled', 'fulfilled']);
    const results = settled.map((outcome) => (outcome as PromiseFulfilledResult<Awaited<ReturnType<typeof migrate>>>).value);
    expect(results.filter((result) => result.createdDatabase)).toHaveLength(1);
    expect(results.flatMap((result) => result.applied).sort()).toEqual(files);
    expect(await recorded(url)).toEqual(files.map((file) => ({ name: file, times: 1 })));
  });
});

describe('when two migrate calls race on an existing, empty database', () => {
  it('should let both succeed and record each migration once', async () => {
    const { name, url } = freshDatabase();
    await query(`${POSTGRES_URL}/postgres`, `CREATE DATABASE ${pg.escapeIdentifier(name)}`);
    const files = (await readdir(MIGRATIONS_DIR)).filter((file) => file.endsWith('.sql')).sort();

    const results = await Promise.all([migrate(url), migrate(url)]);
    expect(results.map((result) => result.createdDatabase)).toEqual([false, false]);
    expect(results.flatMap((result) => result.applied).sort()).toEqual(files);
    expect(await recorded(url)).toEqual(files.map((file) => ({ name: file, times: 1 })));
  });
});

describe('when a migration in the directory fails', () => {
  it('should reject, roll that migration back entirely and keep the ones before it', async () => {
    const { url } = freshDatabase();
    const directory = await mkdtemp(path.join(os.tmpdir(), 'cs-migrations-'));
    temporaryDirectories.push(directory);
    await writeFile(path.join(directory, '0001_good.sql'), 'CREATE TABLE good_table (id int PRIMARY KEY);\n');
    // Valid statements first, so a partial apply would leave traces.
    await writeFile(
      path.join(directory, '0002_bad.sql'),
      'CREATE TABLE partial_table (id int);\nINSERT INTO good_table VALUES (1);\nTHIS IS NOT SQL;\n',
    );
    await writeFile(path.join(directory, 'README.txt'), 'not a migration\n');

    await expect(migrate(url, directory)).rejects.toThrow(/0002_bad\.sql/);

    expect(await recorded(url)).toEqual([{ name: '0001_good.sql', times: 1 }]);
    const tables = await query<{ table_name: string }>(url, `
      SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1`);
    expect(tables.map((row) => row.table_name)).toEqual(['good_table', 'schema_migrations']);
    expect(await query(url, 'SELECT count(*)::int AS n FROM good_table')).toEqual([{ n: 0 }]);

    // Once the file is fixed, only it is applied.
    await writeFile(path.join(directory, '0002_bad.sql'), 'CREATE TABLE partial_table (id int);\n');
    expect(await migrate(url, directory)).toEqual({ createdDatabase: false, applied: ['0002_bad.sql'] });
    expect((await recorded(url)).map((row) => row.name)).toEqual(['0001_good.sql', '0002_bad.sql']);
  });
});
