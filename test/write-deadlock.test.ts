import pg from 'pg';
import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { startEnvironment, type TestEnvironment } from './support/harness.js';

/*
 * A single write in a deadlock that Postgres breaks by rolling the write back
 * (SQLSTATE 40P01) is run again, as slonik runs again every query it sends
 * outside a transaction; the client sees its write saved, never a 500. The
 * deadlock is made here on purpose: a transaction locks the record's row, the
 * write waits for it while holding its language's shared lock, and the
 * transaction then asks for that language's exclusive lock. The write waited
 * first, so its backend is the one that finds the cycle (deadlock_timeout
 * later) and is rolled back.
 */

let env: TestEnvironment;
let token: string;

beforeAll(async () => {
  env = await startEnvironment({ worker: false });
  token = await env.token();
  await env.request('POST', '/api/v1/languages', { token, body: { language: { id: 'nl', name: 'nl', code: 'nl' } } });
});
afterAll(async () => {
  await env.close();
});

const waitUntil = async (check: () => Promise<boolean>) => {
  const started = Date.now();
  while (!(await check())) {
    if (Date.now() - started > 10_000) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
};

describe('when Postgres breaks a deadlock by rolling a single write back', () => {
  it('should run the write again and answer 200 with the record saved', { timeout: 30_000 }, async () => {
    const write = (name: string) => env.request('POST', '/api/v1/languages/nl/products', { token, body: { product: { id: 'P1', name } } });
    expect((await write('first')).status).toBe(200);
    const langKey = await env.db.oneFirst(sql.type(z.object({ lang_key: z.number() }))`
      SELECT lang_key FROM languages WHERE id = 'nl' AND deleted_at IS NULL
    `);

    const blocker = new pg.Client({ connectionString: env.config.DATABASE_URL });
    await blocker.connect();
    try {
      // The blocker looks for the cycle much later than the write does (1 s), so on a busy machine too it is the
      // write's backend that finds it and is rolled back, not this one.
      await blocker.query("SET deadlock_timeout = '10s'");
      await blocker.query('BEGIN');
      await blocker.query(`SELECT 1 FROM records WHERE lang_key = $1 AND kind = 'product' AND id = 'P1' FOR UPDATE`, [langKey]);
      const pending = write('second');
      // The write holds the language (shared) and waits for the row.
      await waitUntil(async () => {
        const { rows } = await blocker.query(
          `SELECT count(*)::int AS n FROM pg_stat_activity
           WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%write_record%'`,
        );
        return rows[0].n > 0;
      });
      // Closes the cycle; the write's backend finds it first and is rolled back; this lock is then granted.
      await blocker.query('SELECT sync_lock_language_exclusive($1)', [langKey]);
      await blocker.query('COMMIT');
      const response = await pending;
      expect(response.status, JSON.stringify(response.body)).toBe(200);
      expect(response.body.product).toMatchObject({ id: 'P1', name: 'second' });
    } finally {
      await blocker.end();
    }
    const read = await env.request('GET', '/api/v2/languages/nl/products/P1', { token });
    expect(read.body.name).toBe('second');
  });
});
