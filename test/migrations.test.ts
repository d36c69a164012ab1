import { cp, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { MIGRATIONS_DIR, migrate, REPEATABLE_DIRS } from '../platform/migrator.js';
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

/** Every repeatable file, as the migrator names them (relative to the project root). */
async function repeatableFiles(): Promise<string[]> {
  const root = path.dirname(MIGRATIONS_DIR);
  const names = await Promise.all(
    REPEATABLE_DIRS.map(async (directory) =>
      (await readdir(directory))
        .filter((file) => file.endsWith('.sql'))
        .sort()
        .map((file) => path.relative(root, path.join(directory, file))),
    ),
  );
  return names.flat();
}

/** Tables, columns, indexes, constraints, functions and triggers of the public schema, in a stable order. */
async function catalogue(url: string) {
  const [columns, indexes, constraints, functions, triggers] = await Promise.all([
    query(
      url,
      `
      SELECT table_name, column_name, data_type, is_nullable, column_default
      FROM information_schema.columns WHERE table_schema = 'public' ORDER BY 1, 2`,
    ),
    query(url, `SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'public' ORDER BY 1`),
    query(
      url,
      `
      SELECT conrelid::regclass::text AS table_name, conname, pg_get_constraintdef(oid) AS definition
      FROM pg_constraint WHERE connamespace = 'public'::regnamespace ORDER BY 1, 2`,
    ),
    query(
      url,
      `
      SELECT p.proname, pg_get_function_identity_arguments(p.oid) AS arguments, md5(pg_get_functiondef(p.oid)) AS definition
      FROM pg_proc p WHERE p.pronamespace = 'public'::regnamespace ORDER BY 1, 2`,
    ),
    query(url, `SELECT tgname, pg_get_triggerdef(oid) AS definition FROM pg_trigger WHERE NOT tgisinternal ORDER BY 1`),
  ]);
  return { columns, indexes, constraints, functions, triggers };
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
    expect(result).toEqual({ createdDatabase: true, applied: files, repeatables: await repeatableFiles() });
    expect(await recorded(url)).toEqual(files.map((file) => ({ name: file, times: 1 })));
    before = await catalogue(url);
    expect(before.columns.length).toBeGreaterThan(0);
    expect(before.indexes.length).toBeGreaterThan(0);
  });

  it('should apply nothing and leave the schema identical when run again', async () => {
    const result = await migrate(url);
    expect(result).toEqual({ createdDatabase: false, applied: [], repeatables: [] });
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
    expect(settled.map((outcome) => (outcome.status === 'rejected' ? String(outcome.reason) : 'fulfilled'))).toEqual([
      'fulfilled',
      'fulfilled',
    ]);
    const results = settled.map((outcome) => (outcome as PromiseFulfilledResult<Awaited<ReturnType<typeof migrate>>>).value);
    expect(results.filter((result) => result.createdDatabase)).toHaveLength(1);
    expect(results.flatMap((result) => result.applied).sort()).toEqual(files);
    expect(results.flatMap((result) => result.repeatables).sort()).toEqual((await repeatableFiles()).sort());
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

    await expect(migrate(url, { directory })).rejects.toThrow(/0002_bad\.sql/);

    expect(await recorded(url)).toEqual([{ name: '0001_good.sql', times: 1 }]);
    const tables = await query<{ table_name: string }>(
      url,
      `
      SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1`,
    );
    expect(tables.map((row) => row.table_name)).toEqual(['good_table', 'schema_migrations', 'schema_repeatables']);
    expect(await query(url, 'SELECT count(*)::int AS n FROM good_table')).toEqual([{ n: 0 }]);

    // Once the file is fixed, only it is applied.
    await writeFile(path.join(directory, '0002_bad.sql'), 'CREATE TABLE partial_table (id int);\n');
    expect(await migrate(url, { directory })).toEqual({ createdDatabase: false, applied: ['0002_bad.sql'], repeatables: [] });
    expect((await recorded(url)).map((row) => row.name)).toEqual(['0001_good.sql', '0002_bad.sql']);
  });
});

describe('when a database migrated before the functions moved into repeatable files is migrated', () => {
  // test/fixtures holds the migrations as they were: two files numbered 0003, functions inside numbered files.
  const before = path.join(path.dirname(MIGRATIONS_DIR), 'test', 'fixtures', 'migrations-before-repeatables');
  const LAST_FILE_OF_THE_MOVE = '0006_write_path.sql';

  it('should take over the old records, apply no DDL twice and end with the schema of a fresh database', async () => {
    const old = freshDatabase();
    const fresh = freshDatabase();
    const oldFiles = (await readdir(before)).filter((file) => file.endsWith('.sql')).sort();
    expect(oldFiles.filter((file) => file.startsWith('0003_'))).toHaveLength(2);
    await migrateWithOldNames(old.url, before);

    const result = await migrate(old.url);
    const files = (await readdir(MIGRATIONS_DIR)).filter((file) => file.endsWith('.sql')).sort();
    // Migrations written after the move (numbered above the last file of the layout change) are new to it as to any database.
    expect(result.applied).toEqual(files.filter((file) => file > LAST_FILE_OF_THE_MOVE));
    expect(result.repeatables).toEqual(await repeatableFiles());
    expect(await recorded(old.url)).toEqual(files.map((file) => ({ name: file, times: 1 })));

    await migrate(fresh.url);
    expect(await catalogue(old.url)).toEqual(await catalogue(fresh.url));
    expect(await migrate(old.url)).toEqual({ createdDatabase: false, applied: [], repeatables: [] });
  });
});

/** The migrator as it was: it accepted two files with one number, so the old directory is applied file by file. */
async function migrateWithOldNames(url: string, directory: string) {
  await query(`${POSTGRES_URL}/postgres`, `CREATE DATABASE ${pg.escapeIdentifier(new URL(url).pathname.slice(1))}`);
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(
      'CREATE TABLE schema_migrations (name text PRIMARY KEY, checksum text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())',
    );
    for (const file of (await readdir(directory)).filter((name) => name.endsWith('.sql')).sort()) {
      const text = await readFile(path.join(directory, file), 'utf8');
      await client.query(text);
      await client.query("INSERT INTO schema_migrations (name, checksum) VALUES ($1, encode(sha256(convert_to($2, 'UTF8')), 'hex'))", [
        file,
        text,
      ]);
    }
  } finally {
    await client.end();
  }
}

/** A fresh database migrated with a copy of sync/sql/ that the test may edit. */
async function migratedWithOwnSync() {
  const { url } = freshDatabase();
  const directory = await mkdtemp(path.join(os.tmpdir(), 'cs-repeatables-'));
  temporaryDirectories.push(directory);
  const sync = path.join(directory, 'sync');
  await cp(REPEATABLE_DIRS[0]!, sync, { recursive: true });
  const repeatableDirs = [sync, ...REPEATABLE_DIRS.slice(1)];
  await migrate(url, { repeatableDirs });
  return { url, sync, repeatableDirs };
}

describe('when a repeatable function file is edited on a migrated database', () => {
  it('should apply the edited file again and leave the unchanged ones alone', async () => {
    const { url, sync, repeatableDirs } = await migratedWithOwnSync();
    const stamps = async () =>
      new Map(
        (await query<{ name: string; applied_at: Date }>(url, 'SELECT name, applied_at FROM schema_repeatables')).map((row) => [
          row.name,
          row.applied_at.getTime(),
        ]),
      );
    const first = await stamps();

    const file = path.join(sync, 'outbox_batch.sql');
    await writeFile(file, (await readFile(file, 'utf8')).replace('LIMIT p_limit', 'LIMIT p_limit -- edited'));
    const result = await migrate(url, { repeatableDirs });
    expect(result.applied).toEqual([]);
    expect(result.repeatables).toHaveLength(1);
    expect(result.repeatables[0]).toMatch(/outbox_batch\.sql$/);
    const [definition] = await query<{ body: string }>(url, `SELECT prosrc AS body FROM pg_proc WHERE proname = 'outbox_batch'`);
    expect(definition!.body).toContain('-- edited');
    const second = await stamps();
    for (const [name, at] of first) {
      if (name.endsWith('outbox_batch.sql')) expect(second.get(name)).toBeGreaterThan(at);
      else expect(second.get(name)).toBe(at);
    }
    expect((await migrate(url, { repeatableDirs })).repeatables).toEqual([]);
  });
});

describe('when a part that two repeatable files include is edited', () => {
  it('should apply both including files again, with the part in their bodies, and nothing else', async () => {
    const { url, sync, repeatableDirs } = await migratedWithOwnSync();
    const bodies = async () =>
      query<{ name: string; body: string }>(
        url,
        `SELECT proname AS name, prosrc AS body FROM pg_proc WHERE proname IN ('write_record', 'write_records') ORDER BY 1`,
      );
    for (const { body } of await bodies()) {
      expect(body).toContain('ON CONFLICT (lang_key, kind, id) DO UPDATE SET');
      expect(body).not.toContain('include:');
    }

    const part = path.join(sync, 'parts', 'record_merge.sql');
    await writeFile(part, (await readFile(part, 'utf8')).replace('live = true,', 'live = true, -- edited'));
    const result = await migrate(url, { repeatableDirs });
    expect(result.repeatables.map((name) => path.basename(name)).sort()).toEqual(['write_record.sql', 'write_records.sql']);
    const edited = await bodies();
    expect(edited.map((row) => row.name)).toEqual(['write_record', 'write_records']);
    for (const { body } of edited) expect(body).toContain('-- edited');
    expect((await migrate(url, { repeatableDirs })).repeatables).toEqual([]);
  });
});

describe('when two numbered migrations share a number', () => {
  it('should refuse to run and name both files', async () => {
    const { url } = freshDatabase();
    const directory = await mkdtemp(path.join(os.tmpdir(), 'cs-migrations-'));
    temporaryDirectories.push(directory);
    await writeFile(path.join(directory, '0001_a.sql'), 'SELECT 1;\n');
    await writeFile(path.join(directory, '0001_b.sql'), 'SELECT 1;\n');
    await expect(migrate(url, { directory })).rejects.toThrow(/0001_a\.sql and 0001_b\.sql share the number 0001/);
  });
});
