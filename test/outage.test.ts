import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { startEnvironment, type TestEnvironment, uniqueName } from './support/harness.js';
import { pollUntil } from './support/poll.js';
import { type PrivatePostgres, startPrivatePostgres } from './support/postgres.js';
import { openQueues, type TestQueues } from './support/queues.js';

/*
 * Postgres goes away for longer than the jobs' retry
 * budget (a cluster of the test's own, stopped and started again). Meanwhile
 * a write is answered 503 with Retry-After; afterwards the wake-up jobs that
 * used up their attempts are run again, and sync-status says failed: 0 once
 * drained.
 */

const GENERIC = { error: 'The request cannot be processed at this moment' };
/** The test's retry budget: 2 attempts, 100 ms apart, so an outage of a few seconds outlasts it. */
const RETRY = { attempts: 2, backoff: { type: 'exponential' as const, delay: 100 } };

let postgres: PrivatePostgres;
let env: TestEnvironment;
let queues: TestQueues;
let token: string;

beforeAll(async () => {
  postgres = await startPrivatePostgres();
  env = await startEnvironment({
    env: { DATABASE_URL: `${postgres.url}/${uniqueName('cs_outage')}`, JOB_ATTEMPTS: String(RETRY.attempts), JOB_BACKOFF_MS: '100' },
  });
  queues = openQueues(env.config);
  token = await env.token();
}, 120_000);
afterAll(async () => {
  await queues?.close();
  await env?.close().catch(() => undefined);
  await postgres?.destroy();
});

const syncStatus = async () => {
  const response = await env.request('GET', '/admin/api/sync-status', { headers: env.adminHeaders });
  return response.status === 200
    ? (response.body as { pending: number; failed: number })
    : { pending: -1, failed: -1, status: response.status };
};

describe('when Postgres is down for longer than the jobs may retry', () => {
  it('should answer 503 meanwhile and, once it is back and drained, report failed: 0', async () => {
    const language = await env.request('POST', '/api/v1/languages', { token, body: { language: { id: 'nl', name: 'NL', code: 'nl' } } });
    expect(language.status).toBe(200);
    await env.drain();
    const langKey = await env.db.oneFirst(sql.type(z.object({ lang_key: z.number() }))`SELECT lang_key FROM languages WHERE id = 'nl'`);

    // The applier of the language is busy (as in a long batch), so the next writes are still pending when Postgres goes.
    const holder = new pg.Client({ connectionString: env.config.DATABASE_URL });
    holder.on('error', () => undefined);
    await holder.connect();
    // A run that drained the language may still be in its last round (which takes the lock for a moment): try again.
    const locked = await pollUntil(
      async () => {
        await holder.query('BEGIN');
        if ((await holder.query('SELECT sync_try_lock_applier($1) AS locked', [langKey])).rows[0].locked) return true;
        await holder.query('ROLLBACK');
        return false;
      },
      (done) => done,
      { timeoutMs: 10_000, intervalMs: 20 },
    );
    expect(locked).toBe(true);
    for (let index = 0; index < 20; index += 1) {
      const write = await env.request('POST', '/api/v1/languages/nl/products', {
        token,
        body: { product: { id: `P${index}`, name: 'p', category_ids: ['C1', `D${index}`] } },
      });
      expect(write.status).toBe(200);
    }
    await postgres.stop();

    // Wake-up jobs for those writes, as the API enqueues them: each now fails on every attempt.
    for (let index = 0; index < 5; index += 1)
      await queues.queues.effects.add('apply-outbox', { langKey }, { ...RETRY, jobId: `outage-${index}` });
    const exhausted = await pollUntil(
      () => queues.queues.effects.getFailedCount(),
      (count) => count >= 5,
      { timeoutMs: 30_000 },
    );
    expect(exhausted).toBeGreaterThanOrEqual(5);

    const refused = await env.request('POST', '/api/v1/languages/nl/products', { token, body: { product: { id: 'down', name: 'd' } } });
    expect(refused.status).toBe(503);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(refused.body).toEqual(GENERIC);

    await sleep(1_000);
    await postgres.start();
    const status = await pollUntil(syncStatus, (value) => value.pending === 0 && value.failed === 0, {
      timeoutMs: 60_000,
      intervalMs: 100,
    });
    expect(status).toEqual({ pending: 0, failed: 0 });
    // The exhausted wake-up jobs ran again once Postgres was back: none of them stays failed.
    const states = await pollUntil(
      () => Promise.all(Array.from({ length: 5 }, async (_, index) => (await queues.queues.effects.getJob(`outage-${index}`))?.getState())),
      (values) => values.every((state) => state === 'completed'),
      { timeoutMs: 20_000 },
    );
    expect(states).toEqual(Array(5).fill('completed'));
    const links = await env.db.oneFirst(sql.type(z.object({ count: z.number() }))`
      SELECT count(*)::int8 AS count FROM links WHERE lang_key = ${langKey} AND rel = 'product_category'
    `);
    expect(links).toBe(40);
  }, 180_000);
});
