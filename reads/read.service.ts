import type { CommonQueryMethods } from 'slonik';
import { type ListQuery, listQuerySchema } from '../catalogue/list-query.schema.js';
import { isStorableText } from '../catalogue/primitives.schema.js';
import { KINDS, type RecordKind } from '../catalogue/record-kinds.js';
import { parseOrThrow } from '../catalogue/validation.js';
import type { Database } from '../platform/db.js';
import { RecordNotFoundError } from '../platform/errors.js';
import { toLanguageResponse } from '../records/language.repository.js';
import { requireLanguage } from '../records/language.service.js';
import { findLiveRecord } from '../records/record.repository.js';
import type { StoredRecord } from '../sync/write.repository.js';
import {
  beginReadSnapshot,
  brandProductIds,
  countLanguages,
  foldRecordCount,
  type ItemShape,
  type ListParent,
  type ListScope,
  linkedIds,
  listPage,
  type PageWindow,
  pageOfLanguages,
  vacuumRecordCounts,
} from './read.repository.js';

/**
 * The v2 reads (CONTRACT 8): lists and sub-lists with pagination and
 * filters, single records, and the shapes they are shown in.
 */

export interface ReadContext {
  db: Database;
  accountId: number;
}

type Item = Record<string, unknown>;

/** A list response, already serialised: `{"data":[...],"meta":{"current_page","per_page","total"}}`. */
export type ListJson = string;

const fields = (...names: string[]): ItemShape => names.map((field) => ({ key: field, from: 'field', field }));
const ID: ItemShape = [{ key: 'id', from: 'id' }];
const CREATED: ItemShape = [{ key: 'created_at', from: 'created_at' }];
const UPDATED: ItemShape = [{ key: 'updated_at', from: 'updated_at' }];
const CUSTOM_ATTRIBUTES: ItemShape = [{ key: 'custom_attributes', from: 'custom_attributes' }];

/** SPEC "product (v2)": own fields, brand, current links and custom attributes. */
const PRODUCT: ItemShape = [
  ...ID,
  ...fields('name', 'visible', 'main_image', 'url', 'short_description', 'price', 'brand_id'),
  { key: 'category_ids', from: 'links', rel: 'product_category', side: 'a' },
  { key: 'relevant_product_ids', from: 'links', rel: 'relevant', side: 'a' },
  ...CUSTOM_ATTRIBUTES,
  ...CREATED,
  ...UPDATED,
];

/** SPEC "category (v2)". */
const CATEGORY: ItemShape = [
  ...ID,
  ...fields('name', 'parent_category_id'),
  { key: 'product_ids', from: 'links', rel: 'product_category', side: 'b' },
  ...fields('url', 'visible'),
  ...CREATED,
  ...UPDATED,
  ...CUSTOM_ATTRIBUTES,
];

/** SPEC "brand": product_ids are the live products whose brand_id is the brand. */
const BRAND: ItemShape = [
  ...ID,
  ...fields('name', 'url', 'content'),
  { key: 'product_ids', from: 'brand_products' },
  ...CREATED,
  ...UPDATED,
];

/** The v1 field table of the kind (its list fields are data fields: order products, cart product_ids). */
const plain = (kind: RecordKind): ItemShape => {
  const definition = KINDS[kind];
  return [
    ...ID,
    ...fields(...definition.dataFields),
    ...(definition.timestamps.created ? CREATED : []),
    ...(definition.timestamps.updated ? UPDATED : []),
  ];
};

const SHAPES: Record<RecordKind, ItemShape> = {
  product: PRODUCT,
  category: CATEGORY,
  brand: BRAND,
  variant: plain('variant'),
  review: plain('review'),
  profile: plain('profile'),
  order: plain('order'),
  shopping_cart: plain('shopping_cart'),
};

/** Summary items of the sub-listings and the profiles list (SPEC "Summary items", CONTRACT 8). */
const renamed = (key: string, field: string): ItemShape => [{ key, from: 'field', field }];
const VARIANT_SUMMARY: ItemShape = [...ID, ...renamed('name', 'title'), ...renamed('price', 'price_incl'), ...fields('main_image')];
const CATEGORY_SUMMARY: ItemShape = ID;
const PRODUCT_SUMMARY: ItemShape = [...ID, ...fields('name', 'url')];
const PROFILE_SUMMARY: ItemShape = [...ID, ...fields('email', 'first_name', 'last_name')];

/** Shows records in `shape` (the JavaScript twin of the lists' SQL): one query per list field, for all records at once. */
async function present(db: CommonQueryMethods, langKey: number, shape: ItemShape, records: readonly StoredRecord[]): Promise<Item[]> {
  const ids = records.map((record) => record.id);
  const lists = new Map<string, Map<string, string[]>>();
  for (const part of shape) {
    if (part.from === 'links') lists.set(part.key, await linkedIds(db, langKey, part.rel, part.side, ids));
    if (part.from === 'brand_products') lists.set(part.key, await brandProductIds(db, langKey, ids));
  }
  return records.map((record) => {
    const item: Item = {};
    for (const part of shape) {
      switch (part.from) {
        case 'id':
          item[part.key] = record.id;
          break;
        case 'created_at':
        case 'updated_at':
          item[part.key] = record[part.from];
          break;
        case 'field':
          item[part.key] = record.data[part.field] ?? null;
          break;
        case 'custom_attributes':
          item[part.key] = record.data['custom_attributes'] ?? [];
          break;
        case 'links':
        case 'brand_products':
          item[part.key] = lists.get(part.key)!.get(record.id) ?? [];
          break;
      }
    }
    return item;
  });
}

/**
 * Validates a list query (CONTRACT 8).
 * @throws {ValidationError} unknown_parameters, or invalid_parameters for a value out of range or malformed.
 */
export function parseListQuery(query: Record<string, unknown>): ListQuery {
  return parseOrThrow(listQuerySchema, query);
}

const listJson = (query: ListQuery, total: number, data: string): ListJson =>
  `{"data":${data},"meta":{"current_page":${query.page},"per_page":${query.per_page},"total":${total}}}`;

/**
 * An unfiltered total sums this many counter rows at most before the list
 * folds them. Writers fold now and then, but rows pile up where they cannot
 * (a long run of writes in transactions that do not see each other's rows).
 */
const FOLD_COUNTER_ROWS = 256;
/** Beyond this many folded rows the counter table is also vacuumed, so its scans skip the dead rows again. */
const VACUUM_COUNTER_ROWS = 10_000;
const VACUUM_DELAY_MS = 1_000;

/** (language, kind) counters being folded, per pool: one fold at a time each. */
const folding = new WeakMap<Database, Set<string>>();

/** Folds the counter in the background: the list that noticed it has its total already. */
function foldSoon(db: Database, langKey: number, kind: RecordKind, rows: number) {
  const keys = folding.get(db) ?? new Set<string>();
  folding.set(db, keys);
  const key = `${langKey}:${kind}`;
  if (keys.has(key)) return;
  keys.add(key);
  const fold = async () => {
    await foldRecordCount(db, langKey, kind);
    if (rows < VACUUM_COUNTER_ROWS) return;
    // Statements that overlapped the fold still see its rows, and a vacuum now could not remove them.
    await new Promise((resolve) => setTimeout(resolve, VACUUM_DELAY_MS));
    await vacuumRecordCounts(db);
  };
  fold()
    // A failed fold or vacuum leaves the rows summed correctly; the next list tries again.
    .catch(() => undefined)
    .finally(() => keys.delete(key));
}

interface ListSpec {
  kind: RecordKind;
  scope: ListScope;
  shape: ItemShape;
  /** The record the scope hangs from, which must exist (404 otherwise). */
  parent?: ListParent;
}

/**
 * Resolves the path first (language, then the parent of a sub-listing: 404s
 * come before a bad query, as for v1 bodies), then the query. The parent is
 * checked in the list's own statement when the query is valid.
 */
async function listOf(context: ReadContext, languageId: string, rawQuery: Record<string, unknown>, spec: ListSpec): Promise<ListJson> {
  const langKey = (await requireLanguage(context.db, context.accountId, languageId)).lang_key;
  const parsed = listQuerySchema.safeParse(rawQuery);
  if (spec.parent && (!parsed.success || !isStorableText(spec.parent.id))) {
    await requireLiveRecord(context.db, langKey, spec.parent.kind, spec.parent.id);
  }
  const query = parsed.success ? parsed.data : parseListQuery(rawQuery);
  const page = await listPage(context.db, langKey, {
    kind: spec.kind,
    scope: spec.scope,
    filters: query,
    page: query.page,
    perPage: query.per_page,
    shape: spec.shape,
    ...(spec.parent ? { parent: spec.parent } : {}),
  });
  if (!page.parent_live) throw new RecordNotFoundError(KINDS[spec.parent!.kind].resource);
  if (page.counter_rows > FOLD_COUNTER_ROWS) foldSoon(context.db, langKey, spec.kind, page.counter_rows);
  return listJson(query, page.total, page.data);
}

/** @throws {RecordNotFoundError} "<Resource> not found" when there is no live record with that id. */
async function requireLiveRecord(db: CommonQueryMethods, langKey: number, kind: RecordKind, id: string): Promise<StoredRecord> {
  const record = isStorableText(id) ? await findLiveRecord(db, langKey, kind, id) : null;
  if (!record) throw new RecordNotFoundError(KINDS[kind].resource);
  return record;
}

/** GET /languages/{language_id}/{segment}: the full records of a kind (profiles: summaries). */
export function listRecords(context: ReadContext, languageId: string, kind: RecordKind, query: Record<string, unknown>): Promise<ListJson> {
  const shape = kind === 'profile' ? PROFILE_SUMMARY : SHAPES[kind];
  return listOf(context, languageId, query, { kind, scope: { type: 'all' }, shape });
}

/** GET /languages/{language_id}/products/{product_id}/variants. */
export function listProductVariants(context: ReadContext, languageId: string, productId: string, query: Record<string, unknown>) {
  return listOf(context, languageId, query, {
    kind: 'variant',
    scope: { type: 'variants-of', productId },
    shape: VARIANT_SUMMARY,
    parent: { kind: 'product', id: productId },
  });
}

/** GET /languages/{language_id}/products/{product_id}/categories. */
export function listProductCategories(context: ReadContext, languageId: string, productId: string, query: Record<string, unknown>) {
  return listOf(context, languageId, query, {
    kind: 'category',
    scope: { type: 'linked', rel: 'product_category', side: 'b', other: productId },
    shape: CATEGORY_SUMMARY,
    parent: { kind: 'product', id: productId },
  });
}

/** GET /languages/{language_id}/categories/{category_id}/products. */
export function listCategoryProducts(context: ReadContext, languageId: string, categoryId: string, query: Record<string, unknown>) {
  return listOf(context, languageId, query, {
    kind: 'product',
    scope: { type: 'linked', rel: 'product_category', side: 'a', other: categoryId },
    shape: PRODUCT_SUMMARY,
    parent: { kind: 'category', id: categoryId },
  });
}

/**
 * GET /languages/{language_id}/{segment}/{id}: one record in its v2 shape.
 * @throws {LanguageNotFoundError} @throws {RecordNotFoundError}
 */
export async function getRecord(context: ReadContext, languageId: string, kind: RecordKind, id: string): Promise<Item> {
  const language = await requireLanguage(context.db, context.accountId, languageId);
  const record = await requireLiveRecord(context.db, language.lang_key, kind, id);
  const [item] = await present(context.db, language.lang_key, SHAPES[kind], [record]);
  return item!;
}

/**
 * A record just saved by a v2 PUT (as saveRecord presented it), shown in its
 * v2 shape with the links as currently stored.
 */
export async function presentSaved(context: ReadContext, languageId: string, kind: RecordKind, saved: Item): Promise<Item> {
  const language = await requireLanguage(context.db, context.accountId, languageId);
  const { id, created_at: createdAt, updated_at: updatedAt, ...data } = saved;
  const record: StoredRecord = {
    id: id as string,
    data,
    created_at: (createdAt as string | null | undefined) ?? null,
    updated_at: (updatedAt as string | null | undefined) ?? null,
  };
  const [item] = await present(context.db, language.lang_key, SHAPES[kind], [record]);
  return item!;
}

/**
 * The rows of the page within `total` results, or null past the end. A page
 * in the second half is read from the end of the index, so no page walks
 * more than half of the list.
 */
export function windowOf(query: Pick<ListQuery, 'page' | 'per_page'>, total: number): PageWindow | null {
  const offset = (query.page - 1) * query.per_page;
  if (offset >= total) return null;
  const limit = Math.min(query.per_page, total - offset);
  const fromEnd = offset * 2 + limit > total;
  return { offset: fromEnd ? total - offset - limit : offset, limit, fromEnd, total };
}

/** GET /api/v2/languages: the account's live languages (few: total and page in one repeatable-read snapshot). */
export async function listLanguages(context: ReadContext, rawQuery: Record<string, unknown>): Promise<ListJson> {
  const query = parseListQuery(rawQuery);
  return context.db.transaction(async (tx) => {
    await beginReadSnapshot(tx);
    const total = await countLanguages(tx, context.accountId, query);
    const window = windowOf(query, total);
    const data = window ? await pageOfLanguages(tx, context.accountId, query, window) : [];
    return listJson(query, total, JSON.stringify(data));
  });
}

/**
 * GET /api/v2/languages/{language_id}.
 * @throws {LanguageNotFoundError}
 */
export async function getLanguage(context: ReadContext, languageId: string): Promise<Item> {
  return toLanguageResponse(await requireLanguage(context.db, context.accountId, languageId));
}
