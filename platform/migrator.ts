import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';

const ROOT = fileURLToPath(new URL('../', import.meta.url));

/** Numbered migrations: DDL, applied once each, in number order. */
export const MIGRATIONS_DIR = path.join(ROOT, 'migrations');

/**
 * Repeatable files: the current definition of every SQL function and trigger
 * (`CREATE OR REPLACE`), kept beside the code that calls them and applied
 * again whenever a file's checksum changes.
 */
export const REPEATABLE_DIRS = [path.join(ROOT, 'sync', 'sql'), path.join(ROOT, 'reads', 'sql'), path.join(ROOT, 'feed', 'sql')];

export interface MigrationOptions {
  /** Numbered migrations (default: migrations/). */
  directory?: string;
  /** Repeatable definitions (default: REPEATABLE_DIRS). */
  repeatableDirs?: string[];
}

export interface MigrationResult {
  createdDatabase: boolean;
  /** Numbered migrations applied now. */
  applied: string[];
  /** Repeatable files (re)applied now, relative to the project root. */
  repeatables: string[];
}

const NUMBERED = /^(\d{4})_[a-z0-9_]+\.sql$/;

/**
 * `-- supersedes: OLD_NAME sha256:CHECKSUM` at the top of a numbered
 * migration: the file replaces one that a database may have applied under
 * another name or content (a renumbering, or functions moved out into
 * repeatable files), so that database takes the record of the old file as
 * the record of this one instead of applying it again.
 */
const SUPERSEDES = /^--\s*supersedes:\s*(\S+)\s+sha256:([0-9a-f]{64})\s*$/gm;

const checksumOf = (text: string) => createHash('sha256').update(text).digest('hex');

interface SqlFile {
  name: string;
  text: string;
  checksum: string;
}

async function readSqlFiles(directory: string, nameOf: (file: string) => string): Promise<SqlFile[]> {
  const files = (await readdir(directory)).filter((file) => file.endsWith('.sql')).sort();
  return Promise.all(
    files.map(async (file) => {
      const text = await readFile(path.join(directory, file), 'utf8');
      return { name: nameOf(file), text, checksum: checksumOf(text) };
    }),
  );
}

/**
 * `-- include: parts/NAME.sql` on a line of its own in a repeatable file: the
 * line is replaced by that file (relative to the including file's folder), so
 * a piece of SQL that two functions must share exactly is written once and
 * still costs nothing when called (a function call or array would). The
 * checksum is the expanded text's, so a change to a part re-applies every
 * file that includes it. Numbered migrations never include: they must not change.
 */
const INCLUDE = /^[ \t]*--\s*include:\s*(\S+\.sql)\s*$/gm;

async function expandIncludes(directory: string, text: string): Promise<string> {
  const parts = new Map<string, string>();
  for (const [, part] of text.matchAll(INCLUDE)) {
    if (!parts.has(part!)) parts.set(part!, (await readFile(path.join(directory, part!), 'utf8')).trimEnd());
  }
  return text.replace(INCLUDE, (_line, part: string) => parts.get(part)!);
}

/** The repeatable files of a directory, includes expanded, named relative to the project root. */
async function readRepeatables(directory: string): Promise<SqlFile[]> {
  const files = await readSqlFiles(directory, (file) => path.relative(ROOT, path.join(directory, file)));
  return Promise.all(
    files.map(async (file) => {
      const text = await expandIncludes(directory, file.text);
      return { name: file.name, text, checksum: checksumOf(text) };
    }),
  );
}

/** The numbered migrations of a directory, refusing names that would make their order ambiguous. */
async function readNumbered(directory: string): Promise<SqlFile[]> {
  const files = await readSqlFiles(directory, (file) => file);
  const numbers = new Map<string, string>();
  for (const { name } of files) {
    const number = NUMBERED.exec(name)?.[1];
    if (!number) throw new Error(`Migration ${name} must be named NNNN_words.sql`);
    const other = numbers.get(number);
    if (other) throw new Error(`Migrations ${other} and ${name} share the number ${number}`);
    numbers.set(number, name);
  }
  return files;
}

/**
 * Creates the database when it is missing, then applies every numbered
 * migration not applied yet, each in its own transaction and recorded in
 * `schema_migrations`, and then, in one transaction, every repeatable file
 * whose checksum differs from the one recorded in `schema_repeatables`.
 * Safe to run from several processes at once: an advisory lock makes them
 * take turns. Uses `pg` directly because the files hold several statements,
 * which only the simple query protocol accepts.
 * @throws if a migration fails (it is rolled back) or an applied numbered file was edited.
 */
export async function migrate(databaseUrl: string, options: MigrationOptions = {}): Promise<MigrationResult> {
  const createdDatabase = await ensureDatabase(databaseUrl);
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query(`SELECT pg_advisory_lock(hashtext('commerce-sync:migrations'))`);
    await client.query(`
      CREATE TABLE IF NOT EXISTS schema_migrations (
        name       text PRIMARY KEY,
        checksum   text NOT NULL,
        applied_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE TABLE IF NOT EXISTS schema_repeatables (
        name       text PRIMARY KEY,
        checksum   text NOT NULL,
        applied_at timestamptz NOT NULL DEFAULT now()
      )`);
    const applied = await applyNumbered(client, await readNumbered(options.directory ?? MIGRATIONS_DIR));
    const repeatables = await applyRepeatables(client, options.repeatableDirs ?? (options.directory ? [] : REPEATABLE_DIRS));
    return { createdDatabase, applied, repeatables };
  } finally {
    await client.query(`SELECT pg_advisory_unlock(hashtext('commerce-sync:migrations'))`).catch(() => undefined);
    await client.end();
  }
}

/** One line on what `migrate` did to the database named `name`, for the log of a command that migrates on start. */
export function describeMigration(name: string, result: MigrationResult): string {
  const count = `${result.applied.length} ${result.applied.length === 1 ? 'migration' : 'migrations'}`;
  if (result.createdDatabase) return `created database "${name}" and applied ${count}`;
  if (result.applied.length > 0) return `migrated database "${name}": applied ${count} (${result.applied.join(', ')})`;
  return `database "${name}" is up to date: no migration pending`;
}

/**
 * What `migrate` would apply to this database (numbered files not applied,
 * repeatable files changed), without changing anything: how a process that
 * must not migrate (the API, a worker, the client CLI) knows the schema is
 * not there yet. The database must exist.
 */
export async function pendingMigrations(databaseUrl: string, options: MigrationOptions = {}): Promise<string[]> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const tables = await client.query<{ migrations: string | null; repeatables: string | null }>(
      `SELECT to_regclass('schema_migrations')::text AS migrations, to_regclass('schema_repeatables')::text AS repeatables`,
    );
    const exists = tables.rows[0]!;
    const done = exists.migrations ? await recorded(client, 'schema_migrations') : new Map<string, string>();
    const doneRepeatables = exists.repeatables ? await recorded(client, 'schema_repeatables') : new Map<string, string>();
    const numbered = (await readNumbered(options.directory ?? MIGRATIONS_DIR))
      .filter((file) => !done.has(file.name))
      .map((file) => file.name);
    const directories = options.repeatableDirs ?? (options.directory ? [] : REPEATABLE_DIRS);
    const repeatables = (await Promise.all(directories.map(readRepeatables)))
      .flat()
      .filter((file) => doneRepeatables.get(file.name) !== file.checksum)
      .map((file) => file.name);
    return [...numbered, ...repeatables];
  } finally {
    await client.end();
  }
}

async function recorded(client: pg.Client, table: 'schema_migrations' | 'schema_repeatables'): Promise<Map<string, string>> {
  const rows = (await client.query<{ name: string; checksum: string }>(`SELECT name, checksum FROM ${table}`)).rows;
  return new Map(rows.map((row) => [row.name, row.checksum]));
}

async function inTransaction(client: pg.Client, work: () => Promise<void>): Promise<void> {
  await client.query('BEGIN');
  try {
    await work();
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK');
    throw error;
  }
}

async function applyNumbered(client: pg.Client, files: SqlFile[]): Promise<string[]> {
  let done = await recorded(client, 'schema_migrations');
  // A file that supersedes one this database applied takes over its record.
  for (const file of files) {
    if (done.has(file.name)) continue;
    for (const [, oldName, oldChecksum] of file.text.matchAll(SUPERSEDES)) {
      if (done.get(oldName!) !== oldChecksum) continue;
      await client.query('UPDATE schema_migrations SET name = $2, checksum = $3 WHERE name = $1', [oldName, file.name, file.checksum]);
    }
  }
  done = await recorded(client, 'schema_migrations');
  const applied: string[] = [];
  for (const file of files) {
    const previous = done.get(file.name);
    if (previous !== undefined) {
      if (previous !== file.checksum) throw new Error(`Migration ${file.name} was changed after it was applied`);
      continue;
    }
    try {
      await inTransaction(client, async () => {
        await client.query(file.text);
        await client.query('INSERT INTO schema_migrations (name, checksum) VALUES ($1, $2)', [file.name, file.checksum]);
      });
    } catch (error) {
      throw new Error(`Migration ${file.name} failed: ${(error as Error).message}`);
    }
    applied.push(file.name);
  }
  return applied;
}

async function applyRepeatables(client: pg.Client, directories: string[]): Promise<string[]> {
  const files = (await Promise.all(directories.map(readRepeatables))).flat();
  const done = await recorded(client, 'schema_repeatables');
  const changed = files.filter((file) => done.get(file.name) !== file.checksum);
  if (changed.length === 0) return [];
  await inTransaction(client, async () => {
    // Bodies are checked when called, so files may refer to each other in any order.
    await client.query('SET LOCAL check_function_bodies = off');
    for (const file of changed) {
      try {
        await client.query(file.text);
      } catch (error) {
        throw new Error(`Repeatable ${file.name} failed: ${(error as Error).message}`);
      }
      await client.query(
        `INSERT INTO schema_repeatables (name, checksum) VALUES ($1, $2)
         ON CONFLICT (name) DO UPDATE SET checksum = excluded.checksum, applied_at = now()`,
        [file.name, file.checksum],
      );
    }
  });
  return changed.map((file) => file.name);
}

/**
 * Drops the database of `databaseUrl` (cutting its connections) so that
 * `migrate` creates it afresh: for development databases only (`npm run reset`).
 */
export async function dropDatabaseOf(databaseUrl: string): Promise<void> {
  const { name, client } = await maintenanceOf(databaseUrl);
  try {
    await client.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`);
  } finally {
    await client.end();
  }
}

/**
 * The name of the database of `databaseUrl`, and a connection to the server's
 * `postgres` database, from which that one can be created or dropped.
 */
async function maintenanceOf(databaseUrl: string): Promise<{ name: string; client: pg.Client }> {
  const name = decodeURIComponent(new URL(databaseUrl).pathname.replace(/^\//, ''));
  if (!name) throw new Error('DATABASE_URL names no database');
  const maintenance = new URL(databaseUrl);
  maintenance.pathname = '/postgres';
  const client = new pg.Client({ connectionString: maintenance.toString() });
  await client.connect();
  return { name, client };
}

async function ensureDatabase(databaseUrl: string): Promise<boolean> {
  const { name, client } = await maintenanceOf(databaseUrl);
  try {
    const exists = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (exists.rowCount) return false;
    try {
      await client.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`);
    } catch (error) {
      // Another process created it first: 42P04 if it had committed, 23505 if it was still creating it.
      const code = (error as { code?: string }).code;
      if (code !== '42P04' && code !== '23505') throw error;
      return false;
    }
    return true;
  } finally {
    await client.end();
  }
}
