import pg from 'pg';
import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { maintainAuditBlocks } from '../sync/audit-blocks.js';
import { type HttpResponse, startEnvironment, type TestEnvironment } from './support/harness.js';
import { sample } from './support/metrics.js';
import { pollUntil } from './support/poll.js';
import { compare, generate, rng, type Sent, send } from './support/scenario.js';
import { auditOf, langKeyOf } from './support/state.js';
import { openShop, type Shop } from './support/v2-client.js';

/*
 * The change feed (interface §22) over HTTP, against the real API, worker,
 * Postgres and Redis. Every response is also checked against /openapi.json
 * by the harness.
 */

let env: TestEnvironment;

beforeAll(async () => {
  env = await startEnvironment();
});
afterAll(async () => {
  await env.close();
});

type Entry = Record<string, any>;

const changes = (shop: Shop, query = '') => shop.get(`/changes${query}`);

/** Every entry from `cursor` (or the start) to the end, `limit` at a time, following next_cursor. */
async function readAll(shop: Shop, { cursor, limit = 7, extra = '' }: { cursor?: string; limit?: number; extra?: string } = {}) {
  const entries: Entry[] = [];
  let next = cursor;
  for (;;) {
    const response = await changes(shop, `?limit=${limit}${next ? `&after=${next}` : ''}${extra}`);
    expect(response.status, response.text).toBe(200);
    entries.push(...response.body.data);
    next = response.body.meta.next_cursor;
    if (!response.body.meta.has_more) return { entries, cursor: next! };
  }
}

/** The audit log of the language, as the feed must show it. */
async function auditAsFeed(shop: Shop) {
  const rows = await auditOf(env, shop.lang, { account: shop.account });
  return rows.map((row) => ({
    id: String(row.seq),
    kind: row.kind,
    record_id: row.record_id,
    action: row.action,
    changes: row.changes,
    actor: row.actor,
    request_id: row.request_id,
  }));
}

const withoutPositions = (entries: Entry[]) =>
  entries.map(({ id, kind, record_id, action, changes, actor, request_id }) => ({
    id,
    kind,
    record_id,
    action,
    changes,
    actor,
    request_id,
  }));

/**
 * A connection whose statements' plans, nested ones too (the page function's), are collected as auto_explain
 * reports them; with `buffers`, run and with the pages each touched.
 */
async function explainingClient({ buffers }: { buffers: boolean }): Promise<{ client: pg.Client; plans: string[] }> {
  const client = new pg.Client({ connectionString: env.config.DATABASE_URL });
  const plans: string[] = [];
  client.on('notice', (notice) => plans.push(notice.message ?? ''));
  await client.connect();
  await client.query(`LOAD 'auto_explain'`);
  const measured = buffers ? ' SET auto_explain.log_analyze = on; SET auto_explain.log_buffers = on;' : '';
  await client.query(
    `SET auto_explain.log_min_duration = 0; SET auto_explain.log_nested_statements = on;${measured} SET client_min_messages = log`,
  );
  return { client, plans };
}

async function accountIdOf(shop: Shop): Promise<number> {
  return Number(await env.db.oneFirst(sql.unsafe`SELECT id FROM accounts WHERE name = ${shop.account}`));
}

describe('when a random history with stubs, links and cascades was written', () => {
  it.each([1, 2])('should show exactly the audit log, in order, page by page (seed %i)', async (seed) => {
    const shop = await openShop(env);
    const operations = generate(rng(seed * 7919), 80, undefined, { v2: true, v2Surface: true });
    const sent: Sent[] = [];
    for (const [index, operation] of operations.entries())
      sent.push(await send(env, shop.token, shop.lang, operation, `f${seed}-${index}`));
    await env.drain();
    // The audit log is the serial model's (as test/model.test.ts checks); the feed must be that log.
    const model = await compare(env, shop.lang, await accountIdOf(shop), sent, { order: 'sent' });
    expect(model.audit.actual).toEqual(model.audit.expected);
    const { entries } = await readAll(shop);
    const audit = await auditAsFeed(shop);
    expect(audit.some((entry) => entry.action === 'stub')).toBe(true);
    expect(audit.some((entry) => entry.actor === 'system' && entry.action === 'unlink')).toBe(true);
    expect(withoutPositions(entries)).toEqual(audit);
    expect(new Set(entries.map((entry) => entry.id)).size).toBe(entries.length);
    for (const entry of entries) expect(Number.isNaN(Date.parse(entry.occurred_at))).toBe(false);
  });
});

describe('when a reader follows the cursor while writers write', () => {
  it('should see every entry exactly once, in order', async () => {
    const shop = await openShop(env);
    const seen: Entry[] = [];
    let writing = true;
    const reader = (async () => {
      let cursor: string | undefined;
      for (;;) {
        const response = await changes(shop, `?limit=5&wait=1${cursor ? `&after=${cursor}` : ''}`);
        expect(response.status, response.text).toBe(200);
        seen.push(...response.body.data);
        cursor = response.body.meta.next_cursor;
        if (!writing && response.body.data.length === 0 && !response.body.meta.has_more) return;
      }
    })();
    const operations = generate(rng(4242), 90, undefined, { v2: true });
    // A bulk file too, applied in its own batches beside the single writes.
    const lines = Array.from({ length: 300 }, (_, index) =>
      JSON.stringify({ product: { id: `b${index}`, name: 'x', category_ids: [`bc${index % 7}`] } }),
    );
    const upload = env.request('POST', `/api/v1/languages/${shop.lang}/bulk`, {
      token: shop.token,
      raw: `${lines.join('\n')}\n`,
      headers: { 'content-type': 'application/x-ndjson' },
    });
    for (let start = 0; start < operations.length; start += 6) {
      const chunk = operations.slice(start, start + 6);
      await Promise.all(chunk.map((operation, offset) => send(env, shop.token, shop.lang, operation, `r-${start + offset}`)));
    }
    const uploaded = await upload;
    expect(uploaded.status, uploaded.text).toBe(202);
    await pollUntil(
      () => shop.request('GET', uploaded.headers.get('location')!),
      (response) => response.body.bulk_job?.status === 'completed',
      { timeoutMs: 30_000 },
    );
    await env.drain();
    writing = false;
    await reader;
    expect(withoutPositions(seen)).toEqual(await auditAsFeed(shop));
  });
});

describe('when the feed is paged', () => {
  it('should give has_more and a next_cursor that ends where the entries end', async () => {
    const shop = await openShop(env);
    for (const id of ['a', 'b', 'c']) await shop.save('product', { id, name: id });
    await env.drain();
    const first = await changes(shop, '?limit=2');
    expect(first.status).toBe(200);
    expect(first.body.data).toHaveLength(2);
    expect(first.body.meta.has_more).toBe(true);
    expect(first.body.meta.next_cursor).toBe(first.body.data[1].cursor);
    const rest = await readAll(shop, { cursor: first.body.meta.next_cursor, limit: 2 });
    expect([...first.body.data, ...rest.entries].map((entry: Entry) => entry.record_id)).toEqual([shop.lang, 'a', 'b', 'c']);
    const after = await changes(shop, `?after=${rest.cursor}`);
    expect(after.body).toEqual({ data: [], meta: { next_cursor: rest.cursor, has_more: false } });
  });

  it('should give cursors that resume after their entry, whatever characters the language id has', async () => {
    const shop = await openShop(env, `ünïcödé-${'x'.repeat(90)}.${Date.now()}`);
    for (const id of ['a', 'b']) await shop.save('product', { id, name: id });
    await env.drain();
    const all = (await changes(shop)).body.data as Entry[];
    expect(all.map((entry) => entry.record_id)).toEqual([shop.lang, 'a', 'b']);
    const rest = await changes(shop, `?after=${all[0]!.cursor}`);
    expect(rest.status, rest.text).toBe(200);
    expect(rest.body.data.map((entry: Entry) => entry.record_id)).toEqual(['a', 'b']);
    expect(rest.body.meta.next_cursor).toBe(all[2]!.cursor);
  });

  it('should write each entry as compact JSON with its fields in order', async () => {
    const shop = await openShop(env);
    await shop.save('product', { id: 'p', name: 'p' });
    await env.drain();
    const page = await changes(shop);
    expect(page.text).toMatch(
      /^\{"data":\[\{"id":"\d+","cursor":"[\w-]+","kind":"language","record_id":"[^"]+","action":"create","changes":/,
    );
    expect(Object.keys(page.body.data[1])).toEqual([
      'id',
      'cursor',
      'kind',
      'record_id',
      'action',
      'changes',
      'actor',
      'request_id',
      'bulk_job_id',
      'occurred_at',
    ]);
  });

  it('should default to 100 entries a page', async () => {
    const shop = await openShop(env);
    const lines = Array.from({ length: 120 }, (_, index) => JSON.stringify({ product: { id: `p${index}`, name: 'x' } })).join('\n');
    const upload = await env.request('POST', `/api/v2/languages/${shop.lang}/bulk`, {
      token: shop.token,
      raw: `${lines}\n`,
      headers: { 'content-type': 'application/x-ndjson' },
    });
    expect(upload.status, upload.text).toBe(202);
    const job = await pollUntil(
      () => shop.request('GET', upload.headers.get('location')!),
      (response) => response.body.status === 'completed',
      { timeoutMs: 20_000 },
    );
    expect(job.body.status).toBe('completed');
    await env.drain();
    const page = await changes(shop);
    expect(page.body.data).toHaveLength(100);
    expect(page.body.meta.has_more).toBe(true);
    // Changes from a bulk file name their job.
    expect(page.body.data[1].bulk_job_id).toBe(job.body.id);
    expect(page.body.data[0].bulk_job_id).toBeNull();
  });
});

describe('when a language was filled after the audit log was last analysed', () => {
  /** A bulk file of `count` new products, applied. */
  async function fill(shop: Shop, count: number) {
    const lines = Array.from({ length: count }, (_, index) => JSON.stringify({ product: { id: `p${index}`, name: 'x' } })).join('\n');
    const upload = await env.request('POST', `/api/v2/languages/${shop.lang}/bulk`, {
      token: shop.token,
      raw: `${lines}\n`,
      headers: { 'content-type': 'application/x-ndjson' },
    });
    expect(upload.status, upload.text).toBe(202);
    await pollUntil(
      () => shop.request('GET', upload.headers.get('location')!),
      (response) => response.body.status === 'completed',
      { timeoutMs: 60_000 },
    );
    await env.drain();
  }

  it('should read a page deep in its history along the index, from the cursor, without a sort', async () => {
    // The statistics know another language's history and nothing of this one's: the planner expects a handful of rows.
    await fill(await openShop(env), 3_000);
    await env.db.query(sql.unsafe`ANALYZE audit_log`);
    const shop = await openShop(env);
    await fill(shop, 10_000);
    // The plan Postgres chose inside the page function, and the pages it touched, as auto_explain reports them.
    const { client, plans } = await explainingClient({ buffers: true });
    try {
      const langKey = await langKeyOf(env, shop.lang, shop.account);
      const { rows } = await client.query<{ seq: string }>('SELECT seq FROM audit_log WHERE lang_key = $1 ORDER BY seq', [langKey]);
      expect(rows.length).toBeGreaterThan(9_000);
      const after = rows[rows.length - 500]!.seq;
      plans.length = 0;
      const page = await client.query('SELECT seq FROM feed_audit_page($1, $2, $3, 9223372036854775807, 101, NULL)', [
        shop.lang,
        langKey,
        after,
      ]);
      expect(page.rows.map((row) => row.seq)).toEqual(rows.slice(rows.length - 499, rows.length - 398).map((row) => row.seq));
      // The statement on the block's partition (feed/sql/feed_pages.sql).
      const inner = plans.find((plan) => /FROM audit_log_p\d+/.test(plan)) ?? '';
      expect(inner).toContain('Index Scan using audit_log_language');
      expect(inner).not.toMatch(/Bitmap|Sort/);
      // From the cursor: a few pages of index and table, not every entry of the language before it.
      const touched = [...inner.matchAll(/Buffers: shared (?:hit=(\d+))? ?(?:read=(\d+))?/g)].map(
        (match) => Number(match[1] ?? 0) + Number(match[2] ?? 0),
      );
      expect(touched.length).toBeGreaterThan(0);
      expect(Math.max(...touched)).toBeLessThan(20);
    } finally {
      await client.end();
    }
  });
});

describe('when the history spans several blocks of the audit log', () => {
  it('should read them as one history, a page touching only the blocks it reads', async () => {
    const shop = await openShop(env);
    const opened: number[] = [Number(await env.db.oneFirst(sql.unsafe`SELECT max(k) FROM audit_partitions`))];
    const write = async (prefix: string) => {
      for (let index = 0; index < 30; index += 1) await shop.save('product', { id: `${prefix}${index}`, name: 'n' });
      await env.drain();
    };
    await write('a');
    for (const prefix of ['b', 'c']) {
      // A day passes: the next block opens (sync/audit-blocks.ts), and later entries are numbered in it.
      await env.db.query(sql.unsafe`UPDATE audit_partitions SET opened_at = opened_at - interval '1 day'`);
      const run = await maintainAuditBlocks(env.db, { retentionDays: 90, lockTimeoutMs: 2_000 });
      opened.push(run.opened!);
      await write(prefix);
    }
    const names = ['a', 'b', 'c'].flatMap((prefix) => Array.from({ length: 30 }, (_, index) => `${prefix}${index}`));
    const { entries } = await readAll(shop, { extra: '&kinds=product' });
    expect(entries.map((entry) => entry.record_id)).toEqual(names);
    const blockOf = (id: string) => Math.floor(Number(entries.find((entry) => entry.record_id === id)!.id) / 2 ** 36);
    expect([blockOf('a0'), blockOf('b0'), blockOf('c0')]).toEqual(opened);

    const { client, plans } = await explainingClient({ buffers: false });
    try {
      const langKey = await langKeyOf(env, shop.lang, shop.account);
      const cases: Array<[string, number, number[]]> = [
        ['a5', 10, [opened[0]!]],
        ['b5', 10, [opened[1]!]],
        ['a25', 10, [opened[0]!, opened[1]!]],
        ['c25', 10, [opened[2]!]],
      ];
      for (const [after, limit, blocks] of cases) {
        plans.length = 0;
        const page = await client.query<{ record_id: string }>(
          `SELECT record_id FROM feed_audit_page($1, $2, $3, 9223372036854775807, $4, '{product}')`,
          [shop.lang, langKey, entries.find((entry) => entry.record_id === after)!.id, limit],
        );
        const from = names.indexOf(after) + 1;
        expect(page.rows.map((row) => row.record_id)).toEqual(names.slice(from, from + limit));
        const read = [...new Set(plans.flatMap((plan) => [...plan.matchAll(/ on audit_log_p(\d+)/g)].map((match) => Number(match[1]))))];
        expect([after, read]).toEqual([after, blocks]);
      }
    } finally {
      await client.end();
    }
  }, 60_000);
});

describe('when a reader starts from now', () => {
  it('should answer no entries and the head, then only what is written after', async () => {
    const shop = await openShop(env);
    await shop.save('product', { id: 'old', name: 'old' });
    await env.drain();
    const head = await changes(shop, '?from=now');
    expect(head.status).toBe(200);
    expect(head.body.data).toEqual([]);
    expect(head.body.meta.has_more).toBe(false);
    await shop.save('product', { id: 'new', name: 'new' });
    await env.drain();
    const { entries } = await readAll(shop, { cursor: head.body.meta.next_cursor });
    expect(entries.map((entry) => [entry.record_id, entry.action])).toEqual([['new', 'create']]);
  });
});

describe('when kinds are asked for', () => {
  it('should show only those and still move the cursor past the others', async () => {
    const shop = await openShop(env);
    await shop.save('category', { id: 'c1', name: 'C' });
    await shop.save('product', { id: 'p1', name: 'P' });
    await env.drain();
    const categories = await changes(shop, '?kinds=category');
    expect(categories.body.data.map((entry: Entry) => entry.record_id)).toEqual(['c1']);
    const lastProduct = (await readAll(shop)).cursor;
    expect(categories.body.meta.next_cursor).toBe(lastProduct);
    await shop.save('product', { id: 'p2', name: 'P' });
    await env.drain();
    const none = await changes(shop, `?kinds=category,brand&after=${lastProduct}`);
    expect(none.body.data).toEqual([]);
    expect(none.body.meta.next_cursor).not.toBe(lastProduct);
    expect((await changes(shop, `?after=${none.body.meta.next_cursor}`)).body.data).toEqual([]);
  });
});

describe('when records are included', () => {
  it('should add each record as GET one answers it now, or null once deleted', async () => {
    const shop = await openShop(env);
    await shop.save('product', { id: 'kept', name: 'one' });
    await shop.save('product', { id: 'kept', name: 'two' });
    await shop.save('product', { id: 'gone', name: 'x' });
    expect((await shop.del('/products/gone')).status).toBe(204);
    await env.drain();
    const page = await changes(shop, '?include=record&kinds=product');
    const current = (await shop.get('/products/kept')).body;
    const byRecord = page.body.data.map((entry: Entry) => [entry.record_id, entry.action, entry.record]);
    expect(byRecord).toEqual([
      ['kept', 'create', current],
      ['kept', 'update', current],
      ['gone', 'create', null],
      ['gone', 'delete', null],
    ]);
    expect((await changes(shop, '?kinds=product')).body.data[0]).not.toHaveProperty('record');
  });

  it('should show every kind with its lists, and the language for its own entries', async () => {
    const shop = await openShop(env);
    await shop.save('category', { id: 'c1', name: 'C' });
    await shop.v1('product', { id: 'p1', name: 'P', category_ids: ['c1', 'c2'] });
    await env.drain();
    const page = await changes(shop, '?include=record');
    const records = new Map<string, unknown>();
    for (const entry of page.body.data as Entry[]) records.set(`${entry.kind}/${entry.record_id}`, entry.record);
    expect(records.get(`language/${shop.lang}`)).toEqual((await shop.get('')).body);
    expect(records.get('product/p1')).toEqual((await shop.get('/products/p1')).body);
    expect(records.get('category/c1')).toEqual((await shop.get('/categories/c1')).body);
    // c2 was created as a stub by the product's categories.
    expect(records.get('category/c2')).toEqual((await shop.get('/categories/c2')).body);
    expect((page.body.data as Entry[]).map((entry) => entry.action)).toContain('stub');
  });
});

/** A shop whose language's own entry is applied: `from=now` is then after it. */
async function settledShop(): Promise<Shop> {
  const shop = await openShop(env);
  await env.drain();
  return shop;
}

describe('when a reader waits', () => {
  it('should answer as soon as an entry arrives', async () => {
    const shop = await settledShop();
    const head = (await changes(shop, '?from=now')).body.meta.next_cursor;
    const waiting = changes(shop, `?after=${head}&wait=30`);
    await new Promise((resolve) => setTimeout(resolve, 200));
    await shop.save('product', { id: 'late', name: 'x' });
    const answer = await waiting;
    expect(answer.status).toBe(200);
    expect(answer.body.data.map((entry: Entry) => entry.record_id)).toEqual(['late']);
  });

  it('should answer empty data once the wait has passed with nothing written', async () => {
    const shop = await settledShop();
    const head = (await changes(shop, '?from=now')).body.meta.next_cursor;
    const answer = await changes(shop, `?after=${head}&wait=1`);
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ data: [], meta: { next_cursor: head, has_more: false } });
  });

  it('should keep waiting past entries of other kinds and name the position after them', async () => {
    const shop = await settledShop();
    const head = (await changes(shop, '?from=now')).body.meta.next_cursor;
    const waiting = changes(shop, `?after=${head}&wait=30&kinds=category`);
    await shop.save('product', { id: 'p', name: 'x' });
    await env.drain();
    await shop.save('category', { id: 'c', name: 'x' });
    const answer = await waiting;
    expect(answer.body.data.map((entry: Entry) => entry.record_id)).toEqual(['c']);
  });
});

describe('when more readers wait than the API has database connections', () => {
  it('should hold none of them while waiting, answer other requests meanwhile, and wake every reader', async () => {
    const shop = await settledShop();
    const head = (await changes(shop, '?from=now')).body.meta.next_cursor;
    // The API's pool has 10 connections: 15 readers each holding one would leave none for reading the language below.
    let answered = 0;
    const readers = Array.from({ length: 15 }, () =>
      changes(shop, `?after=${head}&wait=30`).then((response) => {
        answered += 1;
        return response;
      }),
    );
    const metrics = await pollUntil(
      async () => (await env.request('GET', '/metrics')).text,
      (text) => sample(text, 'sync_feed_waiting_readers') === 15,
      { timeoutMs: 20_000 },
    );
    expect(sample(metrics, 'sync_feed_waiting_readers')).toBe(15);
    expect(sample(metrics, 'sync_feed_listening')).toBe(1);
    const language = await shop.get('');
    expect(language.status).toBe(200);
    expect(answered).toBe(0);
    await shop.save('product', { id: 'wake', name: 'x' });
    for (const response of await Promise.all(readers)) {
      expect(response.status).toBe(200);
      expect(response.body.data.map((entry: Entry) => entry.record_id)).toEqual(['wake']);
    }
  });
});

describe('when the API loses its listening connection', () => {
  it('should still answer a waiting reader with the entry written meanwhile', async () => {
    const shop = await settledShop();
    const head = (await changes(shop, '?from=now')).body.meta.next_cursor;
    const cut = await env.db.anyFirst(sql.unsafe`
      SELECT pg_terminate_backend(pid) FROM pg_stat_activity
      WHERE datname = current_database() AND query = 'LISTEN audit_written'
    `);
    expect(cut).toEqual([true]);
    const waiting = changes(shop, `?after=${head}&wait=30`);
    await shop.save('product', { id: 'unheard', name: 'x' });
    const answer = await waiting;
    expect(answer.status).toBe(200);
    expect(answer.body.data.map((entry: Entry) => entry.record_id)).toEqual(['unheard']);
  });
});

describe('when parameters are wrong', () => {
  it.each([
    ['?limit=0', ['limit']],
    ['?limit=1001', ['limit']],
    ['?limit=ten', ['limit']],
    ['?wait=31', ['wait']],
    ['?wait=1.5', ['wait']],
    ['?kinds=product,widget', ['kinds']],
    ['?after=not-a-cursor!', ['after']],
    ['?after=bm9wZQ', ['after']],
    ['?from=then', ['from']],
    ['?include=records', ['include']],
    ['?limit=1&limit=2', ['limit']],
  ])('should answer 400 invalid_parameters for %s', async (query, names) => {
    const shop = await openShop(env);
    const response = await changes(shop, query);
    expect(response.status).toBe(400);
    expect(response.body.error.invalid_parameters).toEqual(names);
  });

  it('should refuse after with from, a cursor of another language and unknown parameters', async () => {
    const shop = await openShop(env);
    const cursor = (await changes(shop, '?from=now')).body.meta.next_cursor;
    const both = await changes(shop, `?from=now&after=${cursor}`);
    expect(both.status).toBe(400);
    expect(both.body.error.invalid_parameters).toEqual(['after', 'from']);
    await shop.request('PUT', '/api/v2/languages', { language: { id: 'other' } });
    const other = await shop.request('GET', `/api/v2/languages/other/changes?after=${cursor}`);
    expect(other.status).toBe(400);
    expect(other.body.error.invalid_parameters).toEqual(['after']);
    const unknown = await changes(shop, '?page=2');
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.unknown_parameters).toEqual(['page']);
  });
});

describe('when the cursor is older than what is kept', () => {
  it('should answer 410 cursor_expired past the retained history', async () => {
    const shop = await openShop(env);
    const start = (await changes(shop, '?limit=1')).body.meta.next_cursor;
    await shop.save('product', { id: 'p', name: 'x' });
    await env.drain();
    const seq = Number(await env.db.oneFirst(sql.unsafe`SELECT max(seq) FROM audit_log`));
    await env.db.query(sql.unsafe`UPDATE audit_retention SET removed_through = ${seq}`);
    try {
      const expired = await changes(shop, `?after=${start}`);
      expect(expired.status).toBe(410);
      expect(expired.body.error.reason).toBe('cursor_expired');
      // Starting again: from=now, and (without a cursor) the oldest entry kept.
      const head = await changes(shop, '?from=now');
      expect(head.status).toBe(200);
      expect((await changes(shop, `?after=${head.body.meta.next_cursor}`)).status).toBe(200);
      expect((await changes(shop)).body.data).toEqual([]);
    } finally {
      await env.db.query(sql.unsafe`UPDATE audit_retention SET removed_through = 0`);
    }
  });

  it('should answer 404 for a deleted language and 410 for its cursor once the id is created again', async () => {
    const shop = await openShop(env);
    const cursor = (await changes(shop, '?from=now')).body.meta.next_cursor;
    expect((await shop.request('DELETE', `/api/v2/languages/${shop.lang}`)).status).toBe(204);
    const gone = await changes(shop);
    expect(gone.status).toBe(404);
    expect(gone.body.error.message).toContain(shop.lang);
    expect((await shop.request('PUT', '/api/v2/languages', { language: { id: shop.lang } })).status).toBe(200);
    const again = await changes(shop, `?after=${cursor}`);
    expect(again.status).toBe(410);
    expect(again.body.error.reason).toBe('cursor_expired');
  });
});

describe("when another account's token is used", () => {
  it('should answer 404 as for an unknown language', async () => {
    const shop = await openShop(env);
    await shop.save('product', { id: 'secret', name: 'x' });
    await env.drain();
    const stranger = await openShop(env);
    const response: HttpResponse = await env.request('GET', `/api/v2/languages/${shop.lang}/changes`, { token: stranger.token });
    expect(response.status).toBe(404);
    expect(response.body).toEqual({ error: { message: `Language '${shop.lang}' not found` } });
    // A cursor of the other account's language of the same id is not a way in either.
    const mine = await openShop(env, shop.lang);
    const cursor = (await changes(shop, '?from=now')).body.meta.next_cursor;
    const crossed = await changes(mine, `?after=${cursor}`);
    expect(crossed.status).toBe(410);
    expect(await langKeyOf(env, shop.lang, mine.account)).not.toBe(await langKeyOf(env, shop.lang, shop.account));
  });
});

// Last: it closes the environment's API.
describe('when the API shuts down while readers wait', () => {
  it('should answer them at once with what there is, rather than hold the close or cut them', async () => {
    const shop = await settledShop();
    const head = (await changes(shop, '?from=now')).body.meta.next_cursor;
    const waiting = changes(shop, `?after=${head}&wait=30`);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const closed = env.api.close();
    const answer = await waiting;
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ data: [], meta: { next_cursor: head, has_more: false } });
    await closed;
  });
});
