import type { CommonQueryMethods } from 'slonik';
import type { Database } from './db.js';
import { RecordNotFoundError } from './errors.js';
import { requireLanguage } from './language.service.js';
import { presentRecord } from './record.service.js';
import { toLanguageResponse } from './repositories/language.repository.js';
import {
  beginReadSnapshot,
  brandProductIds,
  countLanguages,
  countLiveRecords,
  countRecords,
  linkedIds,
  pageOfLanguages,
  pageOfRecords,
  type ListScope,
  type PageWindow,
} from './repositories/read.repository.js';
import { findLiveRecord, type StoredRecord } from './repositories/record.repository.js';
import { hasFilters, listQuerySchema, type ListQuery } from './schemas/list-query.schema.js';
import { isStorableText } from './schemas/primitives.js';
import { KINDS, type RecordKind } from './schemas/record-kinds.js';
import { parseOrThrow } from './validation.js';

/**
 * The v2 reads (CONTRACT 8): lists and sub-lists with pagination and
 * filters, single records, and the shapes they are shown in.
 */

export interface ReadContext {
  db: Database;
  accountId: number;
}

type Item = Record<string, unknown>;

export interface ListResult {
  data: Item[];
  meta: { current_page: number; per_page: number; total: number };
}

/** Shows a page of stored records of one kind; may read their links (one query per list field, for the whole page). */
type Presenter = (db: CommonQueryMethods, langKey: number, records: readonly StoredRecord[]) => Promise<Item[]>;

const value = (record: StoredRecord, field: string): unknown => record.data[field] ?? null;
const pick = (record: StoredRecord, fields: readonly string[]): Item => Object.fromEntries(fields.map((field) => [field, value(record, field)]));
const customAttributes = (record: StoredRecord): unknown => record.data['custom_attributes'] ?? [];

/** SPEC "product (v2)": own fields, brand, current links and custom attributes. */
const presentProducts: Presenter = async (db, langKey, records) => {
  const ids = records.map((record) => record.id);
  const categories = await linkedIds(db, langKey, 'product_category', 'a', ids);
  const relevant = await linkedIds(db, langKey, 'relevant', 'a', ids);
  return records.map((record) => ({
    id: record.id,
    ...pick(record, ['name', 'visible', 'main_image', 'url', 'short_description', 'price', 'brand_id']),
    category_ids: categories.get(record.id) ?? [],
    relevant_product_ids: relevant.get(record.id) ?? [],
    custom_attributes: customAttributes(record),
    created_at: record.created_at,
    updated_at: record.updated_at,
  }));
};

/** SPEC "category (v2)". */
const presentCategories: Presenter = async (db, langKey, records) => {
  const products = await linkedIds(db, langKey, 'product_category', 'b', records.map((record) => record.id));
  return records.map((record) => ({
    id: record.id,
    ...pick(record, ['name', 'parent_category_id']),
    product_ids: products.get(record.id) ?? [],
    ...pick(record, ['url', 'visible']),
    created_at: record.created_at,
    updated_at: record.updated_at,
    custom_attributes: customAttributes(record),
  }));
};

/** SPEC "brand": product_ids are the live products whose brand_id is the brand. */
const presentBrands: Presenter = async (db, langKey, records) => {
  const products = await brandProductIds(db, langKey, records.map((record) => record.id));
  return records.map((record) => ({
    id: record.id,
    ...pick(record, ['name', 'url', 'content']),
    product_ids: products.get(record.id) ?? [],
    created_at: record.created_at,
    updated_at: record.updated_at,
  }));
};

/** The v1 field table of the kind (its list fields are data fields: order products, cart product_ids). */
const presentPlain =
  (kind: RecordKind): Presenter =>
  async (_db, _langKey, records) =>
    records.map((record) => presentRecord(KINDS[kind], record));

const PRESENTERS: Record<RecordKind, Presenter> = {
  product: presentProducts,
  category: presentCategories,
  brand: presentBrands,
  variant: presentPlain('variant'),
  review: presentPlain('review'),
  profile: presentPlain('profile'),
  order: presentPlain('order'),
  shopping_cart: presentPlain('shopping_cart'),
};

/** Summary items of the sub-listings and the profiles list (SPEC "Summary items", CONTRACT 8). */
const summary =
  (shape: (record: StoredRecord) => Item): Presenter =>
  async (_db, _langKey, records) =>
    records.map(shape);

const variantSummary = summary((record) => ({
  id: record.id,
  name: value(record, 'title'),
  price: value(record, 'price_incl'),
  main_image: value(record, 'main_image'),
}));
const categorySummary = summary((record) => ({ id: record.id }));
const productSummary = summary((record) => ({ id: record.id, name: value(record, 'name'), url: value(record, 'url') }));
const profileSummary = summary((record) => ({
  id: record.id,
  email: value(record, 'email'),
  first_name: value(record, 'first_name'),
  last_name: value(record, 'last_name'),
}));

/**
 * Validates a list query (CONTRACT 8).
 * @throws {ValidationError} unknown_parameters, or invalid_parameters for a value out of range or malformed.
 */
export function parseListQuery(query: Record<string, unknown>): ListQuery {
  return parseOrThrow(listQuerySchema, query);
}

/**
 * The rows of the page within `total` results, or null past the end. A page
 * in the second half is read from the end of the index, so no page walks
 * more than half of the list.
 */
function windowOf(query: ListQuery, total: number): PageWindow | null {
  const offset = (query.page - 1) * query.per_page;
  if (offset >= total) return null;
  const limit = Math.min(query.per_page, total - offset);
  const fromEnd = offset * 2 + limit > total;
  return { offset: fromEnd ? total - offset - limit : offset, limit, fromEnd, total };
}

async function paginate(
  query: ListQuery,
  total: number,
  fetch: (window: PageWindow) => Promise<Item[]>,
): Promise<ListResult> {
  const window = windowOf(query, total);
  return {
    data: window ? await fetch(window) : [],
    meta: { current_page: query.page, per_page: query.per_page, total },
  };
}

/** One snapshot for the whole list: total, page and links agree. */
function inSnapshot<T>(db: Database, work: (tx: CommonQueryMethods) => Promise<T>): Promise<T> {
  return db.transaction(async (tx) => {
    await beginReadSnapshot(tx);
    return work(tx);
  });
}

interface ListSpec {
  kind: RecordKind;
  scope: ListScope;
  present: Presenter;
  /** The record the scope hangs from, which must exist (404 otherwise). */
  parent?: { kind: RecordKind; id: string };
}

/**
 * Resolves the path first (language, then the parent of a sub-listing: 404s
 * come before a bad query, as for v1 bodies), then the query.
 */
async function listOf(context: ReadContext, languageId: string, rawQuery: Record<string, unknown>, spec: ListSpec): Promise<ListResult> {
  const langKey = (await requireLanguage(context.db, context.accountId, languageId)).lang_key;
  if (spec.parent) await requireLiveRecord(context.db, langKey, spec.parent.kind, spec.parent.id);
  const query = parseListQuery(rawQuery);
  return inSnapshot(context.db, async (tx) => {
    const total =
      spec.scope.type === 'all' && !hasFilters(query)
        ? await countLiveRecords(tx, langKey, spec.kind)
        : await countRecords(tx, langKey, spec.kind, spec.scope, query);
    return paginate(query, total, async (window) => spec.present(tx, langKey, await pageOfRecords(tx, langKey, spec.kind, spec.scope, query, window)));
  });
}

/** @throws {RecordNotFoundError} "<Resource> not found" when there is no live record with that id. */
async function requireLiveRecord(db: CommonQueryMethods, langKey: number, kind: RecordKind, id: string): Promise<StoredRecord> {
  const record = isStorableText(id) ? await findLiveRecord(db, langKey, kind, id) : null;
  if (!record) throw new RecordNotFoundError(KINDS[kind].resource);
  return record;
}

/** GET /languages/{language_id}/{segment}: the full records of a kind (profiles: summaries). */
export function listRecords(context: ReadContext, languageId: string, kind: RecordKind, query: Record<string, unknown>): Promise<ListResult> {
  const present = kind === 'profile' ? profileSummary : PRESENTERS[kind];
  return listOf(context, languageId, query, { kind, scope: { type: 'all' }, present });
}

/** GET /languages/{language_id}/products/{product_id}/variants. */
export function listProductVariants(context: ReadContext, languageId: string, productId: string, query: Record<string, unknown>) {
  return listOf(context, languageId, query, {
    kind: 'variant',
    scope: { type: 'variants-of', productId },
    present: variantSummary,
    parent: { kind: 'product', id: productId },
  });
}

/** GET /languages/{language_id}/products/{product_id}/categories. */
export function listProductCategories(context: ReadContext, languageId: string, productId: string, query: Record<string, unknown>) {
  return listOf(context, languageId, query, {
    kind: 'category',
    scope: { type: 'linked', rel: 'product_category', side: 'b', other: productId },
    present: categorySummary,
    parent: { kind: 'product', id: productId },
  });
}

/** GET /languages/{language_id}/categories/{category_id}/products. */
export function listCategoryProducts(context: ReadContext, languageId: string, categoryId: string, query: Record<string, unknown>) {
  return listOf(context, languageId, query, {
    kind: 'product',
    scope: { type: 'linked', rel: 'product_category', side: 'a', other: categoryId },
    present: productSummary,
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
  const [item] = await PRESENTERS[kind](context.db, language.lang_key, [record]);
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
  const [item] = await PRESENTERS[kind](context.db, language.lang_key, [record]);
  return item!;
}

/** GET /api/v2/languages: the account's live languages. */
export async function listLanguages(context: ReadContext, rawQuery: Record<string, unknown>): Promise<ListResult> {
  const query = parseListQuery(rawQuery);
  return inSnapshot(context.db, async (tx) => {
    const total = await countLanguages(tx, context.accountId, query);
    return paginate(query, total, async (window) => [...(await pageOfLanguages(tx, context.accountId, query, window))]);
  });
}

/**
 * GET /api/v2/languages/{language_id}.
 * @throws {LanguageNotFoundError}
 */
export async function getLanguage(context: ReadContext, languageId: string): Promise<Item> {
  return toLanguageResponse(await requireLanguage(context.db, context.accountId, languageId));
}
