import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scrubErasure } from '../erasures/erasure-scrub.service.js';
import { waitForBulkJob } from './support/bulk-jobs.js';
import { startEnvironment, type TestEnvironment, uniqueName } from './support/harness.js';
import { pollUntil } from './support/poll.js';
import { type Receiver, startReceiver } from './support/receiver.js';
import { openShop, type Shop } from './support/v2-client.js';

/*
 * Erasure of a customer (interface §24) against the real API, worker,
 * Postgres and Redis: the profiles go in the serial order of their language,
 * then every stored copy of the person's data is scrubbed.
 */

let env: TestEnvironment;
const receivers: Receiver[] = [];

beforeAll(async () => {
  env = await startEnvironment({ env: { WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_RETRY_BASE_MS: '50' } });
});
afterAll(async () => {
  for (const receiver of receivers) await receiver.close();
  await env.close();
});

const NDJSON = { 'content-type': 'application/x-ndjson' };
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const inLanguage = (language: string, path: string) => `/api/v2/languages/${encodeURIComponent(language)}${path}`;

async function put(shop: Shop, language: string, segment: string, key: string, record: Record<string, unknown>) {
  const response = await shop.request('PUT', inLanguage(language, `/${segment}`), { [key]: record });
  expect(response.status, response.text).toBe(200);
  return response.body;
}

async function addLanguage(shop: Shop, id: string) {
  const response = await shop.request('PUT', '/api/v2/languages', { language: { id } });
  expect(response.status, response.text).toBe(200);
}

async function erase(shop: Shop, erasure: Record<string, unknown>) {
  const response = await shop.request('POST', '/api/v2/erasures', { erasure });
  expect(response.status, response.text).toBe(202);
  return response.body.erasure as Record<string, any>;
}

async function completed(shop: Shop, id: string) {
  const erasure = await pollUntil(
    async () => {
      const response = await shop.request('GET', `/api/v2/erasures/${id}`);
      expect(response.status, response.text).toBe(200);
      return response.body.erasure as Record<string, any>;
    },
    (value) => value['status'] === 'completed',
    { timeoutMs: 60_000 },
  );
  expect(erasure['status']).toBe('completed');
  return erasure;
}

/** Every feed entry of the language, with `include=record`. */
async function feed(shop: Shop, language: string) {
  const entries: Array<Record<string, any>> = [];
  let cursor = '';
  for (;;) {
    const response = await shop.request(
      'GET',
      inLanguage(language, `/changes?limit=1000&include=record${cursor ? `&after=${cursor}` : ''}`),
    );
    expect(response.status, response.text).toBe(200);
    entries.push(...response.body.data);
    cursor = response.body.meta.next_cursor;
    if (!response.body.meta.has_more) return entries;
  }
}

/** Every (table, column) of text, varchar, json, jsonb or text[] type whose rows outside `allowedLangKeys` mention `needle`. */
async function databaseMentions(needle: string, allowedLangKeys: number[]) {
  const columns = await env.db.any(sql.unsafe`
    SELECT c.table_name, c.column_name,
           EXISTS (SELECT 1 FROM information_schema.columns k
                   WHERE k.table_schema = c.table_schema AND k.table_name = c.table_name AND k.column_name = 'lang_key') AS has_lang
    FROM information_schema.columns c
    JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name AND t.table_type = 'BASE TABLE'
    WHERE c.table_schema = 'public'
      AND (c.data_type IN ('text', 'character varying', 'json', 'jsonb') OR c.udt_name IN ('_text', '_varchar'))
  `);
  const found: string[] = [];
  for (const column of columns as unknown as Array<{ table_name: string; column_name: string; has_lang: boolean }>) {
    const outside = column.has_lang ? sql.fragment`lang_key <> ALL(${sql.array(allowedLangKeys, 'int8')})` : sql.fragment`TRUE`;
    const count = await env.db.oneFirst(sql.unsafe`
      SELECT count(*)::int FROM ${sql.identifier([column.table_name])}
      WHERE ${sql.identifier([column.column_name])}::text ILIKE ${`%${needle}%`} AND ${outside}
    `);
    if (Number(count) > 0) found.push(`${column.table_name}.${column.column_name}`);
  }
  return found;
}

const auditRows = async (langKey: number) =>
  (await env.db.any(sql.unsafe`
    SELECT seq::int AS seq, kind, record_id, action, changes FROM audit_log WHERE lang_key = ${langKey} ORDER BY seq
  `)) as unknown as Array<{ seq: number; kind: string; record_id: string; action: string; changes: unknown }>;

const langKeyOf = async (shop: Shop, language: string) =>
  Number(
    await env.db.oneFirst(sql.unsafe`
      SELECT l.lang_key FROM languages l JOIN accounts a ON a.id = l.account_id
      WHERE a.name = ${shop.account} AND l.id = ${language} AND l.deleted_at IS NULL
    `),
  );

describe('when a customer is erased by email', () => {
  it('should delete their profiles in every language and leave no copy of the email', async () => {
    const shop = await openShop(env);
    const other = await openShop(env, shop.lang);
    const second = uniqueName('second');
    await addLanguage(shop, second);
    const email = `Jane.Doe.${Date.now()}@Example.com`;
    const lower = email.toLowerCase();

    const receiver = await startReceiver();
    receivers.push(receiver);
    const hook = await shop.request('PUT', '/api/v2/webhooks', { webhook: { id: 'crm', url: receiver.url } });
    expect(hook.status, hook.text).toBe(200);

    const lang = shop.lang;
    await put(shop, lang, 'profiles', 'profile', {
      id: 'jane',
      email,
      first_name: 'Jane',
      custom_attributes: [{ name: 'note', string_value: email }],
    });
    await put(shop, lang, 'profiles', 'profile', { id: 'kept', email: 'someone.else@example.com' });
    await put(shop, lang, 'products', 'product', { id: 'p1', name: 'Mug' });
    await put(shop, lang, 'orders', 'order', {
      id: 'o1',
      profile_id: 'jane',
      ordered_at: '2024-01-01T00:00:00Z',
      products: [{ id: 'p1', quantity: 1 }],
      custom_attributes: [{ name: 'contact', string_value: email }],
    });
    await put(shop, lang, 'reviews', 'review', { id: 'r1', product_id: 'p1', profile_id: 'jane', name: 'Jane D.', score: 5 });
    await put(shop, lang, 'shopping_carts', 'shopping_cart', {
      id: 'c1',
      profile_id: 'jane',
      recovery_url: 'https://shop.example/recover/abc',
      recovery_token: 'secret-token',
    });
    await put(shop, lang, 'purchase_events', 'purchase_event', { order_id: 'o1', profile_id: 'jane', visitor_token: 'visitor-1' });
    await put(shop, lang, 'global_unsubscribes', 'global_unsubscribe', { email: email.toUpperCase(), unsubscribed: true });
    await put(other, lang, 'profiles', 'profile', { id: 'jane', email });

    const upload = await env.request('POST', inLanguage(second, '/bulk'), {
      token: shop.token,
      raw: [
        JSON.stringify({ profile: { id: 'jane-2', email: lower.toUpperCase(), last_name: 'Doe' } }),
        JSON.stringify({ order: { id: 'o2', profile_id: 'jane-2', ordered_at: '2024-01-02T00:00:00Z' } }),
        JSON.stringify({ delete: { kind: 'profile', id: 'nobody' } }),
        // A line error that names the email (an unknown body key is named in its message).
        JSON.stringify({ [email]: { id: 'x' } }),
      ].join('\n'),
      headers: NDJSON,
    });
    expect(upload.status, upload.text).toBe(202);
    const job = await waitForBulkJob(env, shop.token, upload.headers.get('location')!);
    const lineErrors = await shop.request('GET', `${upload.headers.get('location')!}/errors`);
    expect(lineErrors.text.toLowerCase()).toContain(lower);
    await env.drain();
    const named = await pollUntil(
      async () => receiver.requests.some((request) => request.text.toLowerCase().includes(lower)),
      (value) => value,
      { timeoutMs: 30_000 },
    );
    expect(named).toBe(true);
    // Everything the receiver will get about the writes so far has been stored.
    await sleep(300);

    const langKey = await langKeyOf(shop, lang);
    const entriesBefore = await auditRows(langKey);

    const accepted = await erase(shop, { email: email.replace('Jane', 'jANE').replace('Example', 'EXAMPLE') });
    expect(accepted).toMatchObject({ status: 'queued', email_sha256: sha256(lower), profiles_erased: 0, finished_at: null });
    const done = await completed(shop, accepted['id']);
    expect(done).toMatchObject({ id: accepted['id'], status: 'completed', email_sha256: sha256(lower), profiles_erased: 2 });
    expect(done['finished_at']).toEqual(expect.any(String));
    await env.drain();

    // The profiles are gone; the other account's is untouched; what refers to them stays, without personal fields.
    expect((await shop.get('/profiles/jane')).status).toBe(404);
    expect((await shop.request('GET', inLanguage(second, '/profiles/jane-2'))).status).toBe(404);
    expect((await shop.get('/profiles/kept')).status).toBe(200);
    const untouched = await other.get('/profiles/jane');
    expect(untouched.status).toBe(200);
    expect(untouched.body.email).toBe(email);
    const order = await shop.get('/orders/o1');
    expect(order.body).toMatchObject({ id: 'o1', profile_id: 'jane', product_ids: ['p1'] });
    expect(order.text.toLowerCase()).not.toContain(lower);
    expect((await shop.request('GET', inLanguage(second, '/orders/o2'))).body).toMatchObject({ profile_id: 'jane-2' });
    expect((await shop.get('/reviews/r1')).body).toMatchObject({ profile_id: 'jane', name: null, score: 5 });
    expect((await shop.get('/shopping_carts/c1')).body).toMatchObject({ profile_id: 'jane', recovery_url: null, recovery_token: null });
    expect((await shop.get('/purchase_events/o1')).body).toMatchObject({ profile_id: 'jane', visitor_token: null });

    // Entries are scrubbed, never removed: the same ones, in the same order, then the erasure's own.
    const entriesAfter = await auditRows(langKey);
    expect(entriesAfter.slice(0, entriesBefore.length).map((row) => [row.seq, row.kind, row.action])).toEqual(
      entriesBefore.map((row) => [row.seq, row.kind, row.action]),
    );
    expect(entriesAfter.slice(entriesBefore.length).map((row) => [row.kind, row.record_id, row.action])).toEqual([
      ['profile', 'jane', 'erase'],
      ['global_unsubscribe', sha256(lower), 'delete'],
    ]);
    expect(entriesBefore.some((row) => JSON.stringify(row).toLowerCase().includes(lower))).toBe(true);

    // One erase entry per erased profile, record null.
    for (const [language, id] of [
      [lang, 'jane'],
      [second, 'jane-2'],
    ] as const) {
      const entries = await feed(shop, language);
      const erased = entries.filter((entry) => entry.action === 'erase');
      expect(erased).toEqual([expect.objectContaining({ kind: 'profile', record_id: id, changes: {}, record: null })]);
      expect(JSON.stringify(entries).toLowerCase()).not.toContain(lower);
    }

    const responses = [
      await shop.get('/profiles?per_page=250'),
      await shop.get('/orders?per_page=250'),
      await shop.get('/reviews?per_page=250'),
      await shop.get('/shopping_carts?per_page=250'),
      await shop.get('/purchase_events?per_page=250'),
      await shop.get('/global_unsubscribes?per_page=250'),
      await shop.request('GET', inLanguage(second, '/profiles?per_page=250')),
      await shop.request('GET', `${upload.headers.get('location')!}/errors`),
      await shop.request('GET', '/api/v2/webhooks/crm/deliveries?per_page=250'),
      await shop.request('GET', '/api/v2/erasures'),
      await env.request('GET', `/admin/api/audit?limit=1000&account=${shop.account}`, { headers: env.adminHeaders }),
    ];
    for (const response of responses) {
      expect(response.status, response.text).toBe(200);
      expect(response.text.toLowerCase()).not.toContain(lower);
    }
    expect((await shop.get('/global_unsubscribes')).body.data).toEqual([]);
    expect(job.status).toBe('completed');

    // Only the other account's rows hold the email, in any letter case.
    expect(await databaseMentions(lower, [await langKeyOf(other, lang)])).toEqual([]);
    expect(await databaseMentions(lower, [])).not.toEqual([]);
  });
});

describe('when a customer is erased by profile_id in one language', () => {
  it('should erase that profile there only', async () => {
    const shop = await openShop(env);
    const second = uniqueName('second');
    await addLanguage(shop, second);
    const email = `pat.${Date.now()}@example.com`;
    await put(shop, shop.lang, 'profiles', 'profile', { id: 'pat', email });
    await put(shop, second, 'profiles', 'profile', { id: 'pat', email });
    await env.drain();

    const accepted = await erase(shop, { profile_id: 'pat', languages: [shop.lang] });
    expect(accepted['email_sha256']).toBeNull();
    const done = await completed(shop, accepted['id']);
    expect(done).toMatchObject({ profiles_erased: 1, email_sha256: sha256(email) });
    expect((await shop.get('/profiles/pat')).status).toBe(404);
    expect((await shop.request('GET', inLanguage(second, '/profiles/pat'))).status).toBe(200);
    const erased = (await feed(shop, shop.lang)).filter((entry) => entry.action === 'erase');
    expect(erased.map((entry) => entry.record_id)).toEqual(['pat']);
    expect((await feed(shop, second)).some((entry) => entry.action === 'erase')).toBe(false);
  });
});

describe('when profiles with the email are written around the erasure', () => {
  it('should erase the one written before it was accepted and keep the one written after', async () => {
    const shop = await openShop(env);
    const email = `race.${Date.now()}@example.com`;
    await put(shop, shop.lang, 'profiles', 'profile', { id: 'before', email, first_name: 'Old' });
    const accepted = await erase(shop, { email });
    // Profiles are matched by email (interface §4.5): the API may still see the first one and write this over it.
    const later = await put(shop, shop.lang, 'profiles', 'profile', { id: 'after', email: email.toUpperCase() });
    const done = await completed(shop, accepted['id']);
    expect(done['profiles_erased']).toBe(1);
    await env.drain();
    const kept = await shop.get(`/profiles/${later.id}`);
    expect(kept.body).toMatchObject({ id: later.id, email: email.toUpperCase(), first_name: null });
    if (later.id !== 'before') expect((await shop.get('/profiles/before')).status).toBe(404);
    const actions = (await feed(shop, shop.lang))
      .filter((entry) => entry.kind === 'profile')
      .map((entry) => [entry.record_id, entry.action]);
    expect(actions).toEqual([
      ['before', 'create'],
      ['before', 'erase'],
      [later.id, 'create'],
    ]);
  });
});

describe("when a profile's own change was set aside before the erasure", () => {
  it('should erase the profile the API shows and discard its set-aside change', async () => {
    const shop = await openShop(env);
    const email = `poison.${Date.now()}@example.com`;
    // The worker cannot apply this profile's change: it is set aside, while the API already shows the profile.
    await env.db.query(
      sql.unsafe`ALTER TABLE records ADD CONSTRAINT erasure_poison CHECK (w_ref IS NULL OR w_ref NOT LIKE 'poison.%') NOT VALID`,
    );
    try {
      await put(shop, shop.lang, 'profiles', 'profile', { id: 'stuck', email });
      await put(shop, shop.lang, 'profiles', 'profile', { id: 'stuck-2', email: email.replace('poison.', 'poison.two.') });
      const setAside = await pollUntil(
        async () => (await env.request('GET', '/admin/api/set-aside?limit=1000', { headers: env.adminHeaders })).body.data as any[],
        (rows) => rows.filter((row) => row.record_id.startsWith('stuck')).length === 2,
        { timeoutMs: 60_000, intervalMs: 200 },
      );
      expect(setAside.filter((row) => row.record_id.startsWith('stuck'))).toHaveLength(2);
    } finally {
      await env.db.query(sql.unsafe`ALTER TABLE records DROP CONSTRAINT erasure_poison`);
    }
    expect((await shop.get('/profiles/stuck')).status).toBe(200);

    const accepted = await erase(shop, { email });
    const done = await completed(shop, accepted['id']);
    expect(done['profiles_erased']).toBe(1);
    expect((await shop.get('/profiles/stuck')).status).toBe(404);
    const left = await env.request('GET', '/admin/api/set-aside?limit=1000', { headers: env.adminHeaders });
    expect(left.body.data.some((row: any) => row.record_id === 'stuck')).toBe(false);
    const actions = (await feed(shop, shop.lang)).filter((entry) => entry.record_id === 'stuck').map((entry) => entry.action);
    expect(actions).toEqual(['erase', 'discard']);
    expect(await databaseMentions(email, [])).toEqual([]);

    const byId = await completed(shop, (await erase(shop, { profile_id: 'stuck-2' }))['id']);
    expect(byId).toMatchObject({ profiles_erased: 1, email_sha256: sha256(email.replace('poison.', 'poison.two.')) });
    expect((await shop.get('/profiles/stuck-2')).status).toBe(404);
    expect(await databaseMentions(email.replace('poison.', 'poison.two.'), [])).toEqual([]);
  }, 120_000);
});

describe('when the scrub of an erasure runs again (a job run twice, or after a crash)', () => {
  it('should change nothing more and stay completed', async () => {
    const shop = await openShop(env);
    const email = `again.${Date.now()}@example.com`;
    await put(shop, shop.lang, 'profiles', 'profile', { id: 'again', email, first_name: 'Ann' });
    await put(shop, shop.lang, 'products', 'product', { id: 'p', name: 'Mug' });
    await put(shop, shop.lang, 'reviews', 'review', { id: 'r', product_id: 'p', profile_id: 'again', name: 'Ann' });
    const accepted = await erase(shop, { email });
    const done = await completed(shop, accepted['id']);
    const langKey = await langKeyOf(shop, shop.lang);
    const scrubbed = await auditRows(langKey);
    await env.db.query(sql.unsafe`UPDATE erasures SET status = 'running', finished_at = NULL WHERE id = ${accepted['id']}`);
    expect(await scrubErasure(env.db, accepted['id'])).toBe(0);
    expect(await auditRows(langKey)).toEqual(scrubbed);
    const again = await shop.request('GET', `/api/v2/erasures/${accepted['id']}`);
    expect(again.body.erasure).toMatchObject({ status: 'completed', profiles_erased: done['profiles_erased'] });
    expect(scrubbed.filter((row) => row.kind === 'review').map((row) => row.changes)).toEqual([{ product_id: 'p', profile_id: 'again' }]);
  });
});

describe('when the request is not a valid erasure', () => {
  it.each([
    ['both email and profile_id', { erasure: { email: 'a@example.com', profile_id: 'x' } }, 'invalid_parameters'],
    ['neither', { erasure: {} }, 'missing_parameters'],
    ['an unknown field', { erasure: { email: 'a@example.com', name: 'x' } }, 'unknown_parameters'],
    ['a bad email', { erasure: { email: 'not-an-email' } }, 'invalid_parameters'],
    ['an unknown language', { erasure: { email: 'a@example.com', languages: ['nope'] } }, 'invalid_parameters'],
    ['an integer profile_id', { erasure: { profile_id: 5 } }, 'invalid_parameters'],
    ['no envelope', { email: 'a@example.com' }, 'missing_parameters'],
  ])('should answer 400 for %s', async (_, body, reason) => {
    const shop = await openShop(env);
    const response = await shop.request('POST', '/api/v2/erasures', body);
    expect(response.status, response.text).toBe(400);
    expect(response.body.error[reason]).toEqual(expect.any(Array));
  });

  it("should answer 404 for another account's erasure, and list only the account's own", async () => {
    const shop = await openShop(env);
    const other = await openShop(env);
    const accepted = await erase(shop, { email: `x.${Date.now()}@example.com` });
    const foreign = await other.request('GET', `/api/v2/erasures/${accepted['id']}`);
    expect(foreign.status).toBe(404);
    expect(foreign.body).toEqual({ error: 'Erasure not found' });
    expect((await other.request('GET', '/api/v2/erasures/not-a-uuid')).status).toBe(404);
    expect((await other.request('GET', '/api/v2/erasures')).body).toMatchObject({ data: [], meta: { total: 0 } });
    const mine = await shop.request('GET', '/api/v2/erasures?page=1&per_page=5');
    expect(mine.body.data.map((item: any) => item.id)).toEqual([accepted['id']]);
    expect((await shop.request('GET', '/api/v2/erasures?email=x')).status).toBe(400);
  });
});
