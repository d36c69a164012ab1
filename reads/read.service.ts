import type { CommonQueryMethods } from 'slonik';
import { encodeCursor } from '../catalogue/list-cursor.js';
import {
  hasFilters,
  pageQuerySchema,
  profileListQuerySchema,
  type RecordListQuery,
  recordListQuerySchema,
} from '../catalogue/list-query.schema.js';
import { isStorableText } from '../catalogue/primitives.schema.js';
import { KINDS, LINE_LISTS, type LineParent, type StoredKind } from '../catalogue/record-kinds.js';
import { parseOrThrow } from '../catalogue/validation.js';
import type { Database } from '../platform/db.js';
import { RecordNotFoundError, ValidationError } from '../platform/errors.js';
import { requireLanguage } from '../records/language.service.js';
import { findLiveRecord, findLiveRecords } from '../records/record.repository.js';
import type { StoredRecord } from '../sync/write.repository.js';
import { FOLD_COUNTER_ROWS } from './counter-folds.js';
import type { ItemShape } from './item-shape.js';
import { listPage } from './list-page.js';
import type { ListParent, ListPosition, ListRequest, ListScope } from './list-request.js';
import { type ListJson, listJson, type ReadContext } from './read-context.js';
import { ReplicaBehindError } from './read-router.js';
import { type Item, type Line, presentRecords } from './record-presenter.js';
import { CATEGORY_SUMMARY, PRODUCT, PRODUCT_SUMMARY, PROFILE_SUMMARY, SHAPES, VARIANT_SUMMARY } from './v2-shapes.js';

/**
 * The v2 reads (interface §8): lists and sub-lists with pagination and
 * filters, and single records, in the shapes of v2-shapes.ts.
 */

interface ListSpec {
  kind: StoredKind;
  scope: ListScope | ((query: Record<string, unknown>) => ListScope);
  shape: ItemShape;
  /** The record the scope hangs from, which must exist (404 otherwise). */
  parent?: ListParent;
  /** The query's schema: pagination and timestamp filters unless stated. */
  querySchema?: typeof recordListQuerySchema | typeof profileListQuerySchema;
}

/**
 * Resolves the path first (language, then the parent of a sub-listing: 404s
 * come before a bad query, as for v1 bodies), then the query. The parent is
 * checked in the list's own statement when the query is valid.
 */
async function listOf(context: ReadContext, languageId: string, rawQuery: Record<string, unknown>, spec: ListSpec): Promise<ListJson> {
  const schema = spec.querySchema ?? recordListQuerySchema;
  const parsed = schema.safeParse(rawQuery);
  const refused = !parsed.success || (parsed.data.cursor !== undefined && rawQuery['page'] !== undefined);
  // The language comes from the process's cache when the list's statement will run, which confirms in its own
  // snapshot that the language is still live; a query about to be refused looks it up afresh (a 404 comes first).
  const langKey = (await context.languages.get(context.accountId, languageId, refused)).lang_key;
  if (spec.parent && (!parsed.success || !isStorableText(spec.parent.id))) {
    await requireLiveRecord(context.db, langKey, spec.parent.kind, spec.parent.id);
  }
  const query: RecordListQuery & Record<string, unknown> = parsed.success ? parsed.data : parseOrThrow(schema, rawQuery);
  if (query.cursor && rawQuery['page'] !== undefined) {
    throw new ValidationError('invalid_parameters', ['cursor'], 'Give either page or cursor, not both');
  }
  const scope = typeof spec.scope === 'function' ? spec.scope(query) : spec.scope;
  const currentPage = query.cursor?.page ?? query.page;
  const start = (currentPage - 1) * query.per_page;
  const deep = scope.type === 'all' && !hasFilters(query);
  const position: ListPosition = query.cursor
    ? { type: 'after', key: query.cursor.after }
    : ((deep ? await context.caches.anchors.deepPosition(langKey, spec.kind, start) : undefined) ?? { type: 'page' });
  const request: ListRequest = {
    kind: spec.kind,
    scope,
    filters: query,
    page: currentPage,
    perPage: query.per_page,
    shape: spec.shape,
    position,
    ...(spec.parent ? { parent: spec.parent } : {}),
  };
  const { page, reused } = await listPage(context.reader, context.caches.statements, langKey, request);
  if (!page.language_live) {
    // A replica behind the primary's languages would say so on every try: the primary answers instead.
    if (context.replica) throw new ReplicaBehindError(`language ${languageId}`);
    // Deleted since it was cached: looked up again, it is gone (404) or created again under a new key.
    context.languages.forget(context.accountId, languageId);
    return listOf(context, languageId, rawQuery, spec);
  }
  if (!page.parent_live) throw new RecordNotFoundError(KINDS[spec.parent!.kind].resource);
  // A page reused as kept read nothing now: the counter and the anchors are looked after by pages read.
  if (!reused && page.counter_rows > FOLD_COUNTER_ROWS) context.caches.folds.foldSoon(langKey, spec.kind, page.counter_rows);
  if (!reused && deep && !query.cursor) context.caches.anchors.noteDeepRead(langKey, spec.kind, start, page.total, page.anchor_valid);
  // A page answered again is answered with the bytes it was answered with: the request is part of its key.
  let body = context.caches.answered.get(page);
  if (!body) {
    const next =
      page.more && page.last_created_at !== null && page.last_id !== null
        ? encodeCursor({ page: currentPage + 1, after: { created_at: page.last_created_at, id: page.last_id } })
        : null;
    body = Buffer.from(
      `{"data":${page.data},"meta":{"current_page":${currentPage},"per_page":${query.per_page},"total":${page.total},"next_cursor":${JSON.stringify(next)}}}`,
    );
    context.caches.answered.set(page, body);
  }
  return body;
}

/** @throws {RecordNotFoundError} "<Resource> not found" when there is no live record with that id. */
async function requireLiveRecord(db: CommonQueryMethods, langKey: number, kind: StoredKind, id: string): Promise<StoredRecord> {
  const record = isStorableText(id) ? await findLiveRecord(db, langKey, kind, id) : null;
  if (!record) throw new RecordNotFoundError(KINDS[kind].resource);
  return record;
}

/**
 * GET /languages/{language_id}/{segment}: the full records of a kind
 * (profiles: summaries, optionally only those with one of `emails[]`).
 */
export function listRecords(context: ReadContext, languageId: string, kind: StoredKind, query: Record<string, unknown>): Promise<ListJson> {
  if (kind === 'profile') {
    return listOf(context, languageId, query, {
      kind,
      shape: PROFILE_SUMMARY,
      querySchema: profileListQuerySchema,
      scope: (parsed) => {
        const emails = parsed['emails[]'] as string[] | undefined;
        return emails ? { type: 'emails', emails } : { type: 'all' };
      },
    });
  }
  return listOf(context, languageId, query, { kind, scope: { type: 'all' }, shape: SHAPES[kind] });
}

/** A sub-listing: the kind of the record it hangs from, and the list it shows of that record's `id`. */
interface SubListingSpec {
  parent: StoredKind;
  kind: StoredKind;
  shape: ItemShape;
  scope: (id: string) => ListScope;
}

const linked =
  (rel: 'product_category' | 'relevant', side: 'a' | 'b') =>
  (id: string): ListScope => ({ type: 'linked', rel, side, other: id });

/** The sub-listings of a parent record (interface §8.3, §15), by name. */
const SUB_LISTINGS = {
  /** .../brands/{brand_id}/products: whole v2 products. */
  'brand-products': { parent: 'brand', kind: 'product', shape: PRODUCT, scope: (id) => ({ type: 'brand-products', brandId: id }) },
  /** .../products/{product_id}/relevant_products: whole v2 products. */
  'relevant-products': { parent: 'product', kind: 'product', shape: PRODUCT, scope: linked('relevant', 'b') },
  /** .../products/{product_id}/variants. */
  'product-variants': {
    parent: 'product',
    kind: 'variant',
    shape: VARIANT_SUMMARY,
    scope: (id) => ({ type: 'variants-of', productId: id }),
  },
  /** .../products/{product_id}/categories. */
  'product-categories': { parent: 'product', kind: 'category', shape: CATEGORY_SUMMARY, scope: linked('product_category', 'b') },
  /** .../categories/{category_id}/products. */
  'category-products': { parent: 'category', kind: 'product', shape: PRODUCT_SUMMARY, scope: linked('product_category', 'a') },
} satisfies Record<string, SubListingSpec>;
export type SubListing = keyof typeof SUB_LISTINGS;

/** A sub-listing of the record `parentId` (a 404 when it is not live). */
export function listSubListing(
  context: ReadContext,
  languageId: string,
  listing: SubListing,
  parentId: string,
  query: Record<string, unknown>,
): Promise<ListJson> {
  const { parent, kind, shape, scope }: SubListingSpec = SUB_LISTINGS[listing];
  return listOf(context, languageId, query, { kind, shape, scope: scope(parentId), parent: { kind: parent, id: parentId } });
}

/**
 * GET .../orders/{order_id}/products and .../shopping_carts/{cart_id}/products
 * (interface §15): the parent's lines in line order, `page` and `per_page` only.
 * @throws {LanguageNotFoundError} @throws {RecordNotFoundError} @throws {ValidationError}
 */
export async function listLines(
  context: ReadContext,
  languageId: string,
  parent: LineParent,
  parentId: string,
  rawQuery: Record<string, unknown>,
): Promise<ListJson> {
  const langKey = (await requireLanguage(context.db, context.accountId, languageId)).lang_key;
  const record = await requireLiveRecord(context.db, langKey, parent, parentId);
  const query = parseOrThrow(pageQuerySchema, rawQuery);
  const stored = record.data[LINE_LISTS[parent].field];
  const lines = Array.isArray(stored) ? stored : [];
  const start = (query.page - 1) * query.per_page;
  const items = lines.slice(start, start + query.per_page).map((line: (Line & { custom_attributes?: unknown }) | string) =>
    typeof line === 'string'
      ? { shopping_cart_id: record.id, product_id: line }
      : {
          order_id: record.id,
          product_id: line.id,
          quantity: line.quantity ?? null,
          variant_id: line.variant_id ?? null,
          custom_attributes: line.custom_attributes ?? [],
        },
  );
  return listJson(
    { ...query, created_after: undefined, created_before: undefined, updated_after: undefined, updated_before: undefined },
    lines.length,
    JSON.stringify(items),
  );
}

/**
 * GET /languages/{language_id}/{segment}/{id}: one record in its v2 shape.
 * @throws {LanguageNotFoundError} @throws {RecordNotFoundError}
 */
export async function getRecord(context: ReadContext, languageId: string, kind: StoredKind, id: string): Promise<Item> {
  const language = await requireLanguage(context.db, context.accountId, languageId);
  const record = await requireLiveRecord(context.db, language.lang_key, kind, id);
  const [item] = await presentRecords(context.db, language.lang_key, SHAPES[kind], [record]);
  return item!;
}

/**
 * The live records of a kind among `ids`, each in its v2 shape as GET one
 * answers it now, by id; an id with no live record is absent. One query for
 * the records and one per list field, for all of them (the change feed's
 * `include=record`).
 */
export async function presentLiveRecords(
  db: Database,
  langKey: number,
  kind: StoredKind,
  ids: readonly string[],
): Promise<Map<string, Item>> {
  const storable = [...new Set(ids)].filter((id) => isStorableText(id));
  const records = await findLiveRecords(db, langKey, kind, storable);
  const items = await presentRecords(db, langKey, SHAPES[kind], records);
  return new Map(items.map((item, index) => [records[index]!.id, item]));
}

/**
 * A record just saved by a v2 PUT, shown in its v2 shape (the same as GET
 * one) with its links as currently stored.
 */
export async function presentStored(context: ReadContext, languageId: string, kind: StoredKind, record: StoredRecord): Promise<Item> {
  const language = await requireLanguage(context.db, context.accountId, languageId);
  const [item] = await presentRecords(context.db, language.lang_key, SHAPES[kind], [record]);
  return item!;
}
