import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import pg from 'pg';

export const MIGRATIONS_DIR = fileURLToPath(new URL('../migrations/', import.meta.url));

export interface MigrationResult {
  createdDatabase: boolean;
  applied: string[];
}

/**
 * Creates the database when it is missing, then applies every migration in
 * `migrations/` that has not been applied yet, in file-name order, each in its
 * own transaction and recorded in `schema_migrations`. Safe to run from several
 * processes at once: an advisory lock makes them take turns.
 * Uses `pg` directly because migration files hold several statements, which
 * only the simple query protocol accepts.
 * @throws if a migration fails (that migration is rolled back) or an applied file was edited.
 */
export async function migrate(databaseUrl: string, directory = MIGRATIONS_DIR): Promise<MigrationResult> {
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
      )`);
    const done = new Map(
      (await client.query<{ name: string; checksum: string }>('SELECT name, checksum FROM schema_migrations')).rows.map(
        (row) => [row.name, row.checksum],
      ),
    );
    const files = (await readdir(directory)).filter((file) => file.endsWith('.sql')).sort();
    const applied: string[] = [];
    for (const file of files) {
      const text = await readFile(path.join(directory, file), 'utf8');
      const checksum = createHash('sha256').update(text).digest('hex');
      const previous = done.get(file);
      if (previous !== undefined) {
        if (previous !== checksum) throw new Error(`Migration ${file} was changed after it was applied`);
        continue;
      }
      await client.query('BEGIN');
      try {
        await client.query(text);
        await client.query('INSERT INTO schema_migrations (name, checksum) VALUES ($1, $2)', [file, checksum]);
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK');
        throw new Error(`Migration ${file} failed: ${(error as Error).message}`);
      }
      applied.push(file);
    }
    return { createdDatabase, applied };
  } finally {
    await client.query(`SELECT pg_advisory_unlock(hashtext('commerce-sync:migrations'))`).catch(() => undefined);
    await client.end();
  }
}

async function ensureDatabase(databaseUrl: string): Promise<boolean> {
  const url = new URL(databaseUrl);
  const name = decodeURIComponent(url.pathname.replace(/^\//, ''));
  if (!name) throw new Error('DATABASE_URL names no database');
  const maintenance = new URL(databaseUrl);
  maintenance.pathname = '/postgres';
  const client = new pg.Client({ connectionString: maintenance.toString() });
  await client.connect();
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
