import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEnvironment, type TestEnvironment } from './support/harness.js';
import { pollUntil } from './support/poll.js';

/*
 * Set-aside changes in the admin API: a change the worker cannot apply (here
 * because of a database constraint an operator added by mistake) is listed,
 * retried once the cause is fixed, or discarded with an audit entry naming
 * the admin user.
 */

let env: TestEnvironment;
let token: string;
const JSON_HEADERS = () => ({ ...env.adminHeaders, 'content-type': 'application/json' });

/** The cause: no link may point at a category named "C-blocked-…". */
const block = () => env.db.query(sql.unsafe`ALTER TABLE links ADD CONSTRAINT ops_blocked CHECK (b NOT LIKE 'C-blocked%') NOT VALID`);
const fix = () => env.db.query(sql.unsafe`ALTER TABLE links DROP CONSTRAINT ops_blocked`);

const setAside = async (query = '') => {
  const response = await env.request('GET', `/admin/api/set-aside${query}`, { headers: env.adminHeaders });
  expect(response.status, response.text).toBe(200);
  return response.body as { data: Array<Record<string, any>>; next_after: number | null };
};

/** Writes a product whose category link the constraint refuses, and waits until the worker has set it aside. */
async function poisonedWrite(language: string, product: string, requestId: string) {
  const response = await env.request('POST', `/api/v1/languages/${language}/products`, {
    token,
    headers: { 'x-request-id': requestId },
    body: { product: { id: product, name: product, category_ids: [`C-blocked-${product}`, 'C-fine'] } },
  });
  expect(response.status).toBe(200);
  const page = await pollUntil(
    () => setAside(),
    (current) => current.data.some((change) => change.request_id === requestId),
    { timeoutMs: 60_000, intervalMs: 200 },
  );
  const change = page.data.find((each) => each.request_id === requestId);
  expect(change, JSON.stringify(page)).toBeDefined();
  return change!;
}

const categoriesOf = async (language: string, product: string) =>
  (await env.request('GET', `/api/v2/languages/${language}/products/${product}`, { token })).body.category_ids;

const auditOf = async (recordId: string) =>
  (await env.request('GET', `/admin/api/audit?record_id=${recordId}`, { headers: env.adminHeaders })).body.data as Array<
    Record<string, any>
  >;

beforeAll(async () => {
  env = await startEnvironment();
  token = await env.token();
  for (const id of ['nl', 'de']) {
    const response = await env.request('POST', '/api/v1/languages', { token, body: { language: { id, name: id, code: id } } });
    expect(response.status).toBe(200);
  }
  await env.drain();
});
afterAll(() => env.close());

describe('when the worker sets a change aside', () => {
  let change: Record<string, any>;

  beforeAll(async () => {
    await block();
    change = await poisonedWrite('nl', 'P1', 'req-poisoned');
    // A later change of the same language goes on being applied.
    const later = await env.request('POST', '/api/v1/languages/nl/products', {
      token,
      body: { product: { id: 'P2', name: 'Later', category_ids: ['C-fine'] } },
    });
    expect(later.status).toBe(200);
    await env.drain(30_000);
  }, 90_000);

  it('should list it with its language, kind, record, request id, error and times', async () => {
    expect(change).toEqual({
      seq: expect.any(Number),
      account: expect.any(String),
      language_id: 'nl',
      kind: 'product',
      action: 'upsert',
      record_id: 'P1',
      actor: expect.any(String),
      request_id: 'req-poisoned',
      error: expect.stringContaining('ops_blocked'),
      attempts: 3,
      accepted_at: expect.any(String),
      failed_at: expect.any(String),
    });
    expect(Date.parse(change['failed_at'])).toBeGreaterThanOrEqual(Date.parse(change['accepted_at']));
    expect(await categoriesOf('nl', 'P2')).toEqual(['C-fine']);
    expect(await categoriesOf('nl', 'P1')).toEqual([]);
    const status = await env.request('GET', '/admin/api/sync-status', { headers: env.adminHeaders });
    expect(status.body.failed).toBeGreaterThanOrEqual(1);
  });

  it('should filter by language and kind, and page with after and next_after', async () => {
    expect((await setAside('?language_id=de')).data).toEqual([]);
    expect((await setAside('?kind=category')).data).toEqual([]);
    expect((await setAside('?language_id=nl&kind=product')).data.map((each) => each.seq)).toEqual([change['seq']]);
    expect((await setAside(`?account=${encodeURIComponent(change['account'])}`)).data.map((each) => each.seq)).toEqual([change['seq']]);
    expect((await setAside('?account=no-such-shop&language_id=nl')).data).toEqual([]);
    expect(await setAside('?limit=1')).toMatchObject({ next_after: null });
    expect((await setAside(`?after=${change['seq']}`)).data).toEqual([]);
    const bad = await env.request('GET', '/admin/api/set-aside?limit=0', { headers: env.adminHeaders });
    expect(bad.status).toBe(400);
  });

  it('should apply it with all its effects when it is retried after the cause is fixed', async () => {
    await fix();
    const response = await env.request('POST', `/admin/api/set-aside/${change['seq']}/retry`, { headers: JSON_HEADERS(), raw: '{}' });
    expect(response.status, response.text).toBe(200);
    expect(response.body).toEqual({ retried: [change['seq']] });
    await env.drain(30_000);
    expect((await setAside()).data).toEqual([]);
    expect((await env.request('GET', '/admin/api/sync-status', { headers: env.adminHeaders })).body).toEqual({ pending: 0, failed: 0 });
    // Its effects: the stub category, both links, and their audit entries with the original request id.
    expect(await categoriesOf('nl', 'P1')).toEqual(['C-blocked-P1', 'C-fine']);
    const stub = await env.request('GET', '/api/v2/languages/nl/categories/C-blocked-P1', { token });
    expect(stub.status).toBe(200);
    const audit = await auditOf('P1');
    expect(
      audit.filter((entry) => entry.request_id === 'req-poisoned').map((entry) => `${entry.action}:${JSON.stringify(entry.changes)}`),
    ).toEqual([expect.stringMatching(/^create:/), 'link:{"category_ids":"C-blocked-P1"}', 'link:{"category_ids":"C-fine"}']);
  });
});

describe('when set-aside changes are retried all at once', () => {
  it('should put back every change matching the filter, and only those', async () => {
    await block();
    const dutch = await poisonedWrite('nl', 'P10', 'req-nl');
    const german = await poisonedWrite('de', 'P20', 'req-de');
    await fix();
    const otherShop = await env.request('POST', '/admin/api/set-aside/retry', {
      headers: JSON_HEADERS(),
      body: { account: 'no-such-shop' },
    });
    expect(otherShop.body).toEqual({ retried: [] });
    const onlyGerman = await env.request('POST', '/admin/api/set-aside/retry', { headers: JSON_HEADERS(), body: { language_id: 'de' } });
    expect(onlyGerman.body).toEqual({ retried: [german['seq']] });
    const rest = await env.request('POST', '/admin/api/set-aside/retry', { headers: JSON_HEADERS(), body: {} });
    expect(rest.body).toEqual({ retried: [dutch['seq']] });
    await env.drain(30_000);
    expect(await categoriesOf('nl', 'P10')).toEqual(['C-blocked-P10', 'C-fine']);
    expect(await categoriesOf('de', 'P20')).toEqual(['C-blocked-P20', 'C-fine']);
    const nothing = await env.request('POST', '/admin/api/set-aside/retry', { headers: JSON_HEADERS(), body: {} });
    expect(nothing.body).toEqual({ retried: [] });
  }, 120_000);
});

describe('when a set-aside change is discarded', () => {
  it('should remove it for good and write an audit entry naming the admin user', async () => {
    await block();
    const change = await poisonedWrite('nl', 'P30', 'req-discarded');
    await fix();
    const response = await env.request('DELETE', `/admin/api/set-aside/${change['seq']}`, {
      headers: { ...env.adminHeaders, 'x-request-id': 'req-operator' },
    });
    expect(response.status, response.text).toBe(200);
    expect(response.body).toEqual({ discarded: change });
    expect((await setAside()).data).toEqual([]);
    await env.drain(30_000);
    // Never applied: the record's own fields stay as acknowledged, its links never come.
    expect(await categoriesOf('nl', 'P30')).toEqual([]);
    const [entry] = (await auditOf('P30')).filter((each) => each.action === 'discard');
    expect(entry).toMatchObject({
      language_id: 'nl',
      kind: 'product',
      record_id: 'P30',
      action: 'discard',
      actor: `admin:${env.config.ADMIN_USER}`,
      request_id: 'req-operator',
      changes: { seq: change['seq'], action: 'upsert', request_id: 'req-discarded', error: expect.stringContaining('ops_blocked') },
    });
    const again = await env.request('DELETE', `/admin/api/set-aside/${change['seq']}`, { headers: env.adminHeaders });
    expect(again.status).toBe(404);
  }, 90_000);
});

describe('when set-aside changes are acted on wrongly', () => {
  const notFound = { error: 'Set-aside change not found' };
  const invalidSeq = { error: { message: 'Invalid parameters: seq', invalid_parameters: ['seq'] } };
  const admin = () => env.adminHeaders;
  it.each<[string, string, string, () => Record<string, string>, string | undefined, number, unknown]>([
    ['retry of an unknown change', 'POST', '/admin/api/set-aside/999999/retry', JSON_HEADERS, '{}', 404, notFound],
    ['retry of something that is no seq', 'POST', '/admin/api/set-aside/abc/retry', JSON_HEADERS, '{}', 400, invalidSeq],
    ['retry of a seq past any number', 'POST', '/admin/api/set-aside/99999999999999999999/retry', JSON_HEADERS, '{}', 400, invalidSeq],
    ['discard of something that is no seq', 'DELETE', '/admin/api/set-aside/1.5', admin, undefined, 400, invalidSeq],
    ['discard of a negative seq', 'DELETE', '/admin/api/set-aside/-1', admin, undefined, 400, invalidSeq],
    ['discard of an unknown change', 'DELETE', '/admin/api/set-aside/999999', admin, undefined, 404, notFound],
    [
      'a retry sent as a form (what another site could make a browser send)',
      'POST',
      '/admin/api/set-aside/retry',
      () => ({ ...env.adminHeaders, 'content-type': 'application/x-www-form-urlencoded' }),
      'a=1',
      415,
      { error: { message: expect.stringContaining('application/json') } },
    ],
    [
      'a retry without a content type',
      'POST',
      '/admin/api/set-aside/1/retry',
      admin,
      undefined,
      415,
      { error: { message: 'Unsupported content type: send application/json' } },
    ],
    [
      'a retry filter with an unknown field',
      'POST',
      '/admin/api/set-aside/retry',
      JSON_HEADERS,
      '{"colour":"red"}',
      400,
      { error: { message: expect.any(String), unknown_parameters: ['colour'] } },
    ],
    [
      'the list without credentials',
      'GET',
      '/admin/api/set-aside',
      () => ({}),
      undefined,
      401,
      { error: 'Admin credentials are required' },
    ],
  ])('should answer %s as documented', async (_case, method, path, headers, raw, status, body) => {
    const response = await env.request(method, path, { headers: headers(), raw });
    expect(response.status, response.text).toBe(status);
    expect(response.body).toEqual(body);
  });
});
