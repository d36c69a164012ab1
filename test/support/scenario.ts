import { sql } from 'slonik';
import { z } from 'zod';
import { Model, normalise, type AuditFact, type Fields, type Kind } from './model.js';
import type { TestEnvironment } from './harness.js';

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
  | { type: 'delete'; kind: Kind; id: string };

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
      return { ...base, product_id: wireId(r, r.pick(IDS)), profile_id: wireId(r, r.pick(IDS)), ...(r.chance(0.5) ? { score: r.int(6) } : {}) };
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

export function generate(r: Rng, count: number, kinds: Kind[] = KINDS): Operation[] {
  const operations: Operation[] = [];
  for (let index = 0; index < count; index += 1) {
    const kind = r.pick(kinds);
    const id = r.pick(IDS);
    operations.push(r.chance(0.3) ? { type: 'delete', kind, id } : { type: 'write', kind, body: body(r, kind, id) });
  }
  return operations;
}

const SEGMENTS: Record<Kind, string> = {
  brand: 'brands',
  category: 'categories',
  product: 'products',
  variant: 'variants',
  review: 'reviews',
  profile: 'profiles',
  order: 'orders',
  shopping_cart: 'shopping_carts',
};

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

export async function send(env: TestEnvironment, token: string, languageId: string, operation: Operation, requestId: string): Promise<Sent> {
  const headers = { 'x-request-id': requestId };
  const path = `/api/v1/languages/${languageId}/${SEGMENTS[operation.kind]}`;
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

const auditRow = z.object({ kind: z.string(), record_id: z.string(), action: z.string(), actor: z.string(), request_id: z.string().nullable(), write_seq: z.number() });

async function langKey(env: TestEnvironment, languageId: string, accountId: number): Promise<number> {
  return env.db.oneFirst(sql.type(z.object({ lang_key: z.number() }))`
    SELECT lang_key FROM languages WHERE id = ${languageId} AND account_id = ${accountId} AND deleted_at IS NULL
  `);
}

export interface Comparison {
  records: { actual: Record<string, Record<string, Fields>>; expected: Record<string, Record<string, Fields>> };
  links: { actual: Record<string, string[]>; expected: Record<string, string[]> };
  audit: { actual: string[]; expected: string[] };
}

/**
 * Replays what the service acknowledged, in the order it numbered the
 * requests (the audit log's write_seq), through the model, and reads the
 * service's drained state for comparison.
 */
export async function compare(env: TestEnvironment, languageId: string, accountId: number, sent: Sent[]): Promise<Comparison> {
  const key = await langKey(env, languageId, accountId);
  const audit = await env.db.any(sql.type(auditRow)`
    SELECT kind, record_id, action, actor, request_id, write_seq FROM audit_log
    WHERE lang_key = ${key} AND kind <> 'language'
    ORDER BY seq
  `);
  const seqOf = new Map<string, number>();
  for (const row of audit) if (row.actor !== 'system' && row.request_id) seqOf.set(row.request_id, row.write_seq);

  const model = new Model();
  const ordered = sent.filter((item) => seqOf.has(item.requestId)).sort((x, y) => seqOf.get(x.requestId)! - seqOf.get(y.requestId)!);
  for (const item of ordered) {
    if (item.operation.type === 'write') model.write(item.operation.kind, canonicalBody(item.operation.kind, item.operation.body));
    else if (item.status === 200) model.delete(item.operation.kind, item.operation.id);
  }

  const rows = await env.db.any(sql.type(z.object({ kind: z.string(), id: z.string(), data: z.record(z.unknown()) }))`
    SELECT kind, id, data FROM records WHERE lang_key = ${key} AND live ORDER BY kind, id
  `);
  const actualRecords: Record<string, Record<string, Fields>> = {};
  for (const row of rows) (actualRecords[row.kind] ??= {})[row.id] = normalise(row.data);
  const expectedRecords: Record<string, Record<string, Fields>> = {};
  for (const [kind, table] of model.records) {
    for (const id of [...table.keys()].sort()) (expectedRecords[kind] ??= {})[id] = normalise(table.get(id)!);
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

  const fact = (item: AuditFact) => `${item.kind}/${item.id}/${item.action}`;
  return {
    records: { actual: actualRecords, expected: expectedRecords },
    links: { actual: actualLinks, expected: expectedLinks },
    audit: {
      actual: audit.map((row) => fact({ kind: row.kind, id: row.record_id, action: row.action })).sort(),
      expected: model.audit.map(fact).sort(),
    },
  };
}
