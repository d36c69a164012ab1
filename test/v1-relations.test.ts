import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEnvironment, type TestEnvironment, uniqueName } from './support/harness.js';
import { pollUntil } from './support/poll.js';
import {
  auditOf,
  type LinkRel,
  langKeyOf,
  linkCount,
  linksOf,
  liveIds,
  liveRecord,
  type RecordKindName,
  recordCount,
  type StoredRow,
} from './support/state.js';
import { SEGMENT } from './support/v2-client.js';

/**
 * interface §5-6: every row sends its
 * requests in a fresh language, waits until the worker has applied all
 * queued effects, then checks the stored state in Postgres.
 */

type Body = Record<string, unknown>;

interface Request {
  method: 'POST' | 'DELETE';
  path: string;
  body?: unknown;
}
/** A request, built for the row's language. */
type Step = (languageId: string) => Request;

const post =
  (kind: RecordKindName, record: Body): Step =>
  (lang) => ({ method: 'POST', path: `/api/v1/languages/${lang}/${SEGMENT[kind]}`, body: { [kind]: record } });
const del =
  (kind: RecordKindName, id: string): Step =>
  (lang) => ({ method: 'DELETE', path: `/api/v1/languages/${lang}/${SEGMENT[kind]}/${id}` });
const deleteLanguage: Step = (lang) => ({ method: 'DELETE', path: `/api/v1/languages/${lang}` });
const createLanguage: Step = (lang) => ({
  method: 'POST',
  path: '/api/v1/languages/',
  body: { language: { id: lang, name: lang, code: 'xx' } },
});

/** The stored state of the row's language, once drained. */
interface View {
  lang: string;
  /** lang_key of the language before the row's requests ran. */
  langKeyBefore: number;
  record(kind: RecordKindName, id: string): Promise<StoredRow | null>;
  /** The record's data without null fields (a stub has only what interface §5.5 says it holds). */
  fields(kind: RecordKindName, id: string): Promise<Body | null>;
  ids(kind: RecordKindName): Promise<string[]>;
  links(rel: LinkRel): Promise<Array<[string, string]>>;
}

interface Row {
  rule: string;
  requests: Step[];
  expect: (view: View) => Promise<void>;
}

const ROWS: Row[] = [
  // ---- Upsert rules (interface §5) ----
  {
    rule: 'createBrand: product_ids stubs missing products and sets their brand_id',
    requests: [post('product', { id: 'p1', name: 'Kept' }), post('brand', { id: 'b1', name: 'Brand', product_ids: ['p1', 2] })],
    async expect(s) {
      expect(await s.ids('product')).toEqual(['2', 'p1']);
      expect(await s.fields('product', '2')).toEqual({ brand_id: 'b1' });
      expect(await s.fields('product', 'p1')).toEqual({ name: 'Kept', brand_id: 'b1' });
    },
  },
  {
    rule: 'createBrand: product_ids moves a product from another brand and detaches nothing',
    requests: [
      post('brand', { id: 'b1', name: 'One', product_ids: ['p1', 'p3'] }),
      post('brand', { id: 'b2', name: 'Two', product_ids: ['p1', 'p2'] }),
    ],
    async expect(s) {
      expect(await s.ids('brand')).toEqual(['b1', 'b2']);
      expect(await s.fields('product', 'p1')).toEqual({ brand_id: 'b2' });
      expect(await s.fields('product', 'p2')).toEqual({ brand_id: 'b2' });
      expect(await s.fields('product', 'p3')).toEqual({ brand_id: 'b1' });
    },
  },
  {
    rule: 'createCategory: parent_category_id stubs a missing parent',
    requests: [post('category', { id: 'c1', name: 'Child', parent_category_id: 10 })],
    async expect(s) {
      expect(await s.ids('category')).toEqual(['10', 'c1']);
      expect(await s.fields('category', '10')).toEqual({});
      expect(await s.fields('category', 'c1')).toEqual({ name: 'Child', parent_category_id: '10' });
    },
  },
  {
    rule: "createCategory: product_ids replaces the category's products, stubs missing ones, and keeps their other categories",
    requests: [
      post('product', { id: 'p1', name: 'One', category_ids: ['c2'] }),
      post('category', { id: 'c1', name: 'Cat', product_ids: ['p1', 'p2'] }),
      post('category', { id: 'c1', name: 'Cat', product_ids: ['p2', 'p3'] }),
    ],
    async expect(s) {
      expect(await s.links('product_category')).toEqual([
        ['p1', 'c2'],
        ['p2', 'c1'],
        ['p3', 'c1'],
      ]);
      expect(await s.ids('product')).toEqual(['p1', 'p2', 'p3']);
      expect(await s.fields('product', 'p3')).toEqual({});
      expect(await s.ids('category')).toEqual(['c1', 'c2']);
    },
  },
  {
    rule: 'createOrder: stubs its profile and each product, stores shopping_cart_id without a stub',
    requests: [
      post('order', {
        id: 'o1',
        profile_id: 5,
        products: [
          { id: 'p1', quantity: 1 },
          { id: 2, quantity: 3 },
        ],
        shopping_cart_id: 'sc1',
      }),
    ],
    async expect(s) {
      expect(await s.ids('profile')).toEqual(['5']);
      expect(await s.fields('profile', '5')).toEqual({});
      expect(await s.ids('product')).toEqual(['2', 'p1']);
      expect(await s.fields('product', '2')).toEqual({});
      expect(await s.ids('shopping_cart')).toEqual([]);
      expect(await s.fields('order', 'o1')).toEqual({
        profile_id: '5',
        products: [
          { id: 'p1', quantity: 1 },
          { id: '2', quantity: 3 },
        ],
        shopping_cart_id: 'sc1',
      });
    },
  },
  {
    rule: "createProduct: category_ids replaces the product's categories and stubs missing ones",
    requests: [
      post('product', { id: 'p2', name: 'Other', category_ids: ['c1'] }),
      post('product', { id: 'p1', name: 'One', category_ids: ['c1', 'c2'] }),
      post('product', { id: 'p1', name: 'One', category_ids: ['c2', 3] }),
    ],
    async expect(s) {
      expect(await s.links('product_category')).toEqual([
        ['p1', '3'],
        ['p1', 'c2'],
        ['p2', 'c1'],
      ]);
      expect(await s.ids('category')).toEqual(['3', 'c1', 'c2']);
      expect(await s.fields('category', '3')).toEqual({});
    },
  },
  {
    rule: "createProduct: relevant_product_ids replaces the product's related products and stubs missing ones",
    requests: [
      post('product', { id: 'p1', name: 'One', relevant_product_ids: ['p2', 'p3'] }),
      post('product', { id: 'p1', name: 'One', relevant_product_ids: ['p3', 'p4'] }),
      post('product', { id: 'p5', name: 'Five', relevant_product_ids: ['p1'] }),
    ],
    async expect(s) {
      expect(await s.links('relevant')).toEqual([
        ['p1', 'p3'],
        ['p1', 'p4'],
        ['p5', 'p1'],
      ]);
      expect(await s.ids('product')).toEqual(['p1', 'p2', 'p3', 'p4', 'p5']);
      expect(await s.fields('product', 'p4')).toEqual({});
    },
  },
  {
    rule: 'createProduct: variant_ids points each variant at the product (stub variants hold product_id)',
    requests: [
      post('variant', { id: 'v1', product_id: 'pA', title: 'Red' }),
      post('product', { id: 'p1', name: 'One', variant_ids: ['v1', 'v2'] }),
    ],
    async expect(s) {
      expect(await s.fields('variant', 'v1')).toEqual({ product_id: 'p1', title: 'Red' });
      expect(await s.fields('variant', 'v2')).toEqual({ product_id: 'p1' });
      expect(await s.ids('product')).toEqual(['p1', 'pA']);
    },
  },
  {
    rule: 'createProduct: review_ids points each review at the product (stub reviews hold product_id)',
    requests: [
      post('review', { id: 'r1', product_id: 'pA', profile_id: 'u1', name: 'Great' }),
      post('product', { id: 'p1', name: 'One', review_ids: ['r1', 'r2'] }),
    ],
    async expect(s) {
      expect(await s.fields('review', 'r1')).toEqual({ product_id: 'p1', profile_id: 'u1', name: 'Great' });
      expect(await s.fields('review', 'r2')).toEqual({ product_id: 'p1' });
      expect(await s.ids('profile')).toEqual(['u1']);
    },
  },
  {
    rule: 'createReview: stubs its product and its profile',
    requests: [post('review', { id: 'r1', product_id: 7, profile_id: 'u1' })],
    async expect(s) {
      expect(await s.fields('product', '7')).toEqual({});
      expect(await s.fields('profile', 'u1')).toEqual({});
      expect(await s.fields('review', 'r1')).toEqual({ product_id: '7', profile_id: 'u1' });
    },
  },
  {
    rule: 'createShoppingCart: stubs its profile and its products',
    requests: [post('shopping_cart', { id: 'sc1', profile_id: 'u1', product_ids: ['p1', 2] })],
    async expect(s) {
      expect(await s.fields('profile', 'u1')).toEqual({});
      expect(await s.ids('product')).toEqual(['2', 'p1']);
      expect(await s.fields('shopping_cart', 'sc1')).toEqual({ profile_id: 'u1', product_ids: ['p1', '2'] });
    },
  },
  {
    rule: 'createVariant: stubs its product',
    requests: [post('variant', { id: 'v1', product_id: 'p1' })],
    async expect(s) {
      expect(await s.fields('product', 'p1')).toEqual({});
      expect(await s.fields('variant', 'v1')).toEqual({ product_id: 'p1' });
    },
  },
  {
    rule: 'a stub is an ordinary record: a later write fills it in',
    requests: [
      post('variant', { id: 'v1', product_id: 'p9' }),
      post('review', { id: 'r1', product_id: 'p9', profile_id: 'u9' }),
      post('product', { id: 'p9', name: 'Filled', price: 5 }),
      post('profile', { id: 'u9', email: 'u9@example.com' }),
    ],
    async expect(s) {
      expect(await s.fields('product', 'p9')).toEqual({ name: 'Filled', price: 5 });
      expect(await s.fields('profile', 'u9')).toEqual({ email: 'u9@example.com' });
      expect(await s.fields('variant', 'v1')).toEqual({ product_id: 'p9' });
      expect(await s.ids('product')).toEqual(['p9']);
      expect(await s.ids('profile')).toEqual(['u9']);
    },
  },

  // ---- Delete rules (interface §6) ----
  {
    rule: 'deleteProduct: deletes its variants, its category links and its relevant links both ways; keeps reviews, brand, orders, carts',
    requests: [
      post('brand', { id: 'b1', name: 'Brand', product_ids: ['p1'] }),
      post('product', { id: 'p1', name: 'Doomed', category_ids: ['c1', 'c2'], relevant_product_ids: ['p2'] }),
      post('product', { id: 'p2', name: 'Two', category_ids: ['c1'] }),
      post('product', { id: 'p3', name: 'Three', relevant_product_ids: ['p1', 'p2'] }),
      post('variant', { id: 'v1', product_id: 'p1' }),
      post('variant', { id: 'v2', product_id: 'p1' }),
      post('variant', { id: 'v3', product_id: 'p2' }),
      post('review', { id: 'r1', product_id: 'p1', profile_id: 'u1' }),
      post('order', { id: 'o1', profile_id: 'u1', products: [{ id: 'p1', quantity: 1 }] }),
      post('shopping_cart', { id: 'sc1', profile_id: 'u1', product_ids: ['p1'] }),
      del('product', 'p1'),
    ],
    async expect(s) {
      expect(await s.ids('product')).toEqual(['p2', 'p3']);
      expect(await s.ids('variant')).toEqual(['v3']);
      expect(await s.links('product_category')).toEqual([['p2', 'c1']]);
      expect(await s.links('relevant')).toEqual([['p3', 'p2']]);
      expect(await s.ids('category')).toEqual(['c1', 'c2']);
      expect(await s.ids('brand')).toEqual(['b1']);
      expect(await s.fields('review', 'r1')).toEqual({ product_id: 'p1', profile_id: 'u1' });
      expect(await s.fields('order', 'o1')).toEqual({ profile_id: 'u1', products: [{ id: 'p1', quantity: 1 }] });
      expect(await s.fields('shopping_cart', 'sc1')).toEqual({ profile_id: 'u1', product_ids: ['p1'] });
    },
  },
  {
    rule: "deleteCategory: removes its product links and sets its children's parent_category_id to null; keeps its parent and products",
    requests: [
      post('category', { id: 'c0', name: 'Root' }),
      post('category', { id: 'c1', name: 'Doomed', parent_category_id: 'c0', product_ids: ['p1', 'p2'] }),
      post('category', { id: 'c2', name: 'Child two', parent_category_id: 'c1' }),
      post('category', { id: 'c3', name: 'Child three', parent_category_id: 'c1', visible: true }),
      post('product', { id: 'p1', name: 'One', category_ids: ['c1', 'c9'] }),
      del('category', 'c1'),
    ],
    async expect(s) {
      expect(await s.ids('category')).toEqual(['c0', 'c2', 'c3', 'c9']);
      expect(await s.links('product_category')).toEqual([['p1', 'c9']]);
      expect(await s.fields('category', 'c2')).toEqual({ name: 'Child two' });
      expect((await s.record('category', 'c2'))?.data['parent_category_id']).toBeNull();
      expect(await s.fields('category', 'c3')).toEqual({ name: 'Child three', visible: true });
      expect(await s.ids('product')).toEqual(['p1', 'p2']);
    },
  },
  {
    rule: 'deleteBrand: keeps its products, with brand_id null',
    requests: [
      post('brand', { id: 'b1', name: 'Doomed', product_ids: ['p1', 'p2'] }),
      post('brand', { id: 'b2', name: 'Other', product_ids: ['p3'] }),
      post('product', { id: 'p1', name: 'Named' }),
      del('brand', 'b1'),
    ],
    async expect(s) {
      expect(await s.ids('brand')).toEqual(['b2']);
      expect(await s.ids('product')).toEqual(['p1', 'p2', 'p3']);
      expect(await s.fields('product', 'p1')).toEqual({ name: 'Named' });
      expect(await s.fields('product', 'p2')).toEqual({});
      expect((await s.record('product', 'p2'))?.data['brand_id']).toBeNull();
      expect(await s.fields('product', 'p3')).toEqual({ brand_id: 'b2' });
    },
  },
  {
    rule: 'deleteProfile: keeps its orders, reviews and carts with their profile_id',
    requests: [
      post('profile', { id: 'u1', email: 'u1@example.com' }),
      post('order', { id: 'o1', profile_id: 'u1', products: [{ id: 'p1', quantity: 1 }] }),
      post('review', { id: 'r1', product_id: 'p1', profile_id: 'u1' }),
      post('shopping_cart', { id: 'sc1', profile_id: 'u1', product_ids: ['p1'] }),
      del('profile', 'u1'),
    ],
    async expect(s) {
      expect(await s.ids('profile')).toEqual([]);
      expect(await s.fields('order', 'o1')).toMatchObject({ profile_id: 'u1' });
      expect(await s.fields('review', 'r1')).toMatchObject({ profile_id: 'u1' });
      expect(await s.fields('shopping_cart', 'sc1')).toMatchObject({ profile_id: 'u1' });
      expect(await s.ids('product')).toEqual(['p1']);
    },
  },
  {
    rule: 'deleteVariant: deletes nothing else',
    requests: [post('variant', { id: 'v1', product_id: 'p1' }), post('variant', { id: 'v2', product_id: 'p1' }), del('variant', 'v1')],
    async expect(s) {
      expect(await s.ids('variant')).toEqual(['v2']);
      expect(await s.ids('product')).toEqual(['p1']);
    },
  },
  {
    rule: 'deleteReview: deletes nothing else',
    requests: [post('review', { id: 'r1', product_id: 'p1', profile_id: 'u1' }), del('review', 'r1')],
    async expect(s) {
      expect(await s.ids('review')).toEqual([]);
      expect(await s.ids('product')).toEqual(['p1']);
      expect(await s.ids('profile')).toEqual(['u1']);
    },
  },
  {
    rule: 'deleteOrder: deletes nothing else',
    requests: [
      post('shopping_cart', { id: 'sc1', profile_id: 'u1', product_ids: ['p1'] }),
      post('order', { id: 'o1', profile_id: 'u1', products: [{ id: 'p1', quantity: 2 }], shopping_cart_id: 'sc1' }),
      del('order', 'o1'),
    ],
    async expect(s) {
      expect(await s.ids('order')).toEqual([]);
      expect(await s.ids('profile')).toEqual(['u1']);
      expect(await s.ids('product')).toEqual(['p1']);
      expect(await s.ids('shopping_cart')).toEqual(['sc1']);
    },
  },
  {
    rule: 'deleteShoppingCart: deletes nothing else',
    requests: [post('shopping_cart', { id: 'sc1', profile_id: 'u1', product_ids: ['p1', 'p2'] }), del('shopping_cart', 'sc1')],
    async expect(s) {
      expect(await s.ids('shopping_cart')).toEqual([]);
      expect(await s.ids('profile')).toEqual(['u1']);
      expect(await s.ids('product')).toEqual(['p1', 'p2']);
    },
  },
  {
    rule: 'deleteLanguage: its records disappear in the background and the same id can be created again at once, empty',
    requests: [
      post('product', { id: 'p1', name: 'Old', category_ids: ['c1'], relevant_product_ids: ['p2'] }),
      post('variant', { id: 'v1', product_id: 'p1' }),
      post('profile', { id: 'u1', email: 'u1@example.com' }),
      deleteLanguage,
      createLanguage,
      post('product', { id: 'p3', name: 'New' }),
    ],
    async expect(s) {
      const langKey = await langKeyOf(env, s.lang, account);
      expect(langKey).not.toBe(s.langKeyBefore);
      expect(await s.ids('product')).toEqual(['p3']);
      expect(await s.fields('product', 'p3')).toEqual({ name: 'New' });
      for (const kind of ['category', 'variant', 'profile'] as const) expect(await s.ids(kind)).toEqual([]);
      expect(await s.links('product_category')).toEqual([]);
      expect(await s.links('relevant')).toEqual([]);

      const left = await pollUntil(
        () => recordCount(env, s.langKeyBefore),
        (count) => count === 0,
        { timeoutMs: 10_000, intervalMs: 100 },
      );
      expect(left).toBe(0);
      expect(await linkCount(env, s.langKeyBefore)).toBe(0);
    },
  },
];

let env: TestEnvironment;
let account: string;
let token: string;

beforeAll(async () => {
  env = await startEnvironment();
  account = uniqueName('acct');
  token = await env.token(account);
});
afterAll(() => env.close());

function viewOf(lang: string, langKeyBefore: number): View {
  return {
    lang,
    langKeyBefore,
    record: (kind, id) => liveRecord(env, lang, kind, id, account),
    async fields(kind, id) {
      const row = await liveRecord(env, lang, kind, id, account);
      return row ? Object.fromEntries(Object.entries(row.data).filter(([, value]) => value !== null)) : null;
    },
    ids: (kind) => liveIds(env, lang, kind, account),
    links: (rel) => linksOf(env, lang, rel, account),
  };
}

let rowNumber = 0;

describe('when v1 writes and deletes name related records', () => {
  it.each(ROWS.map((row): [string, Row] => [row.rule, row]))('should apply %s', async (_rule, row) => {
    rowNumber += 1;
    const lang = `rel-${rowNumber}`;
    const created = await env.request('POST', '/api/v1/languages/', { token, body: { language: { id: lang, name: lang, code: 'xx' } } });
    expect(created.status).toBe(200);
    const langKeyBefore = await langKeyOf(env, lang, account);

    for (const step of row.requests) {
      const { method, path, body } = step(lang);
      const response = await env.request(method, path, { token, body });
      expect(response.status, `${method} ${path} ${JSON.stringify(body)} -> ${response.text}`).toBe(200);
    }
    await env.drain();
    await row.expect(viewOf(lang, langKeyBefore));
  });
});

describe('when a write is audited', () => {
  const lang = 'audited';
  let clientId: string;
  let auditToken: string;
  const product = { id: 'p1', name: 'Audited', category_ids: ['c1', 'c2'] };
  const write = (requestId: string) =>
    env.request('POST', `/api/v1/languages/${lang}/products`, {
      token: auditToken,
      body: { product },
      headers: { 'X-Request-Id': requestId },
    });
  /** The audit entries of the language's records (the language's own entry left out). */
  const recordAudit = async () => (await auditOf(env, lang, { account: auditAccount })).filter((entry) => entry.kind !== 'language');
  let auditAccount: string;

  beforeAll(async () => {
    auditAccount = uniqueName('audit');
    const client = await env.newClient(auditAccount);
    clientId = client.client_id;
    const issued = await env.request('POST', '/oauth/token', {
      body: { grant_type: 'client_credentials', client_id: client.client_id, client_secret: client.client_secret },
    });
    expect(issued.status).toBe(200);
    auditToken = issued.body.access_token;
    const created = await env.request('POST', '/api/v1/languages/', {
      token: auditToken,
      body: { language: { id: lang, name: 'Audited', code: 'au' } },
    });
    expect(created.status).toBe(200);
  });

  it('should record one create by the client, two stubs and two links by the system, all with the request id', async () => {
    const response = await write('audit-create-1');
    expect(response.status).toBe(200);
    expect(response.headers.get('x-request-id')).toBe('audit-create-1');
    await env.drain();

    const entries = await recordAudit();
    const creates = entries.filter((entry) => entry.action === 'create');
    const stubs = entries.filter((entry) => entry.action === 'stub');
    const links = entries.filter((entry) => entry.action === 'link');

    expect(creates).toEqual([expect.objectContaining({ kind: 'product', record_id: 'p1', actor: clientId, request_id: 'audit-create-1' })]);
    expect(stubs.map((entry) => [entry.kind, entry.record_id, entry.actor, entry.request_id]).sort()).toEqual([
      ['category', 'c1', 'system', 'audit-create-1'],
      ['category', 'c2', 'system', 'audit-create-1'],
    ]);
    expect(links).toHaveLength(2);
    for (const link of links) {
      expect(link).toMatchObject({ kind: 'product', record_id: 'p1', actor: 'system', request_id: 'audit-create-1' });
    }
    expect(links.map((link) => JSON.stringify(link.changes)).sort()).toEqual([
      expect.stringContaining('c1'),
      expect.stringContaining('c2'),
    ]);
    expect(entries.map((entry) => entry.action).sort()).toEqual(['create', 'link', 'link', 'stub', 'stub']);
  });

  it('should record one update and no new links for a repeated identical write', async () => {
    const before = await recordAudit();
    const lastSeq = Math.max(...before.map((entry) => Number(entry.seq)));

    const response = await write('audit-update-1');
    expect(response.status).toBe(200);
    await env.drain();

    const added = (await recordAudit()).filter((entry) => Number(entry.seq) > lastSeq);
    expect(added).toEqual([
      expect.objectContaining({ kind: 'product', record_id: 'p1', action: 'update', actor: clientId, request_id: 'audit-update-1' }),
    ]);
    expect(await linksOf(env, lang, 'product_category', auditAccount)).toEqual([
      ['p1', 'c1'],
      ['p1', 'c2'],
    ]);
  });
});
