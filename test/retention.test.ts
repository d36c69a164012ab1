import { QueueEvents } from 'bullmq';
import pg from 'pg';
import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeFeedCursor } from '../feed/feed-cursor.js';
import { createRedis } from '../platform/redis.js';
import { waitForBulkJob } from './support/bulk-jobs.js';
import { startEnvironment, type TestEnvironment } from './support/harness.js';
import { workerSample } from './support/metrics.js';
import { pollUntil } from './support/poll.js';
import { openQueues, type TestQueues } from './support/queues.js';
import { type Receiver, startReceiver } from './support/receiver.js';
import { langKeyOf } from './support/state.js';
import { openShop, type Shop } from './support/v2-client.js';

/*
 * Retention (docs/decisions.md, "Retention") through the real worker's
 * apply-retention job: what is older than AUDIT_RETENTION_DAYS (90),
 * BULK_RETENTION_DAYS (30) and WEBHOOK_DELIVERY_RETENTION_DAYS (30) is made
 * old here by moving its dates back.
 */

const BLOCK = 2 ** 36;
let env: TestEnvironment;
let queues: TestQueues;
let events: QueueEvents;
const receivers: Receiver[] = [];

beforeAll(async () => {
  env = await startEnvironment({ env: { WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_RETRY_BASE_MS: '50' } });
  queues = openQueues(env.config);
  events = new QueueEvents('maintenance', { connection: createRedis(env.config.REDIS_URL, 'worker'), prefix: env.config.QUEUE_PREFIX });
  await events.waitUntilReady();
});
afterAll(async () => {
  for (const receiver of receivers) await receiver.close();
  await events.close();
  await queues.close();
  await env.close();
});

let runs = 0;
/** One run of the worker's retention job; answers what it did. */
async function runRetention(): Promise<Record<string, any>> {
  runs += 1;
  const job = await queues.queues.maintenance.add('apply-retention', {}, { jobId: `retention-test-${runs}` });
  return job.waitUntilFinished(events, 60_000);
}

/** Makes the newest audit block look opened `days` ago, so the next run opens another. */
const ageNewestBlock = (days: number) =>
  env.db.query(sql.unsafe`
    UPDATE audit_partitions SET opened_at = now() - make_interval(days => ${days})
    WHERE k = (SELECT max(k) FROM audit_partitions)
  `);

const blocks = async () => (await env.db.anyFirst(sql.unsafe`SELECT k FROM audit_partitions ORDER BY k`)).map(Number);
const removedThrough = async () => Number(await env.db.oneFirst(sql.unsafe`SELECT removed_through FROM audit_retention`));

async function feedRecordIds(shop: Shop, query: string): Promise<{ ids: string[]; cursor: string; status: number; body: any }> {
  const response = await shop.get(`/changes?limit=1000&kinds=product${query}`);
  return {
    ids: (response.body.data ?? []).map((entry: any) => entry.record_id),
    cursor: response.body.meta?.next_cursor,
    status: response.status,
    body: response.body,
  };
}

async function saveAll(shop: Shop, ids: string[]) {
  for (const id of ids) expect((await shop.put('product', { id, name: id })).status).toBe(200);
  await env.drain();
}

describe('when audit blocks pass the retention', () => {
  it('should remove whole old blocks, answer 410 below the boundary, and keep the rest readable', async () => {
    const shop = await openShop(env);
    await saveAll(shop, ['old1', 'old2', 'old3']);
    const first = await shop.get('/changes?limit=1&kinds=product');
    const insideOld = first.body.meta.next_cursor;
    const [oldBlock] = await blocks();

    // A day later the next block opens: later entries are numbered in it.
    await ageNewestBlock(2);
    expect((await runRetention()).opened_block).toBe(Number(oldBlock) + 1);
    await saveAll(shop, ['new1', 'new2']);
    const newer = await env.db.anyFirst(sql.unsafe`
      SELECT seq FROM audit_log WHERE language_id = ${shop.lang} AND record_id LIKE 'new%' ORDER BY seq
    `);
    expect(newer.every((seq) => Number(seq) >= (Number(oldBlock) + 1) * BLOCK)).toBe(true);
    // Both blocks are read as one history.
    expect((await feedRecordIds(shop, '')).ids).toEqual(['old1', 'old2', 'old3', 'new1', 'new2']);

    // 91 days after the second block opened, the first is past retention; a third block opens.
    await env.db.query(sql.unsafe`UPDATE audit_partitions SET opened_at = opened_at - interval '91 days'`);
    const run = await runRetention();
    expect(run.dropped_blocks).toEqual([Number(oldBlock)]);
    const boundary = (Number(oldBlock) + 1) * BLOCK - 1;
    expect(await removedThrough()).toBe(boundary);
    expect(await blocks()).toEqual([Number(oldBlock) + 1, Number(oldBlock) + 2]);

    // The feed without a cursor starts at the oldest retained entry; the admin log agrees.
    expect((await feedRecordIds(shop, '')).ids).toEqual(['new1', 'new2']);
    const audit = await env.request('GET', `/admin/api/audit?language_id=${shop.lang}&kind=product`, {
      token: null,
      headers: env.adminHeaders,
    });
    expect(audit.status).toBe(200);
    expect(audit.body.data.map((entry: any) => entry.record_id)).toEqual(['new1', 'new2']);

    const langKey = await langKeyOf(env, shop.lang, shop.account);
    const at = (seq: number) => encodeFeedCursor({ langKey, languageId: shop.lang, seq });
    const cases: Array<[string, string, number, string[]]> = [
      ['a cursor inside the removed block', insideOld, 410, []],
      ['a cursor just below the boundary', at(boundary - 1), 410, []],
      ['a cursor at the boundary', at(boundary), 200, ['new1', 'new2']],
      ['a cursor after the boundary', at(boundary + 1), 200, ['new1', 'new2']],
    ];
    for (const [name, cursor, status, ids] of cases) {
      const read = await feedRecordIds(shop, `&after=${cursor}`);
      expect([name, read.status], JSON.stringify(read.body)).toEqual([name, status]);
      if (status === 410) expect(read.body.error.reason).toBe('cursor_expired');
      else expect(read.ids).toEqual(ids);
    }

    // from=now still answers the head, and what comes after it.
    const head = await feedRecordIds(shop, '&from=now');
    expect([head.status, head.ids]).toEqual([200, []]);
    await saveAll(shop, ['new3']);
    expect((await feedRecordIds(shop, `&after=${head.cursor}`)).ids).toEqual(['new3']);

    const port = env.worker!.metricsPort;
    expect(await workerSample(port, 'sync_retention_removed_total', { kind: 'audit_blocks' })).toBe(1);
    expect(await workerSample(port, 'sync_audit_blocks')).toBe(2);
    expect(await workerSample(port, 'sync_audit_removed_through_seq')).toBe(boundary);

    // Run again: nothing more is due, nothing changes.
    expect(await runRetention()).toMatchObject({ opened_block: null, dropped_blocks: [] });
  }, 60_000);

  it('should finish a removal a run before left detached but not dropped', async () => {
    const shop = await openShop(env);
    await ageNewestBlock(2);
    const { opened_block: opened } = await runRetention();
    await saveAll(shop, ['kept']);
    const older = Number(opened) - 1;
    // A run cut short between its detach and its drop: the partition is detached, not dropped.
    await env.db.query(sql.unsafe`UPDATE audit_partitions SET opened_at = opened_at - interval '91 days' WHERE k <= ${Number(opened)}`);
    await env.db.query(sql.unsafe`UPDATE audit_retention SET removed_through = greatest(removed_through, ${(older + 1) * BLOCK - 1})`);
    await env.db.query(sql.unsafe`ALTER TABLE audit_log DETACH PARTITION ${sql.identifier([`audit_log_p${older}`])}`);
    const run = await runRetention();
    expect(run.dropped_blocks).toContain(older);
    expect(await env.db.maybeOneFirst(sql.unsafe`SELECT to_regclass(${`audit_log_p${older}`})::text`)).toBeNull();
    expect((await feedRecordIds(shop, '')).ids).toEqual(['kept']);
  }, 60_000);
});

describe('when the audit log is locked by something else', () => {
  it('should leave the step to the next run rather than wait', async () => {
    await ageNewestBlock(2);
    const before = await blocks();
    const holder = new pg.Client({ connectionString: env.config.DATABASE_URL });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('LOCK TABLE audit_log IN ACCESS EXCLUSIVE MODE');
      expect(await runRetention()).toMatchObject({ opened_block: null, dropped_blocks: [] });
      await holder.query('ROLLBACK');
    } finally {
      await holder.end();
    }
    expect(await blocks()).toEqual(before);
    expect((await runRetention()).opened_block).toBe(before.at(-1)! + 1);
  }, 60_000);
});

describe('when a block is removed while writes go on', () => {
  it('should refuse no write and lose no entry', async () => {
    const shop = await openShop(env);
    await saveAll(shop, ['before']);
    let writing = true;
    const statuses: number[] = [];
    const written: string[] = [];
    const writers = Array.from({ length: 4 }, async (_, writer) => {
      for (let index = 0; writing; index += 1) {
        const id = `w${writer}-${index}`;
        const response = await shop.put('product', { id, name: id });
        statuses.push(response.status);
        if (response.status < 300) written.push(id);
      }
    });
    await ageNewestBlock(2);
    await runRetention();
    await env.db.query(sql.unsafe`UPDATE audit_partitions SET opened_at = opened_at - interval '91 days'`);
    const run = await runRetention();
    expect(run.dropped_blocks.length).toBeGreaterThan(0);
    writing = false;
    await Promise.all(writers);
    await env.drain();
    expect(statuses.length).toBeGreaterThan(10);
    expect(statuses.filter((status) => status >= 300)).toEqual([]);
    // Every write accepted while the block went is in the feed: those numbered in the old block were committed
    // long before it went, here seconds before; the ones after the boundary are all there.
    const ids = new Set((await feedRecordIds(shop, '')).ids);
    const boundary = await removedThrough();
    const kept = await env.db.anyFirst(sql.unsafe`
      SELECT record_id FROM audit_log WHERE language_id = ${shop.lang} AND seq > ${boundary}
    `);
    expect(kept.length).toBeGreaterThan(0);
    for (const id of kept) expect(ids.has(String(id))).toBe(true);
  }, 60_000);
});

describe('when finished bulk jobs pass the retention', () => {
  it("should remove their stored lines and errors and keep the job's counts", async () => {
    const shop = await openShop(env);
    const lines = [{ product: { id: 'b1', name: 'one' } }, { product: { id: 'b2', name: 5 } }, { product: { id: 'b3', name: 'three' } }];
    const upload = async () => {
      const response = await env.request('POST', `/api/v2/languages/${shop.lang}/bulk`, {
        token: shop.token,
        raw: lines.map((line) => JSON.stringify(line)).join('\n'),
        headers: { 'Content-Type': 'application/x-ndjson' },
      });
      expect(response.status, response.text).toBe(202);
      return waitForBulkJob(env, shop.token, response.headers.get('location')!);
    };
    const old = await upload();
    const recent = await upload();
    expect(old).toMatchObject({ status: 'completed', lines: 3, failed: 1 });
    expect(old.errors).toHaveLength(1);
    await env.db.query(sql.unsafe`UPDATE bulk_jobs SET finished_at = now() - interval '31 days' WHERE id = ${old.id}`);
    const before = await workerSample(env.worker!.metricsPort, 'sync_retention_removed_total', { kind: 'bulk_errors' });
    // A job's stored lines go when it ends; a job that ended without taking them (as before that was done) still has them.
    await env.db.query(sql.unsafe`INSERT INTO bulk_lines (job_id, line_no, line) VALUES (${old.id}, 1, '{}'), (${old.id}, 2, '{}')`);

    const run = await runRetention();
    expect(run.bulk_lines).toBe(2);
    expect(run.bulk_errors).toBe(1);
    const stored = async (id: string) =>
      env.db.one(sql.unsafe`
        SELECT (SELECT count(*) FROM bulk_lines WHERE job_id = ${id})::int AS lines,
               (SELECT count(*) FROM bulk_errors WHERE job_id = ${id})::int AS errors
      `);
    expect(await stored(old.id)).toEqual({ lines: 0, errors: 0 });
    expect(await stored(recent.id)).toEqual({ lines: 0, errors: 1 });
    const job = await env.request('GET', `/api/v2/languages/${shop.lang}/bulk/${old.id}`, { token: shop.token });
    expect(job.status).toBe(200);
    expect(job.body).toMatchObject({ status: 'completed', lines: 3, saved: 2, failed: 1, errors: [] });
    expect(await workerSample(env.worker!.metricsPort, 'sync_retention_removed_total', { kind: 'bulk_errors' })).toBe(before + 1);
    const errors = await env.request('GET', `/api/v2/languages/${shop.lang}/bulk/${old.id}/errors`, { token: shop.token });
    expect([errors.status, errors.text.trim()]).toEqual([200, '']);
  }, 60_000);
});

describe('when delivered deliveries pass the retention', () => {
  it('should remove them and keep recent and undelivered ones', async () => {
    const shop = await openShop(env);
    const hook = await startReceiver();
    receivers.push(hook);
    await env.drain();
    const created = await shop.request('PUT', '/api/v2/webhooks', { webhook: { id: 'kept-a-month', url: hook.url } });
    expect(created.status, created.text).toBe(200);
    await saveAll(shop, ['d1']);
    await pollUntil(
      async () => hook.accepted(),
      (accepted) => accepted.length > 0,
      { timeoutMs: 20_000 },
    );
    await saveAll(shop, ['d2']);
    await pollUntil(
      async () => hook.accepted(),
      (accepted) => accepted.length > 1,
      { timeoutMs: 20_000 },
    );
    const list = async () => (await shop.request('GET', '/api/v2/webhooks/kept-a-month/deliveries')).body;
    const [newest, oldest] = (await list()).data;
    await env.db.query(sql.unsafe`UPDATE webhook_deliveries SET delivered_at = now() - interval '31 days' WHERE id = ${oldest.id}`);
    const run = await runRetention();
    expect(run.deliveries).toBe(1);
    const after = await list();
    expect(after.data.map((delivery: any) => delivery.id)).toEqual([newest.id]);
    expect(
      await workerSample(env.worker!.metricsPort, 'sync_retention_removed_total', { kind: 'webhook_deliveries' }),
    ).toBeGreaterThanOrEqual(1);
  }, 60_000);
});

describe('when a webhook was behind when its entries were removed', () => {
  it('should go on from the first entry still kept, losing none of those', async () => {
    const shop = await openShop(env);
    const hook = await startReceiver();
    receivers.push(hook);
    await env.drain();
    const put = async (active: boolean) => {
      const response = await shop.request('PUT', '/api/v2/webhooks', { webhook: { id: 'behind', url: hook.url, active } });
      expect(response.status, response.text).toBe(200);
    };
    const products = () =>
      hook
        .accepted()
        .flatMap((request) => request.body.data ?? [])
        .filter((entry: any) => entry.kind === 'product')
        .map((entry: any) => entry.record_id);
    await put(true);
    await saveAll(shop, ['x1']);
    await pollUntil(
      async () => products(),
      (ids) => ids.length > 0,
      { timeoutMs: 20_000 },
    );
    await put(false);
    await saveAll(shop, ['x2', 'x3']);
    await ageNewestBlock(2);
    await runRetention();
    await saveAll(shop, ['y1', 'y2']);
    await env.db.query(sql.unsafe`UPDATE audit_partitions SET opened_at = opened_at - interval '91 days'`);
    expect((await runRetention()).dropped_blocks.length).toBeGreaterThan(0);
    await put(true);
    await pollUntil(
      async () => products(),
      (ids) => ids.length >= 3,
      { timeoutMs: 20_000 },
    );
    expect(products()).toEqual(['x1', 'y1', 'y2']);
  }, 60_000);
});
