import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEnvironment, type TestEnvironment } from './support/harness.js';
import { auditOf, langKeyOf, liveRecord, recordCount } from './support/state.js';
import { ids, openShop, type Shop } from './support/v2-client.js';

/** interface §16-21: global unsubscribes, purchase events, attribute definitions, languages, the profiles filter, tenancy. */

let env: TestEnvironment;
let shop: Shop;

beforeAll(async () => {
  env = await startEnvironment();
  shop = await openShop(env);
});
afterAll(async () => {
  await env.close();
});

const putIn = (target: Shop, segment: string, key: string, record: unknown) =>
  target.request('PUT', `/api/v2/languages/${target.lang}/${segment}`, { [key]: record });
const unsubscribe = (email: string, unsubscribed: boolean, target = shop) =>
  putIn(target, 'global_unsubscribes', 'global_unsubscribe', { email, unsubscribed });
const profile = (id: string, email: string, extra: Record<string, unknown> = {}) =>
  putIn(shop, 'profiles', 'profile', { id, email, ...extra });

describe('when a global unsubscribe is PUT', () => {
  it('should answer the entry, stored in lower case, with the oldest profile of that email', async () => {
    await profile('older', 'Ann@Example.test');
    await profile('newer', 'x@example.test');
    await profile('newer', 'ann@example.TEST');
    const response = await unsubscribe('ANN@example.test', true);
    expect(response.status).toBe(200);
    expect(response.body).toEqual({
      profile_email: 'ann@example.test',
      unsubscribed: true,
      profile_id: 'older',
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
  });

  it('should set unsubscribed on every profile of the language with that email, once drained, audited', async () => {
    await env.drain();
    expect((await shop.get('/profiles/older')).body.unsubscribed).toBe(true);
    expect((await shop.get('/profiles/newer')).body.unsubscribed).toBe(true);
    const audit = await auditOf(env, shop.lang, { kind: 'profile', recordId: 'older', account: shop.account });
    expect(audit.at(-1)).toMatchObject({ action: 'update', actor: 'system', changes: { unsubscribed: true } });
    const own = await auditOf(env, shop.lang, { kind: 'global_unsubscribe', account: shop.account });
    expect(own.map((entry) => [entry.record_id, entry.action])).toEqual([['ann@example.test', 'create']]);
  });

  it('should update the entry on a re-subscription and keep listing it with false', async () => {
    const first = (await shop.get('/global_unsubscribes')).body.data[0];
    const again = await unsubscribe('ann@example.test', false);
    expect(again.body).toMatchObject({ profile_email: 'ann@example.test', unsubscribed: false, created_at: first.created_at });
    await env.drain();
    expect((await shop.get('/profiles/older')).body.unsubscribed).toBe(false);
    const list = await shop.get(`/global_unsubscribes?updated_after=${encodeURIComponent(first.updated_at)}`);
    expect(list.body.data).toEqual([again.body]);
  });

  it('should leave later profile writes alone and keep the entry when a profile is deleted', async () => {
    await unsubscribe('late@example.test', true);
    await env.drain();
    await profile('late', 'late@example.test');
    await env.drain();
    expect((await shop.get('/profiles/late')).body.unsubscribed).toBeNull();
    expect((await shop.del('/profiles/late')).status).toBe(204);
    const list = await shop.get('/global_unsubscribes');
    expect(
      list.body.data.map((entry: { profile_email: string; profile_id: string | null }) => [entry.profile_email, entry.profile_id]),
    ).toEqual([
      ['ann@example.test', 'older'],
      ['late@example.test', null],
    ]);
  });

  it('should refuse a bad email, a missing value and a delete', async () => {
    expect((await unsubscribe('not-an-email', true)).body.error.invalid_parameters).toEqual(['email']);
    expect((await putIn(shop, 'global_unsubscribes', 'global_unsubscribe', { email: 'a@b.test' })).body.error.missing_parameters).toEqual([
      'unsubscribed',
    ]);
    expect((await shop.del('/global_unsubscribes/ann@example.test')).body).toEqual({ error: 'Not found' });
  });
});

describe('when a purchase event is PUT', () => {
  it('should need the order, stub the profile, and answer the event', async () => {
    const missing = await putIn(shop, 'purchase_events', 'purchase_event', { order_id: 'po', profile_id: 'pu', visitor_token: 't1' });
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({ error: 'Order not found' });
    await putIn(shop, 'orders', 'order', { id: 'po', profile_id: 'pu', ordered_at: '2024-01-01' });
    const saved = await putIn(shop, 'purchase_events', 'purchase_event', { order_id: 'po', profile_id: 'pu2', visitor_token: 't1' });
    expect(saved.status).toBe(200);
    expect(saved.body).toEqual({
      order_id: 'po',
      profile_id: 'pu2',
      visitor_token: 't1',
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    await env.drain();
    expect(await liveRecord(env, shop.lang, 'profile', 'pu2', shop.account)).not.toBeNull();
  });

  it('should keep one event per order: a repeat updates profile_id and visitor_token', async () => {
    const again = await putIn(shop, 'purchase_events', 'purchase_event', { order_id: 'po', profile_id: 'pu', visitor_token: 't2' });
    expect(again.body).toMatchObject({ order_id: 'po', profile_id: 'pu', visitor_token: 't2' });
    expect((await shop.get('/purchase_events')).body.data).toEqual([again.body]);
    expect((await shop.get('/purchase_events/po')).body).toEqual(again.body);
    expect((await shop.get('/purchase_events/none')).body).toEqual({ error: 'Purchase event not found' });
    await env.drain();
    const audit = await auditOf(env, shop.lang, { kind: 'purchase_event', account: shop.account });
    expect(audit.map((entry) => entry.action)).toEqual(['create', 'update']);
  });

  it('should stay when the order and the profile are deleted', async () => {
    expect((await shop.del('/orders/po')).status).toBe(204);
    expect((await shop.del('/profiles/pu')).status).toBe(204);
    await env.drain();
    expect((await shop.get('/purchase_events/po')).status).toBe(200);
  });
});

describe('when custom attribute definitions are PUT', () => {
  const define = (target: Shop, definition: Record<string, unknown>) =>
    target.request('PUT', '/api/v2/custom_attributes', { custom_attribute: definition });

  it('should derive the handle from the name and update by resource and handle', async () => {
    const created = await define(shop, { name: 'Shoe Size (EU)', description: 'EU size', datatype: 'integer', resource: 'product' });
    expect(created.status).toBe(200);
    expect(created.body).toEqual({
      handle: 'shoe_size_eu',
      name: 'Shoe Size (EU)',
      description: 'EU size',
      datatype: 'integer',
      resource: 'product',
    });
    const updated = await define(shop, { name: 'shoe-size eu', description: 'Size', datatype: 'float', resource: 'product' });
    expect(updated.body).toEqual({
      handle: 'shoe_size_eu',
      name: 'shoe-size eu',
      description: 'Size',
      datatype: 'float',
      resource: 'product',
    });
    await define(shop, { name: 'Shoe size EU', description: 'On profiles', datatype: 'date', resource: 'profile' });
    const list = await shop.request('GET', '/api/v2/custom_attributes');
    expect(list.body.meta).toEqual({ current_page: 1, per_page: 10, total: 2 });
    expect(list.body.data.map((item: { resource: string }) => item.resource)).toEqual(['product', 'profile']);
    const filtered = await shop.request('GET', '/api/v2/custom_attributes?resource=profile');
    expect(filtered.body.data).toEqual([
      { handle: 'shoe_size_eu', name: 'Shoe size EU', description: 'On profiles', datatype: 'date', resource: 'profile' },
    ]);
  });

  it.each([
    [{ name: '!!!', description: '', datatype: 'string', resource: 'product' }, 'invalid_parameters', ['name']],
    [{ name: 'x', description: '', datatype: 'decimal', resource: 'product' }, 'invalid_parameters', ['datatype']],
    [{ name: 'x', description: '', datatype: 'string', resource: 'language' }, 'invalid_parameters', ['resource']],
    [{ name: 'x', datatype: 'string', resource: 'product' }, 'missing_parameters', ['description']],
  ])('should refuse %j', async (definition, errorClass, names) => {
    const response = await define(shop, definition);
    expect(response.status).toBe(400);
    expect(response.body.error[errorClass]).toEqual(names);
  });

  it('should refuse a bad resource filter, never reject a record write, and keep accounts apart', async () => {
    expect((await shop.request('GET', '/api/v2/custom_attributes?resource=nope')).status).toBe(400);
    const saved = await shop.save('product', { id: 'ca', custom_attributes: [{ name: 'shoe_size_eu', string_value: 'not a number' }] });
    expect(saved['custom_attributes']).toEqual([{ name: 'shoe_size_eu', string_value: 'not a number' }]);
    const other = await openShop(env);
    expect((await other.request('GET', '/api/v2/custom_attributes')).body.meta.total).toBe(0);
    await define(other, { name: 'Shoe size EU', description: 'Mine', datatype: 'string', resource: 'product' });
    const mine = await shop.request('GET', '/api/v2/custom_attributes?resource=product');
    expect(mine.body.data[0].description).toBe('Size');
  });
});

describe('when languages are written through v2', () => {
  it('should create one with only its id, every other field null, and merge updates', async () => {
    const created = await shop.request('PUT', '/api/v2/languages', { language: { id: 'only-id' } });
    expect(created.status).toBe(200);
    expect(created.body).toEqual({ id: 'only-id', name: null, code: null, active: null, url: null });
    const updated = await shop.request('PUT', '/api/v2/languages', { language: { id: 'only-id', name: 'Only', url: 'https://x.test' } });
    expect(updated.body).toEqual({ id: 'only-id', name: 'Only', code: null, active: null, url: 'https://x.test' });
    expect((await shop.request('PUT', '/api/v2/languages', { language: { id: 'only-id', url: null } })).body.url).toBeNull();
    expect((await shop.request('GET', '/api/v2/languages/only-id')).body.name).toBe('Only');
    expect((await shop.request('PUT', '/api/v2/languages', { language: { id: 5 } })).body.error.invalid_parameters).toEqual(['id']);
  });

  it('should delete with 204, purge its records, and take the id again at once, empty', async () => {
    const lang = 'doomed-lang';
    await shop.request('PUT', '/api/v2/languages', { language: { id: lang, name: 'D', code: 'dd' } });
    await shop.request('PUT', `/api/v2/languages/${lang}/brands`, { brand: { id: 'b', name: 'B' } });
    const key = await langKeyOf(env, lang, shop.account);
    const deleted = await shop.request('DELETE', `/api/v2/languages/${lang}`);
    expect(deleted.status).toBe(204);
    expect(deleted.text).toBe('');
    expect((await shop.request('DELETE', `/api/v2/languages/${lang}`)).body).toEqual({
      error: { message: `Language '${lang}' not found` },
    });
    expect((await shop.request('PUT', '/api/v2/languages', { language: { id: lang } })).status).toBe(200);
    expect((await shop.request('GET', `/api/v2/languages/${lang}/brands`)).body.meta.total).toBe(0);
    await env.drain();
    for (let attempt = 0; attempt < 100 && (await recordCount(env, key)) > 0; attempt += 1) await new Promise((r) => setTimeout(r, 100));
    expect(await recordCount(env, key)).toBe(0);
    const audit = await auditOf(env, lang, { kind: 'language', account: shop.account });
    expect(audit.map((entry) => entry.action)).toEqual(['create']);
  });

  it("should answer 404 for another account's language on every path", async () => {
    const other = await openShop(env);
    for (const [method, path] of [
      ['GET', `/api/v2/languages/${shop.lang}`],
      ['DELETE', `/api/v2/languages/${shop.lang}`],
      ['GET', `/api/v2/languages/${shop.lang}/global_unsubscribes`],
      ['PUT', `/api/v2/languages/${shop.lang}/purchase_events`],
    ] as const) {
      const response = await other.request(method, path, method === 'PUT' ? { purchase_event: {} } : undefined);
      expect(response.status, `${method} ${path}`).toBe(404);
      expect(response.body).toEqual({ error: { message: `Language '${shop.lang}' not found` } });
    }
    expect(
      (
        await other.request('PUT', `/api/v2/languages/${other.lang}/global_unsubscribes`, {
          global_unsubscribe: { email: 'ann@example.test', unsubscribed: true },
        })
      ).status,
    ).toBe(200);
    expect(
      (await shop.get('/global_unsubscribes')).body.data.find((e: { profile_email: string }) => e.profile_email === 'ann@example.test')
        .unsubscribed,
    ).toBe(false);
  });
});

describe('when profiles are listed by email', () => {
  it('should keep only profiles with one of emails[], case-insensitively, counting the filtered set', async () => {
    const list = await shop.get('/profiles?emails[]=ANN@example.test&emails[]=nobody@example.test');
    expect(ids(list.body.data)).toEqual(['older', 'newer']);
    expect(list.body.meta.total).toBe(2);
    const one = await shop.get('/profiles?emails[]=ann@example.test&per_page=1&page=2');
    expect(ids(one.body.data)).toEqual(['newer']);
    expect(one.body.meta).toEqual({ current_page: 2, per_page: 1, total: 2, next_cursor: null });
  });

  it('should refuse a value that is not an email, more than 250 values, and other repeated parameters', async () => {
    expect((await shop.get('/profiles?emails[]=nope')).body.error.invalid_parameters).toEqual(['emails[]']);
    const many = Array.from({ length: 251 }, (_, index) => `emails[]=p${index}@example.test`).join('&');
    expect((await shop.get(`/profiles?${many}`)).body.error.invalid_parameters).toEqual(['emails[]']);
    expect((await shop.get('/profiles?page=1&page=2')).status).toBe(400);
    expect((await shop.get('/brands?emails[]=a@b.test')).body.error.unknown_parameters).toEqual(['emails[]']);
  });
});
