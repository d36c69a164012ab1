import { sql } from 'slonik';
import { z } from 'zod';
import type { TestEnvironment } from './harness.js';
import { type AuditFact, type Fields, type RecordKind as Kind, Model, normalise } from './model.js';
import { SEGMENT } from './v2-client.js';

/** mulberry32: small, fast and good enough to drive reproducible scenarios. */
export function rng(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (n: number) => Math.floor(next() * n),
    chance: (p: number) => next() < p,
    pick: <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]!,
  };
}
export type Rng = ReturnType<typeof rng>;

export type Operation =
  | { type: 'write'; kind: Kind; body: Fields }
  | { type: 'delete'; kind: Kind; id: string }
  /** v2 PUT of any kind. */
  | { type: 'put'; kind: Kind; body: Fields }
  /** v2 DELETE of a record. */
  | { type: 'v2delete'; kind: Kind; id: string }
  /** v2 line write: PUT (or DELETE with `remove`) .../{orders|shopping_carts}/{id}/products/{product}. */
  | { type: 'line'; parent: 'order' | 'shopping_cart'; id: string; product: string; remove: boolean; body?: Fields }
  /** v2 related product link (PUT) or unlink (DELETE). */
  | { type: 'relate'; product: string; other: string; present: boolean }
  /** v2 global unsubscribe. */
  | { type: 'unsubscribe'; email: string; unsubscribed: boolean }
  /** v2 assignment PUT (assign) or DELETE (unassign). */
  | { type: 'assign'; product: string; category: string }
  | { type: 'unassign'; product: string; category: string };

export interface GenerateOptions {
  /** Mix in v2 PUTs of products and categories (brand_id, parent_category_id, custom_attributes) and assignments. */
  v2?: boolean;
  /**
   * Mix in the rest of v2 (interface §13-21): PUTs and DELETEs of every kind, order
   * and cart line writes, related-product links and global unsubscribes.
   */
  v2Surface?: boolean;
}

const KINDS: Kind[] = ['brand', 'category', 'product', 'variant', 'review', 'profile', 'order', 'shopping_cart'];
const IDS = ['1', '2', '3'];

/** An id as a client might send it: sometimes the integer form of the same id. */
const wireId = (r: Rng, id: string): string | number => (r.chance(0.25) ? Number(id) : id);
const someIds = (r: Rng) => IDS.filter(() => r.chance(0.4)).map((id) => wireId(r, id));

function body(r: Rng, kind: Kind, id: string): Fields {
  const base: Fields = { id: wireId(r, id) };
  switch (kind) {
    case 'brand':
      return { ...base, name: `brand ${r.int(100)}`, ...(r.chance(0.6) ? { product_ids: someIds(r) } : {}) };
    case 'category':
      return {
        ...base,
        name: `category ${r.int(100)}`,
        ...(r.chance(0.4) ? { parent_category_id: r.chance(0.2) ? null : wireId(r, r.pick(IDS)) } : {}),
        ...(r.chance(0.5) ? { product_ids: someIds(r) } : {}),
      };
    case 'product':
      return {
        ...base,
        name: `product ${r.int(100)}`,
        ...(r.chance(0.5) ? { price: r.int(1000) / 10 } : {}),
        ...(r.chance(0.2) ? { short_description: null } : {}),
        ...(r.chance(0.5) ? { category_ids: someIds(r) } : {}),
        ...(r.chance(0.3) ? { relevant_product_ids: someIds(r) } : {}),
        ...(r.chance(0.3) ? { variant_ids: someIds(r) } : {}),
        ...(r.chance(0.3) ? { review_ids: someIds(r) } : {}),
      };
    case 'variant':
      return { ...base, product_id: wireId(r, r.pick(IDS)), ...(r.chance(0.5) ? { title: `v${r.int(100)}` } : {}) };
    case 'review':
      return {
        ...base,
        product_id: wireId(r, r.pick(IDS)),
        profile_id: wireId(r, r.pick(IDS)),
        ...(r.chance(0.5) ? { score: r.int(6) } : {}),
      };
    case 'profile':
      return { ...base, email: `p${id}@example.test`, ...(r.chance(0.5) ? { first_name: `n${r.int(100)}` } : {}) };
    case 'order':
      return {
        ...base,
        profile_id: wireId(r, r.pick(IDS)),
        products: someIds(r).map((product) => ({ id: product, quantity: 1 + r.int(3) })),
        ...(r.chance(0.3) ? { status: r.pick(['processing', 'shipped', 'completed', 'cancelled']) } : {}),
      };
    case 'shopping_cart':
      return { ...base, profile_id: wireId(r, r.pick(IDS)), product_ids: someIds(r) };
  }
}

/** Custom attributes in their stored form (date-times already normalised), so the model can compare them as sent. */
function customAttributes(r: Rng): Fields[] {
  const candidates: Fields[] = [
    { name: 'colour', string_value: r.pick(['red', 'blue']) },
    { name: 'size', integer_value: r.int(5) },
    { name: 'new', boolean_value: r.chance(0.5) },
    { name: 'since', date_value: `2024-01-0${1 + r.int(9)}` },
    { name: 'at', datetime_value: `2024-01-01T1${r.int(10)}:00:00.000Z` },
  ];
  return candidates.filter(() => r.chance(0.4));
}

function v2Operation(r: Rng): Operation {
  const roll = r.next();
  const id = r.pick(IDS);
  if (roll < 0.35) {
    return {
      type: 'put',
      kind: 'product',
      body: {
        id,
        ...(r.chance(0.6) ? { name: `product ${r.int(100)}` } : {}),
        ...(r.chance(0.4) ? { price: r.int(1000) / 10 } : {}),
        ...(r.chance(0.5) ? { brand_id: r.chance(0.2) ? null : r.pick(IDS) } : {}),
        ...(r.chance(0.4) ? { custom_attributes: r.chance(0.15) ? null : customAttributes(r) } : {}),
        ...(r.chance(0.15) ? { short_description: null } : {}),
      },
    };
  }
  if (roll < 0.6) {
    return {
      type: 'put',
      kind: 'category',
      body: {
        id,
        name: `category ${r.int(100)}`,
        ...(r.chance(0.4) ? { parent_category_id: r.chance(0.2) ? null : r.pick(IDS) } : {}),
        ...(r.chance(0.3) ? { custom_attributes: customAttributes(r) } : {}),
      },
    };
  }
  const assignment = { product: id, category: r.pick(IDS) };
  return roll < 0.85 ? { type: 'assign', ...assignment } : { type: 'unassign', ...assignment };
}

/** A v2 body of a kind: ids are strings, date-times already in their stored form. */
function v2Body(r: Rng, kind: Kind, id: string): Fields {
  switch (kind) {
    case 'brand':
      return { id, name: `brand ${r.int(100)}`, ...(r.chance(0.3) ? { custom_attributes: customAttributes(r) } : {}) };
    case 'variant':
      return { id, product_id: r.pick(IDS), ...(r.chance(0.5) ? { url: `https://shop.test/v${r.int(9)}` } : {}) };
    case 'review':
      return { id, product_id: r.pick(IDS), profile_id: r.pick(IDS), ...(r.chance(0.5) ? { description: `d${r.int(9)}` } : {}) };
    case 'profile':
      return { id, email: `p${id}@example.test`, ...(r.chance(0.5) ? { is_company: r.chance(0.5) } : {}) };
    case 'order':
      return {
        id,
        profile_id: r.pick(IDS),
        ordered_at: `2024-01-0${1 + r.int(9)}T00:00:00.000Z`,
        ...(r.chance(0.6)
          ? {
              products: IDS.filter(() => r.chance(0.4)).map((product) => ({
                id: product,
                quantity: 1 + r.int(3),
                variant_id: `v${r.int(3)}`,
              })),
            }
          : {}),
        ...(r.chance(0.3) ? { status: r.pick(['pending', 'shipped']) } : {}),
      };
    case 'shopping_cart':
      return { id, profile_id: r.pick(IDS), ...(r.chance(0.6) ? { product_ids: IDS.filter(() => r.chance(0.4)) } : {}) };
    default:
      return body(r, kind, id);
  }
}

function v2SurfaceOperation(r: Rng): Operation {
  const roll = r.next();
  const id = r.pick(IDS);
  const kind = r.pick(['brand', 'variant', 'review', 'profile', 'order', 'shopping_cart'] as const);
  if (roll < 0.35) return { type: 'put', kind, body: v2Body(r, kind, id) };
  if (roll < 0.45) return { type: 'v2delete', kind, id };
  if (roll < 0.75) {
    const parent = r.pick(['order', 'shopping_cart'] as const);
    const remove = r.chance(0.3);
    const body =
      parent === 'order' && !remove && r.chance(0.6) ? { quantity: r.int(5), ...(r.chance(0.5) ? { variant_id: 'vx' } : {}) } : undefined;
    return { type: 'line', parent, id, product: r.pick(IDS), remove, ...(body ? { body } : {}) };
  }
  if (roll < 0.88) return { type: 'relate', product: id, other: r.pick(IDS), present: r.chance(0.7) };
  return { type: 'unsubscribe', email: r.chance(0.5) ? `P${id}@Example.test` : `p${id}@example.test`, unsubscribed: r.chance(0.7) };
}

export function generate(r: Rng, count: number, kinds: Kind[] = KINDS, options: GenerateOptions = {}): Operation[] {
  const operations: Operation[] = [];
  for (let index = 0; index < count; index += 1) {
    if (options.v2Surface && r.chance(0.5)) {
      operations.push(v2SurfaceOperation(r));
      continue;
    }
    if (options.v2 && r.chance(0.4)) {
      operations.push(v2Operation(r));
      continue;
    }
    const kind = r.pick(kinds);
    const id = r.pick(IDS);
    operations.push(r.chance(0.3) ? { type: 'delete', kind, id } : { type: 'write', kind, body: body(r, kind, id) });
  }
  return operations;
}

/** Ids become strings, as the service stores them. */
function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, key === 'quantity' ? inner : canonical(inner)]));
  }
  return typeof value === 'number' ? String(value) : value;
}
function canonicalBody(kind: Kind, fields: Fields): Fields {
  const out: Fields = {};
  for (const [key, value] of Object.entries(fields)) {
    const isId = key === 'id' || key.endsWith('_id') || key.endsWith('_ids') || key === 'products';
    out[key] = isId ? canonical(value) : value;
  }
  void kind;
  return out;
}

export interface Sent {
  operation: Operation;
  requestId: string;
  status: number;
}

export async function send(
  env: TestEnvironment,
  token: string,
  languageId: string,
  operation: Operation,
  requestId: string,
): Promise<Sent> {
  const headers = { 'x-request-id': requestId };
  const base = `/api/v2/languages/${languageId}`;
  const expect = (allowed: number[], response: { status: number; text: string }) => {
    if (!allowed.includes(response.status)) throw new Error(`${JSON.stringify(operation)} answered ${response.status}: ${response.text}`);
    return { operation, requestId, status: response.status };
  };
  if (operation.type === 'v2delete') {
    return expect([204, 404], await env.request('DELETE', `${base}/${SEGMENT[operation.kind]}/${operation.id}`, { token, headers }));
  }
  if (operation.type === 'line') {
    const path = `${base}/${SEGMENT[operation.parent]}/${operation.id}/products/${operation.product}`;
    const response = await env.request(operation.remove ? 'DELETE' : 'PUT', path, { token, headers, body: operation.body });
    return expect([200, 204, 404], response);
  }
  if (operation.type === 'relate') {
    const path = `${base}/products/${operation.product}/relevant_products/${operation.other}`;
    return expect([204, 404], await env.request(operation.present ? 'PUT' : 'DELETE', path, { token, headers }));
  }
  if (operation.type === 'unsubscribe') {
    const response = await env.request('PUT', `${base}/global_unsubscribes`, {
      token,
      headers,
      body: { global_unsubscribe: { email: operation.email, unsubscribed: operation.unsubscribed } },
    });
    return expect([200], response);
  }
  if (operation.type === 'put') {
    const path = `/api/v2/languages/${languageId}/${SEGMENT[operation.kind]}`;
    const response = await env.request('PUT', path, { token, headers, body: { [operation.kind]: operation.body } });
    if (response.status !== 200) throw new Error(`put ${JSON.stringify(operation)} answered ${response.status}: ${response.text}`);
    return { operation, requestId, status: response.status };
  }
  if (operation.type === 'assign' || operation.type === 'unassign') {
    const path = `/api/v2/languages/${languageId}/products/${operation.product}/categories/${operation.category}`;
    const response = await env.request(operation.type === 'assign' ? 'PUT' : 'DELETE', path, { token, headers });
    if (response.status !== 204 && response.status !== 404) {
      throw new Error(`${operation.type} ${JSON.stringify(operation)} answered ${response.status}: ${response.text}`);
    }
    return { operation, requestId, status: response.status };
  }
  const path = `/api/v1/languages/${languageId}/${SEGMENT[operation.kind]}`;
  const response =
    operation.type === 'write'
      ? await env.request('POST', path, { token, headers, body: { [operation.kind]: operation.body } })
      : await env.request('DELETE', `${path}/${operation.id}`, { token, headers });
  if (operation.type === 'write' && response.status !== 200) {
    throw new Error(`write ${JSON.stringify(operation)} answered ${response.status}: ${response.text}`);
  }
  if (operation.type === 'delete' && response.status !== 200 && response.status !== 404) {
    throw new Error(`delete ${JSON.stringify(operation)} answered ${response.status}: ${response.text}`);
  }
  return { operation, requestId, status: response.status };
}

const auditRow = z.object({
  kind: z.string(),
  record_id: z.string(),
  action: z.string(),
  actor: z.string(),
  request_id: z.string().nullable(),
  write_seq: z.number(),
});

async function langKey(env: TestEnvironment, languageId: string, accountId: number): Promise<number> {
  return env.db.oneFirst(sql.type(z.object({ lang_key: z.number() }))`
    SELECT lang_key FROM languages WHERE id = ${languageId} AND account_id = ${accountId} AND deleted_at IS NULL
  `);
}

export interface Comparison {
  /** The acknowledged requests in the order the service numbered them, for diagnosing a mismatch. */
  history: string[];
  records: { actual: Record<string, Record<string, Fields>>; expected: Record<string, Record<string, Fields>> };
  links: { actual: Record<string, string[]>; expected: Record<string, string[]> };
  audit: { actual: string[]; expected: string[] };
  /** Per kind: the trigger-kept live counter (v2 list totals) and the live rows it must equal. */
  counts: { counter: Record<string, number>; rows: Record<string, number> };
}

export interface CompareOptions {
  /**
   * `seq` (default): replay in the order the service numbered the requests,
   * as read from the audit log (requests that left no audit entry are left
   * out). `sent`: replay every acknowledged request in the order it was sent,
   * which is the service's order when requests were sent one at a time; the
   * model then also decides which requests must leave no audit entry (an
   * assignment that changes nothing).
   */
  order?: 'seq' | 'sent';
}

/** Applies one acknowledged request to the model. */
function replay(model: Model, item: Sent): void {
  const operation = item.operation;
  switch (operation.type) {
    case 'write':
    case 'put':
      model.write(operation.kind, canonicalBody(operation.kind, operation.body));
      break;
    case 'delete':
      if (item.status === 200) model.delete(operation.kind, operation.id);
      break;
    case 'v2delete':
      if (item.status === 204) model.delete(operation.kind, operation.id);
      break;
    case 'line':
      if (item.status !== 404) model.line(operation.parent, operation.id, operation.product, operation.remove, operation.body);
      break;
    case 'relate':
      if (item.status === 204) model.relate(operation.product, operation.other, operation.present);
      break;
    case 'unsubscribe':
      model.unsubscribe(operation.email, operation.unsubscribed);
      break;
    case 'assign':
    case 'unassign':
      if (item.status === 204) model.assign(operation.product, operation.category, operation.type === 'assign');
      break;
  }
}

/**
 * Replays what the service acknowledged, in the order it numbered the
 * requests (the audit log's write_seq), through the model, and reads the
 * service's drained state for comparison.
 */
export async function compare(
  env: TestEnvironment,
  languageId: string,
  accountId: number,
  sent: Sent[],
  options: CompareOptions = {},
): Promise<Comparison> {
  const key = await langKey(env, languageId, accountId);
  const audit = await env.db.any(sql.type(auditRow)`
    SELECT kind, record_id, action, actor, request_id, write_seq FROM audit_log
    WHERE lang_key = ${key} AND kind <> 'language'
    ORDER BY seq
  `);
  const seqOf = new Map<string, number>();
  for (const row of audit) if (row.actor !== 'system' && row.request_id) seqOf.set(row.request_id, row.write_seq);

  const model = new Model();
  const ordered =
    options.order === 'sent'
      ? sent
      : sent.filter((item) => seqOf.has(item.requestId)).sort((x, y) => seqOf.get(x.requestId)! - seqOf.get(y.requestId)!);
  for (const item of ordered) replay(model, item);

  const rows = await env.db.any(sql.type(z.object({ kind: z.string(), id: z.string(), data: z.record(z.unknown()) }))`
    SELECT kind, id, data FROM records WHERE lang_key = ${key} AND live ORDER BY kind, id
  `);
  const actualRecords: Record<string, Record<string, Fields>> = {};
  for (const row of rows) {
    actualRecords[row.kind] ??= {};
    actualRecords[row.kind]![row.id] = normalise(row.data);
  }
  const expectedRecords: Record<string, Record<string, Fields>> = {};
  for (const [kind, table] of model.records) {
    for (const id of [...table.keys()].sort()) {
      expectedRecords[kind] ??= {};
      expectedRecords[kind]![id] = normalise(table.get(id)!);
    }
  }

  const links = await env.db.any(sql.type(z.object({ rel: z.string(), a: z.string(), b: z.string() }))`
    SELECT rel, a, b FROM links WHERE lang_key = ${key} ORDER BY rel, a, b
  `);
  const actualLinks: Record<string, string[]> = { product_category: [], relevant: [] };
  for (const link of links) actualLinks[link.rel]!.push(`${link.a}|${link.b}`);
  const expectedLinks = {
    product_category: [...model.links.product_category].sort(),
    relevant: [...model.links.relevant].sort(),
  };

  const counter = await env.db.any(sql.type(z.object({ kind: z.string(), total: z.number() }))`
    SELECT kind, sum(delta)::int8 AS total FROM record_count_deltas WHERE lang_key = ${key} GROUP BY kind
  `);
  const live = await env.db.any(sql.type(z.object({ kind: z.string(), total: z.number() }))`
    SELECT kind, count(*) AS total FROM records WHERE lang_key = ${key} AND live GROUP BY kind
  `);
  const byKind = (rows: ReadonlyArray<{ kind: string; total: number }>) =>
    Object.fromEntries(
      rows
        .filter((row) => row.total !== 0)
        .map((row) => [row.kind, row.total])
        .sort(),
    );

  const fact = (item: AuditFact) => `${item.kind}/${item.id}/${item.action}`;
  const history = ordered.map((item) => `${seqOf.get(item.requestId)} ${item.status} ${JSON.stringify(item.operation)}`);
  return {
    history,
    counts: { counter: byKind(counter), rows: byKind(live) },
    records: { actual: actualRecords, expected: expectedRecords },
    links: { actual: actualLinks, expected: expectedLinks },
    audit: {
      actual: audit.map((row) => fact({ kind: row.kind, id: row.record_id, action: row.action })).sort(),
      expected: model.audit.map(fact).sort(),
    },
  };
}
