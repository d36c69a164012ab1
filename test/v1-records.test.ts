import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEnvironment, type TestEnvironment, uniqueName } from './support/harness.js';
import { field, liveIds, liveRecord, type RecordKindName } from './support/state.js';

/**
 * v1 create-or-update and delete of the eight language-scoped record kinds,
 * against interface §12, §4.1 and §11
 * and interface §2 and §4. One table row per kind; every behaviour
 * is checked for every kind.
 */

type Body = Record<string, unknown>;
type Invalid = [description: string, patch: Body, errorClass: ErrorClass, names: string[]];
type ErrorClass = 'missing_parameters' | 'unknown_parameters' | 'invalid_parameters';

interface KindCase {
  kind: RecordKindName;
  /** As in messages and 404 bodies. */
  resource: string;
  segment: string;
  /** Every scalar field of the kind besides id and the timestamps (interface §12.3). */
  fields: string[];
  /** The kind's timestamp fields (interface §12.3). */
  times: Array<'created_at' | 'updated_at'>;
  /** A minimal valid record; references are given as integers where possible. */
  minimal: (id: string | number) => Body;
  /** What the minimal record's fields (besides id) are stored and answered as. */
  echo: Body | ((id: string) => Body);
  /** An optional field, a value for it and how that value is answered. */
  optional: [name: string, value: unknown, echo: unknown];
  /** A required field besides id (profile: required when the profile is new). */
  required: string;
  /** Kind-specific type and format errors. */
  invalid: Invalid[];
}

const ISO_Z = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

const CASES: KindCase[] = [
  {
    kind: 'brand',
    resource: 'Brand',
    segment: 'brands',
    fields: ['name', 'url', 'content'],
    times: ['created_at', 'updated_at'],
    minimal: (id) => ({ id, name: 'Acme' }),
    echo: { name: 'Acme' },
    optional: ['url', 'https://acme.example/', 'https://acme.example/'],
    required: 'name',
    invalid: [
      ['url "nope"', { url: 'nope' }, 'invalid_parameters', ['url']],
      ['name true (boolean where a string is expected)', { name: true }, 'invalid_parameters', ['name']],
      ['content a number', { content: 5 }, 'invalid_parameters', ['content']],
      ['created_at "yesterday"', { created_at: 'yesterday' }, 'invalid_parameters', ['created_at']],
      ['product_ids not an array', { product_ids: 'p1' }, 'invalid_parameters', ['product_ids']],
      ['a float in product_ids', { product_ids: ['p1', 1.5] }, 'invalid_parameters', ['product_ids[1]']],
    ],
  },
  {
    kind: 'category',
    resource: 'Category',
    segment: 'categories',
    fields: ['name', 'url', 'visible', 'parent_category_id'],
    times: ['created_at', 'updated_at'],
    minimal: (id) => ({ id, name: 'Shoes' }),
    echo: { name: 'Shoes' },
    optional: ['visible', false, false],
    required: 'name',
    invalid: [
      ['url "nope"', { url: 'nope' }, 'invalid_parameters', ['url']],
      ['visible "yes"', { visible: 'yes' }, 'invalid_parameters', ['visible']],
      ['parent_category_id 1.5', { parent_category_id: 1.5 }, 'invalid_parameters', ['parent_category_id']],
      ['updated_at "yesterday"', { updated_at: 'yesterday' }, 'invalid_parameters', ['updated_at']],
      ['a boolean in product_ids', { product_ids: [true] }, 'invalid_parameters', ['product_ids[0]']],
    ],
  },
  {
    kind: 'product',
    resource: 'Product',
    segment: 'products',
    fields: ['name', 'short_description', 'price', 'url', 'main_image', 'visible'],
    times: ['created_at', 'updated_at'],
    minimal: (id) => ({ id, name: 'Boot' }),
    echo: { name: 'Boot' },
    optional: ['price', 12.5, 12.5],
    required: 'name',
    invalid: [
      ['url "nope"', { url: 'nope' }, 'invalid_parameters', ['url']],
      ['main_image "nope"', { main_image: 'nope' }, 'invalid_parameters', ['main_image']],
      ['price "cheap"', { price: 'cheap' }, 'invalid_parameters', ['price']],
      ['name true', { name: true }, 'invalid_parameters', ['name']],
      ['an id of 256 characters in category_ids', { category_ids: ['c'.repeat(256)] }, 'invalid_parameters', ['category_ids[0]']],
      ['created_at "yesterday"', { created_at: 'yesterday' }, 'invalid_parameters', ['created_at']],
    ],
  },
  {
    kind: 'variant',
    resource: 'Variant',
    segment: 'variants',
    fields: [
      'product_id',
      'title',
      'article_code',
      'default',
      'ean',
      'main_image',
      'price_cost',
      'price_excl',
      'price_incl',
      'unit_price',
      'unit_unit',
      'sku',
      'stock_level',
    ],
    times: ['created_at', 'updated_at'],
    minimal: (id) => ({ id, product_id: 7 }),
    echo: { product_id: '7' },
    optional: ['title', 'Red, size 42', 'Red, size 42'],
    required: 'product_id',
    invalid: [
      ['product_id 1.5', { product_id: 1.5 }, 'invalid_parameters', ['product_id']],
      ['stock_level 1.5', { stock_level: 1.5 }, 'invalid_parameters', ['stock_level']],
      ['default "yes"', { default: 'yes' }, 'invalid_parameters', ['default']],
      ['title true', { title: true }, 'invalid_parameters', ['title']],
      ['main_image "nope"', { main_image: 'nope' }, 'invalid_parameters', ['main_image']],
    ],
  },
  {
    kind: 'review',
    resource: 'Review',
    segment: 'reviews',
    fields: ['product_id', 'profile_id', 'name', 'score', 'visible'],
    times: ['created_at', 'updated_at'],
    minimal: (id) => ({ id, product_id: 7, profile_id: 8 }),
    echo: { product_id: '7', profile_id: '8' },
    optional: ['score', 4, 4],
    required: 'profile_id',
    invalid: [
      ['score 4.5', { score: 4.5 }, 'invalid_parameters', ['score']],
      ['profile_id true', { profile_id: true }, 'invalid_parameters', ['profile_id']],
      ['product_id an object', { product_id: { id: 7 } }, 'invalid_parameters', ['product_id']],
      ['visible "yes"', { visible: 'yes' }, 'invalid_parameters', ['visible']],
      ['a missing product_id', { product_id: undefined }, 'missing_parameters', ['product_id']],
    ],
  },
  {
    kind: 'profile',
    resource: 'Profile',
    segment: 'profiles',
    fields: [
      'email',
      'birthdate',
      'city',
      'province',
      'street',
      'housenumber',
      'zipcode',
      'country_code',
      'first_name',
      'middle_name',
      'last_name',
      'gender',
      'active',
      'subscribed_to_newsletter',
      'subscribed_to_newsletter_at',
      'tags',
      'telephone',
    ],
    times: [],
    minimal: (id) => ({ id, email: `p${String(id).slice(-12)}@example.com` }),
    echo: (id) => ({ email: `p${id.slice(-12)}@example.com` }),
    optional: ['city', 'Utrecht', 'Utrecht'],
    required: 'email',
    invalid: [
      ['email "not-an-email"', { email: 'not-an-email' }, 'invalid_parameters', ['email']],
      ['gender "x"', { gender: 'x' }, 'invalid_parameters', ['gender']],
      ['birthdate "yesterday"', { birthdate: 'yesterday' }, 'invalid_parameters', ['birthdate']],
      ['subscribed_to_newsletter "yes"', { subscribed_to_newsletter: 'yes' }, 'invalid_parameters', ['subscribed_to_newsletter']],
      ['a number in tags', { tags: ['vip', 1] }, 'invalid_parameters', ['tags[1]']],
      ['first_name true', { first_name: true }, 'invalid_parameters', ['first_name']],
    ],
  },
  {
    kind: 'order',
    resource: 'Order',
    segment: 'orders',
    fields: ['profile_id', 'products', 'currency', 'number', 'price', 'paid', 'status', 'deliver_date', 'ordered_at', 'shopping_cart_id'],
    times: ['created_at'],
    minimal: (id) => ({ id, profile_id: 8, products: [{ id: 9, quantity: 2 }] }),
    echo: { profile_id: '8', products: [{ id: '9', quantity: 2 }] },
    optional: ['status', 'shipped', 'shipped'],
    required: 'profile_id',
    invalid: [
      ['status "lost"', { status: 'lost' }, 'invalid_parameters', ['status']],
      ['paid "yes"', { paid: 'yes' }, 'invalid_parameters', ['paid']],
      ['ordered_at "yesterday"', { ordered_at: 'yesterday' }, 'invalid_parameters', ['ordered_at']],
      ['shopping_cart_id 1.5', { shopping_cart_id: 1.5 }, 'invalid_parameters', ['shopping_cart_id']],
      ['a product without id', { products: [{ id: 9, quantity: 1 }, { quantity: 1 }] }, 'missing_parameters', ['products[1].id']],
      ['a product with quantity 1.5', { products: [{ id: 9, quantity: 1.5 }] }, 'invalid_parameters', ['products[0].quantity']],
      [
        'a product with an id of 256 characters',
        { products: [{ id: 'x'.repeat(256), quantity: 1 }] },
        'invalid_parameters',
        ['products[0].id'],
      ],
      [
        'a product with an unknown field',
        { products: [{ id: 9, quantity: 1, colour: 'red' }] },
        'unknown_parameters',
        ['products[0].colour'],
      ],
      ['products not an array', { products: 'p1' }, 'invalid_parameters', ['products']],
      ['a missing products', { products: undefined }, 'missing_parameters', ['products']],
    ],
  },
  {
    kind: 'shopping_cart',
    resource: 'Shopping cart',
    segment: 'shopping_carts',
    fields: ['profile_id', 'product_ids', 'currency', 'price', 'recovery_url'],
    times: ['created_at', 'updated_at'],
    minimal: (id) => ({ id, profile_id: 8, product_ids: [9, 'ten'] }),
    echo: { profile_id: '8', product_ids: ['9', 'ten'] },
    optional: ['currency', 'EUR', 'EUR'],
    required: 'product_ids',
    invalid: [
      ['recovery_url "nope"', { recovery_url: 'nope' }, 'invalid_parameters', ['recovery_url']],
      ['price "x"', { price: 'x' }, 'invalid_parameters', ['price']],
      ['a float in product_ids', { product_ids: [1.5] }, 'invalid_parameters', ['product_ids[0]']],
      ['profile_id false', { profile_id: false }, 'invalid_parameters', ['profile_id']],
      ['a missing profile_id', { profile_id: undefined }, 'missing_parameters', ['profile_id']],
    ],
  },
];

/** Validation rows that fail because of a known service bug run as `it.fails`; none are known. */
const KNOWN_BUGS = new Set<string>([]);

let env: TestEnvironment;
let account: string;
let token: string;
let otherAccount: string;
let otherToken: string;
/** A language that exists only in the other account. */
const THEIRS = 'theirs';
/** A language id that exists in both accounts. */
const SHARED = 'shared';

const post = (languageId: string, segment: string, body: unknown, as = token) =>
  env.request('POST', `/api/v1/languages/${encodeURIComponent(languageId)}/${segment}`, { token: as, body });
const remove = (languageId: string, segment: string, id: string, as = token) =>
  env.request('DELETE', `/api/v1/languages/${encodeURIComponent(languageId)}/${segment}/${encodeURIComponent(id)}`, { token: as });

async function createLanguage(id: string, as = token) {
  const response = await env.request('POST', '/api/v1/languages/', { token: as, body: { language: { id, name: id, code: 'xx' } } });
  expect(response.status).toBe(200);
}

const omit = (record: Body, name: string): Body => Object.fromEntries(Object.entries(record).filter(([key]) => key !== name));

const echoOf = (c: KindCase, id: string): Body => (typeof c.echo === 'function' ? c.echo(id) : c.echo);

/** The full answered record: every scalar field null unless given, timestamps as ISO strings in UTC. */
function full(c: KindCase, id: string, values: Body = {}): Body {
  const out: Body = { id };
  for (const name of c.fields) out[name] = null;
  for (const name of c.times) out[name] = expect.stringMatching(ISO_Z);
  return { ...out, ...echoOf(c, id), ...values };
}

beforeAll(async () => {
  env = await startEnvironment();
  account = uniqueName('acct');
  otherAccount = uniqueName('other');
  token = await env.token(account);
  otherToken = await env.token(otherAccount);
  for (const c of CASES) await createLanguage(`l-${c.kind}`);
  await createLanguage(SHARED);
  await createLanguage(SHARED, otherToken);
  await createLanguage(THEIRS, otherToken);
});
afterAll(() => env.close());

describe.each(CASES)('when a $kind is written through v1', (c) => {
  const lang = `l-${c.kind}`;
  const save = (record: Body) => post(lang, c.segment, { [c.kind]: record });
  const [optionalName, optionalValue, optionalEcho] = c.optional;

  describe('when the record is new', () => {
    it(`should answer 200 with every scalar field, unset ones as null, and "${c.resource} successfully saved"`, async () => {
      const response = await save(c.minimal(101));
      expect(response.status).toBe(200);
      expect(response.body).toEqual({ [c.kind]: full(c, '101'), message: `${c.resource} successfully saved` });
      expect(Object.keys(response.body[c.kind]).sort()).toEqual(['id', ...c.fields, ...c.times].sort());

      const stored = await liveRecord(env, lang, c.kind, '101', account);
      expect(stored).not.toBeNull();
      for (const [name, value] of Object.entries(echoOf(c, '101'))) expect(field(stored, name)).toEqual(value);
    });

    it('should store an integer id and its string form as one record', async () => {
      expect((await save(c.minimal(102))).status).toBe(200);
      const again = await save({ ...c.minimal('102'), [optionalName]: optionalValue });
      expect(again.status).toBe(200);
      expect(again.body[c.kind]).toEqual(full(c, '102', { [optionalName]: optionalEcho }));
      expect((await liveIds(env, lang, c.kind, account)).filter((id) => id === '102')).toEqual(['102']);
    });

    it.runIf(c.times.length > 0)('should answer created_at/updated_at as ISO strings in UTC and store them', async () => {
      const response = await save(c.minimal(103));
      expect(response.status).toBe(200);
      const stored = await liveRecord(env, lang, c.kind, '103', account);
      for (const name of c.times) {
        expect(response.body[c.kind][name]).toMatch(ISO_Z);
        expect(stored?.[name]).toBe(response.body[c.kind][name]);
      }
    });

    it.runIf(c.times.length > 0)('should store a created_at (and updated_at) sent by the client', async () => {
      const sent: Body = { created_at: '2020-01-02T03:04:05Z' };
      if (c.times.includes('updated_at')) sent['updated_at'] = '2021-02-03T04:05:06.789+02:00';
      const response = await save({ ...c.minimal(104), ...sent });
      expect(response.status).toBe(200);
      expect(response.body[c.kind].created_at).toBe('2020-01-02T03:04:05.000Z');
      if (c.times.includes('updated_at')) expect(response.body[c.kind].updated_at).toBe('2021-02-03T02:05:06.789Z');

      const stored = await liveRecord(env, lang, c.kind, '104', account);
      expect(stored?.created_at).toBe('2020-01-02T03:04:05.000Z');
      if (c.times.includes('updated_at')) expect(stored?.updated_at).toBe('2021-02-03T02:05:06.789Z');

      // An update that does not send created_at keeps the sent one.
      const updated = await save(c.minimal(104));
      expect(updated.status).toBe(200);
      expect(updated.body[c.kind].created_at).toBe('2020-01-02T03:04:05.000Z');
    });
  });

  describe('when the record already exists', () => {
    it('should keep an optional field the update omits and clear it when sent as null', async () => {
      const created = await save({ ...c.minimal('201'), [optionalName]: optionalValue });
      expect(created.status).toBe(200);
      expect(created.body[c.kind][optionalName]).toEqual(optionalEcho);

      const kept = await save(c.minimal('201'));
      expect(kept.status).toBe(200);
      expect(kept.body).toEqual({
        [c.kind]: full(c, '201', { [optionalName]: optionalEcho }),
        message: `${c.resource} successfully saved`,
      });
      expect(field(await liveRecord(env, lang, c.kind, '201', account), optionalName)).toEqual(optionalEcho);

      const cleared = await save({ ...c.minimal('201'), [optionalName]: null });
      expect(cleared.status).toBe(200);
      expect(cleared.body[c.kind]).toEqual(full(c, '201'));
      expect(field(await liveRecord(env, lang, c.kind, '201', account), optionalName)).toBeNull();
    });

    it.runIf(c.times.length > 0)('should keep created_at on an update (and move updated_at on)', async () => {
      const created = await save(c.minimal('202'));
      expect(created.status).toBe(200);
      await sleep(15);
      const updated = await save({ ...c.minimal('202'), [optionalName]: optionalValue });
      expect(updated.status).toBe(200);
      expect(updated.body[c.kind].created_at).toBe(created.body[c.kind].created_at);
      if (c.times.includes('updated_at')) {
        expect(Date.parse(updated.body[c.kind].updated_at)).toBeGreaterThan(Date.parse(created.body[c.kind].updated_at));
      }
      const stored = await liveRecord(env, lang, c.kind, '202', account);
      expect(stored?.created_at).toBe(created.body[c.kind].created_at);
    });

    it(`should still require ${c.required === 'email' ? 'id or email' : c.required} on an update`, async () => {
      expect((await save(c.minimal('203'))).status).toBe(200);
      const record = c.kind === 'profile' ? { first_name: 'No key' } : omit(c.minimal('203'), c.required);
      const response = await save(record);
      expect(response.status).toBe(400);
      expect(response.body).toEqual({
        error: { message: expect.any(String), missing_parameters: c.kind === 'profile' ? ['id', 'email'] : [c.required] },
      });
    });
  });

  describe('when the body is invalid', () => {
    const id = `invalid-${c.kind}`;
    const valid = c.minimal(id);
    const rows: Invalid[] = [
      ['an empty body {}', {}, 'missing_parameters', [c.kind]],
      ['another top-level key instead of the kind', { other: valid }, 'missing_parameters', [c.kind]],
      ['an extra top-level key', { [c.kind]: valid, extra: 1 }, 'unknown_parameters', ['extra']],
      ['a missing id', { [c.kind]: omit(valid, 'id') }, 'missing_parameters', ['id']],
      ['id null', { [c.kind]: { ...valid, id: null } }, 'missing_parameters', ['id']],
      [`a missing ${c.required}`, { [c.kind]: omit(valid, c.required) }, 'missing_parameters', [c.required]],
      [`${c.required} null`, { [c.kind]: { ...valid, [c.required]: null } }, 'missing_parameters', [c.required]],
      [
        `a missing ${c.required} and an unknown field`,
        { [c.kind]: { ...omit(valid, c.required), extra: 1 } },
        'missing_parameters',
        [c.required],
      ],
      ['an unknown field', { [c.kind]: { ...valid, extra: 1 } }, 'unknown_parameters', ['extra']],
      ['an unknown field and a bad type', { [c.kind]: { ...valid, id: 1.5, extra: 1 } }, 'unknown_parameters', ['extra']],
      ['id 1.5', { [c.kind]: { ...valid, id: 1.5 } }, 'invalid_parameters', ['id']],
      ['an id of 256 characters', { [c.kind]: { ...valid, id: 'i'.repeat(256) } }, 'invalid_parameters', ['id']],
      ['id ""', { [c.kind]: { ...valid, id: '' } }, 'invalid_parameters', ['id']],
      ['id true', { [c.kind]: { ...valid, id: true } }, 'invalid_parameters', ['id']],
      ['id an object', { [c.kind]: { ...valid, id: { id: 1 } } }, 'invalid_parameters', ['id']],
      ...c.invalid.map(
        ([description, patch, errorClass, names]): Invalid => [description, { [c.kind]: { ...valid, ...patch } }, errorClass, names],
      ),
    ];

    const check = async (_description: string, body: Body, errorClass: ErrorClass, names: string[]) => {
      const response = await post(lang, c.segment, body);
      expect(response.status).toBe(400);
      expect(response.body).toEqual({ error: { message: expect.any(String), [errorClass]: names } });
      expect(await liveRecord(env, lang, c.kind, id, account)).toBeNull();
    };
    const isKnownBug = ([description]: Invalid) => KNOWN_BUGS.has(`${c.kind}: ${description}`);
    it.each(rows.filter((row) => !isKnownBug(row)))('should answer 400 for %s', check);
    const buggy = rows.filter(isKnownBug);
    if (buggy.length > 0) it.fails.each(buggy)('should answer 400 for %s (known bug, see KNOWN_BUGS)', check);

    it('should accept an id of exactly 255 characters', async () => {
      const long = 'i'.repeat(250) + c.kind.slice(0, 5).padEnd(5, '_');
      const response = await save(c.minimal(long));
      expect(response.status).toBe(200);
      expect(response.body[c.kind].id).toBe(long);
    });
  });

  describe('when the language does not exist for the token', () => {
    it('should answer 404 naming the language on POST', async () => {
      const response = await post('zz', c.segment, { [c.kind]: c.minimal(301) });
      expect(response.status).toBe(404);
      expect(response.body).toEqual({ error: { message: "Language 'zz' not found" } });
    });

    it('should answer 404 naming the language on DELETE', async () => {
      const response = await remove('zz', c.segment, '301');
      expect(response.status).toBe(404);
      expect(response.body).toEqual({ error: { message: "Language 'zz' not found" } });
    });

    it("should answer the same 404 for another account's language and leave it untouched", async () => {
      const written = await post(THEIRS, c.segment, { [c.kind]: c.minimal(302) });
      expect(written.status).toBe(404);
      expect(written.body).toEqual({ error: { message: `Language '${THEIRS}' not found` } });

      expect((await post(THEIRS, c.segment, { [c.kind]: c.minimal(303) }, otherToken)).status).toBe(200);
      const removed = await remove(THEIRS, c.segment, '303');
      expect(removed.status).toBe(404);
      expect(removed.body).toEqual({ error: { message: `Language '${THEIRS}' not found` } });
      expect(await liveRecord(env, THEIRS, c.kind, '302', otherAccount)).toBeNull();
      expect(await liveRecord(env, THEIRS, c.kind, '303', otherAccount)).not.toBeNull();
    });
  });

  describe('when a record is deleted', () => {
    it(`should answer 200 with the deleted record and "${c.resource} successfully deleted"`, async () => {
      const created = await save({ ...c.minimal(401), [optionalName]: optionalValue });
      expect(created.status).toBe(200);
      const response = await remove(lang, c.segment, '401');
      expect(response.status).toBe(200);
      expect(response.body).toEqual({
        [c.kind]: full(c, '401', { [optionalName]: optionalEcho }),
        message: `${c.resource} successfully deleted`,
      });
      for (const name of c.times) expect(response.body[c.kind][name]).toBe(created.body[c.kind][name]);
      expect(await liveRecord(env, lang, c.kind, '401', account)).toBeNull();
    });

    it(`should answer 404 "${c.resource} not found" for a record that does not exist`, async () => {
      const response = await remove(lang, c.segment, 'never-written');
      expect(response.status).toBe(404);
      expect(response.body).toEqual({ error: `${c.resource} not found` });
    });

    it(`should answer 404 "${c.resource} not found" when the record was deleted already`, async () => {
      expect((await save(c.minimal(402))).status).toBe(200);
      expect((await remove(lang, c.segment, '402')).status).toBe(200);
      const again = await remove(lang, c.segment, '402');
      expect(again.status).toBe(404);
      expect(again.body).toEqual({ error: `${c.resource} not found` });
    });

    it("should answer 404 for a record of another account's language with the same id", async () => {
      expect((await post(SHARED, c.segment, { [c.kind]: c.minimal(403) }, otherToken)).status).toBe(200);
      const response = await remove(SHARED, c.segment, '403');
      expect(response.status).toBe(404);
      expect(response.body).toEqual({ error: `${c.resource} not found` });
      expect(await liveRecord(env, SHARED, c.kind, '403', otherAccount)).not.toBeNull();
    });
  });
});

describe('when profiles are matched (the profile rule, interface §4.5)', () => {
  const lang = 'l-profile-rules';
  const save = (profile: Body) => post(lang, 'profiles', { profile });
  const get = (query: string, languageId = lang) => env.request('GET', `/api/v1/languages/${languageId}/profiles${query}`, { token });
  const PROFILE = full(CASES.find((c) => c.kind === 'profile')!, 'p1', { city: 'Utrecht' });

  beforeAll(async () => {
    await createLanguage(lang);
    const created = await save({ id: 'p1', email: 'Ann@Example.com', city: 'Utrecht' });
    expect(created.status).toBe(200);
  });

  it.each([
    ['only an email', { email: 'new@example.com' }, ['id']],
    ['only an id', { id: 'new', city: 'Delft' }, ['email']],
    ['neither id nor email', { city: 'Delft' }, ['id', 'email']],
  ])('should answer 400 missing_parameters for a new profile with %s', async (_case, profile, names) => {
    const response = await save(profile);
    expect(response.status).toBe(400);
    expect(response.body).toEqual({ error: { message: expect.any(String), missing_parameters: names } });
    expect(await liveIds(env, lang, 'profile', account)).toEqual(['p1']);
  });

  it('should update by email alone, case-insensitively, keeping the matched id', async () => {
    const response = await save({ email: 'ann@EXAMPLE.com', first_name: 'Ann' });
    expect(response.status).toBe(200);
    expect(response.body.profile).toMatchObject({ id: 'p1', first_name: 'Ann', city: 'Utrecht' });
    expect(response.body.message).toBe('Profile successfully saved');
    expect(await liveIds(env, lang, 'profile', account)).toEqual(['p1']);
    expect(field(await liveRecord(env, lang, 'profile', 'p1', account), 'first_name')).toBe('Ann');
  });

  it('should match by email when the sent id names no profile, keeping the matched id', async () => {
    const response = await save({ id: 'unknown-id', email: 'ANN@example.com', last_name: 'Smit' });
    expect(response.status).toBe(200);
    expect(response.body.profile).toMatchObject({ id: 'p1', last_name: 'Smit' });
    expect(await liveIds(env, lang, 'profile', account)).toEqual(['p1']);
  });

  it('should update by id alone, keeping the email', async () => {
    const response = await save({ id: 'p1', city: 'Utrecht' });
    expect(response.status).toBe(200);
    expect(response.body.profile.id).toBe('p1');
    expect(String(response.body.profile.email).toLowerCase()).toBe('ann@example.com');
  });

  describe('when getProfile is called', () => {
    it('should answer 200 with the profile (no message) for ?id=', async () => {
      const response = await get('?id=p1');
      expect(response.status).toBe(200);
      expect(response.body).toEqual({ profile: { ...PROFILE, email: expect.any(String), first_name: 'Ann', last_name: 'Smit' } });
    });

    it('should answer 200 with the profile for ?email= in another case', async () => {
      const response = await get(`?email=${encodeURIComponent('aNN@example.COM')}`);
      expect(response.status).toBe(200);
      expect(Object.keys(response.body)).toEqual(['profile']);
      expect(response.body.profile.id).toBe('p1');
    });

    it('should find a profile created with an integer id by its string id', async () => {
      expect((await save({ id: 77, email: 'seventy-seven@example.com' })).status).toBe(200);
      const response = await get('?id=77');
      expect(response.status).toBe(200);
      expect(response.body.profile).toMatchObject({ id: '77', email: 'seventy-seven@example.com' });
    });

    it('should answer 400 missing_parameters ["id","email"] without id and email', async () => {
      const response = await get('');
      expect(response.status).toBe(400);
      expect(response.body).toEqual({ error: { message: expect.any(String), missing_parameters: ['id', 'email'] } });
    });

    it('should answer 400 unknown_parameters for another query parameter', async () => {
      const response = await get('?id=p1&colour=red');
      expect(response.status).toBe(400);
      expect(response.body).toEqual({ error: { message: expect.any(String), unknown_parameters: ['colour'] } });
    });

    it.each([['?id=nobody'], ['?email=nobody%40example.com'], ['?id=nobody&email=nobody%40example.com']])(
      'should answer 404 "Profile not found" for %s',
      async (query) => {
        const response = await get(query);
        expect(response.status).toBe(404);
        expect(response.body).toEqual({ error: 'Profile not found' });
      },
    );

    it('should answer 404 "Profile not found" for a deleted profile', async () => {
      expect((await save({ id: 'gone', email: 'gone@example.com' })).status).toBe(200);
      expect((await remove(lang, 'profiles', 'gone')).status).toBe(200);
      for (const query of ['?id=gone', '?email=gone%40example.com']) {
        const response = await get(query);
        expect(response.status).toBe(404);
        expect(response.body).toEqual({ error: 'Profile not found' });
      }
    });

    it.each([['zz'], [THEIRS]])('should answer 404 naming the language for language %s', async (languageId) => {
      const response = await get('?id=p1', languageId);
      expect(response.status).toBe(404);
      expect(response.body).toEqual({ error: { message: `Language '${languageId}' not found` } });
    });
  });
});
