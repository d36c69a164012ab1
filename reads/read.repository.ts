import { type CommonQueryMethods, type DatabasePool, sql } from 'slonik';
import { z } from 'zod';
import { type Language, languageSchema } from '../catalogue/language.schema.js';
import type { ListKey } from '../catalogue/list-cursor.js';
import { hasFilters, type ListFilters, MAX_PER_PAGE } from '../catalogue/list-query.schema.js';
import type { StoredKind } from '../catalogue/record-kinds.js';
import type { PreparedReader } from './prepared-read.js';

/**
 * Reads of the v2 lists. Every list is ordered by (created_at, id), the key
 * of the `records_list` index (WHERE live), which also carries updated_at, so
 * pages and counts are index-only range scans.
 */

const countRow = z.object({ total: z.number() });
const idsRow = z.object({ owner: z.string(), ids: z.array(z.string()) });

/** Which records of the kind a list holds. */
export type ListScope =
  | { type: 'all' }
  /** Variants of a product (by the variant's own product_id). */
  | { type: 'variants-of'; productId: string }
  /** Records linked to `other` through `rel`; `side` is the listed records' column. */
  | { type: 'linked'; rel: 'product_category' | 'relevant'; side: 'a' | 'b'; other: string }
  /** Products whose brand_id is the brand. */
  | { type: 'brand-products'; brandId: string }
  /** Profiles whose email is one of `emails` (lower case), compared case-insensitively. */
  | { type: 'emails'; emails: string[] };

export interface PageWindow {
  offset: number;
  limit: number;
  /** Walk the index from the end (for pages nearer the end than the start); the result is still ascending. */
  fromEnd: boolean;
  /** How many rows the whole list has. */
  total: number;
}

function scopeCondition(langKey: number, scope: ListScope) {
  switch (scope.type) {
    case 'all':
      return sql.fragment`TRUE`;
    case 'variants-of':
      return sql.fragment`kind = 'variant' AND (data ->> 'product_id') = ${scope.productId}`;
    case 'brand-products':
      return sql.fragment`kind = 'product' AND (data ->> 'brand_id') = ${scope.brandId}`;
    case 'emails':
      return sql.fragment`kind = 'profile' AND lower(data ->> 'email') = ANY(${sql.array(scope.emails, 'text')})`;
    case 'linked': {
      const mine = sql.identifier([scope.side]);
      const other = sql.identifier([scope.side === 'a' ? 'b' : 'a']);
      return sql.fragment`id IN (
        SELECT l.${mine} FROM links l
        WHERE l.lang_key = ${langKey} AND l.rel = ${scope.rel} AND l.${other} = ${scope.other}
      )`;
    }
  }
}

function filterCondition(filters: ListFilters) {
  const parts = [sql.fragment`TRUE`];
  if (filters.created_after !== undefined) parts.push(sql.fragment`created_at > ${filters.created_after}::timestamptz`);
  if (filters.created_before !== undefined) parts.push(sql.fragment`created_at < ${filters.created_before}::timestamptz`);
  if (filters.updated_after !== undefined) parts.push(sql.fragment`updated_at > ${filters.updated_after}::timestamptz`);
  if (filters.updated_before !== undefined) parts.push(sql.fragment`updated_at < ${filters.updated_before}::timestamptz`);
  return sql.join(parts, sql.fragment` AND `);
}

/**
 * One field of an item as the v2 reads show it. The same description is
 * shown by SQL (lists: the page's JSON is built in the list's own statement)
 * and by JavaScript (single records), so the two cannot drift apart.
 */
export type ItemPart =
  | { key: string; from: 'id' | 'created_at' | 'updated_at' | 'custom_attributes' }
  /** A data field, null when unset. */
  | { key: string; from: 'field'; field: string }
  /** The ids linked to the record through `rel` (the record on `side`), in id order. */
  | { key: string; from: 'links'; rel: 'product_category' | 'relevant'; side: 'a' | 'b' }
  /** The live products whose brand_id is the record, in list order. */
  | { key: string; from: 'brand_products' }
  /** A list held in a data field, [] when unset (a cart's product_ids). */
  | { key: string; from: 'list'; field: string }
  /** An order's lines as `{id, quantity, variant_id}` (absent values null). */
  | { key: string; from: 'order_lines' }
  /** The distinct products of an order's lines, in line order. */
  | { key: string; from: 'line_products' }
  /** The oldest live profile whose email is the record's id (a global unsubscribe), or null. */
  | { key: string; from: 'profile_by_email' };
export type ItemShape = readonly ItemPart[];

/** A timestamp exactly as the API shows it (db.ts: ISO 8601 in UTC with milliseconds). */
const isoText = (column: ReturnType<typeof sql.identifier>) =>
  sql.fragment`to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/** The SQL value of one part for the record `r`. */
function partValue(langKey: number, part: ItemPart) {
  switch (part.from) {
    case 'id':
      return sql.fragment`r.id`;
    case 'created_at':
      return sql.fragment`t.created_text`;
    case 'updated_at':
      // Most records were never updated: their created_at's text is formatted once for both.
      return sql.fragment`CASE WHEN r.updated_at = r.created_at THEN t.created_text ELSE ${isoText(sql.identifier(['r', 'updated_at']))} END`;
    case 'field':
      return sql.fragment`r.data -> ${part.field}`;
    case 'custom_attributes':
      return sql.fragment`coalesce(nullif(r.data -> 'custom_attributes', 'null'::jsonb), '[]'::jsonb)`;
    case 'links': {
      const mine = sql.identifier(['l', part.side]);
      const other = sql.identifier(['l', part.side === 'a' ? 'b' : 'a']);
      // A relation the language has no links of (often 'relevant') is not probed for each item: whether it
      // has any is read once per statement, in its snapshot, from the primary key (min() is its first entry;
      // an EXISTS was planned as a scan of the table, generic plans not knowing the relation is empty).
      return sql.fragment`CASE WHEN (SELECT min(l.a) FROM links l WHERE l.lang_key = ${langKey} AND l.rel = ${part.rel}) IS NOT NULL THEN to_json(ARRAY(
        SELECT ${other} FROM links l
        WHERE l.lang_key = ${langKey} AND l.rel = ${part.rel} AND ${mine} = r.id
        ORDER BY ${other}
      )) ELSE '[]'::json END`;
    }
    case 'brand_products':
      return sql.fragment`to_json(ARRAY(
        SELECT p.id FROM records p
        WHERE p.lang_key = ${langKey} AND p.kind = 'product' AND p.live AND (p.data ->> 'brand_id') = r.id
        ORDER BY p.created_at, p.id
      ))`;
    case 'list':
      return sql.fragment`CASE WHEN jsonb_typeof(r.data -> ${part.field}) = 'array' THEN r.data -> ${part.field} ELSE '[]'::jsonb END`;
    case 'order_lines':
      return sql.fragment`CASE WHEN jsonb_typeof(r.data -> 'products') = 'array' THEN (
        SELECT coalesce(jsonb_agg(jsonb_build_object(
          'id', line -> 'id',
          'quantity', coalesce(line -> 'quantity', 'null'::jsonb),
          'variant_id', coalesce(line -> 'variant_id', 'null'::jsonb)
        ) ORDER BY n), '[]'::jsonb)
        FROM jsonb_array_elements(r.data -> 'products') WITH ORDINALITY AS lines (line, n)
      ) ELSE '[]'::jsonb END`;
    case 'line_products':
      return sql.fragment`CASE WHEN jsonb_typeof(r.data -> 'products') = 'array' THEN to_jsonb(ARRAY(
        SELECT product FROM (
          SELECT line ->> 'id' AS product, min(n) AS first
          FROM jsonb_array_elements(r.data -> 'products') WITH ORDINALITY AS lines (line, n)
          GROUP BY 1
        ) AS distinct_products
        ORDER BY first
      )) ELSE '[]'::jsonb END`;
    case 'profile_by_email':
      return sql.fragment`(
        SELECT p.id FROM records p
        WHERE p.lang_key = ${langKey} AND p.kind = 'profile' AND p.live AND lower(p.data ->> 'email') = r.id
        ORDER BY p.created_seq
        LIMIT 1
      )`;
  }
}

/** The columns of an item; row_to_json of them gives the item with its keys in shape order. */
const itemColumns = (langKey: number, shape: ItemShape) =>
  sql.join(
    shape.map((part) => sql.fragment`${partValue(langKey, part)} AS ${sql.identifier([part.key])}`),
    sql.fragment`, `,
  );

/** The record a sub-listing hangs from; the list is only shown when it is live. */
export interface ListParent {
  kind: StoredKind;
  id: string;
}

/** Where a page starts. */
export type ListPosition =
  /** `(page - 1) * perPage` rows in, walked from whichever end of the list is nearer. */
  | { type: 'page' }
  /** Right after an item (a keyset cursor): an index seek, however deep. */
  | { type: 'after'; key: ListKey }
  /**
   * As `page`, but walked from a cached anchor (the item at `anchor.offset`)
   * when the list has not changed since `snapshot`, the snapshot the anchor
   * was read in; otherwise as `page`. Unfiltered `all` lists only.
   */
  | { type: 'anchor'; anchor: { offset: number; key: ListKey }; snapshot: string };

export interface ListRequest {
  kind: StoredKind;
  scope: ListScope;
  filters: ListFilters;
  page: number;
  perPage: number;
  shape: ItemShape;
  parent?: ListParent;
  position?: ListPosition;
}

const listRow = z.object({
  /** Whether the language is still live: the list's language may come from a cache (read.service.ts). */
  language_live: z.boolean(),
  parent_live: z.boolean(),
  total: z.number(),
  /** Rows summed for an unfiltered total (record_count_deltas): how far the counter is from folded. */
  counter_rows: z.number(),
  /** The page's items, a JSON array in list order. */
  data: z.string(),
  /** The key of the page's last item (for the next cursor), null for an empty page. */
  last_created_at: z.string().nullable(),
  last_id: z.string().nullable(),
  /** Whether items follow this page. */
  more: z.boolean(),
  /** With an `anchor` position: whether the anchor was still valid (and used). */
  anchor_valid: z.boolean(),
  /** The snapshot the statement read in: a page kept is reused while nothing was written since (list-page-cache.ts). */
  snapshot: z.string(),
});
export type ListPage = z.infer<typeof listRow>;

/**
 * A linked list (a category's products) with up to this many links is read
 * from its links and sorted; a larger one walks the list index in order,
 * probing the links. Postgres' own choice, with LIMIT, tends to walk even for
 * a small category of a big catalogue, probing thousands of records per page.
 */
export const DRIVE_FROM_LINKS_MAX = 50_000;

/** A list key as cursors and anchors carry it: created_at in UTC with microseconds, so no two keys collapse. */
const keyTime = (column: ReturnType<typeof sql.identifier>) =>
  sql.fragment`to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

const after = (key: ListKey, prefix?: string) => {
  const createdAt = sql.identifier(prefix ? [prefix, 'created_at'] : ['created_at']);
  const id = sql.identifier(prefix ? [prefix, 'id'] : ['id']);
  return sql.fragment`(${createdAt}, ${id}) > (${key.created_at}::timestamptz, ${key.id})`;
};

/**
 * A list's total and one page of it as JSON, in one statement, so both come
 * from one snapshot without a transaction around them.
 *
 * The total of an unfiltered list comes from the trigger-kept counter
 * (reads/sql/record_counts.sql), anything else from an index range count.
 * The page's keys come from an index-only scan: after a cursor's key (a
 * seek), or OFFSET over the list index from the nearer end, or from a cached
 * anchor near the page (so no page walks more than an anchor step); only the
 * page's own rows are then read from the table. A small linked list is read
 * from its links and sorted instead. Every branch but the chosen one gets
 * LIMIT 0, so it reads nothing.
 */
export async function listPage(
  reader: PreparedReader,
  langKey: number,
  request: ListRequest,
): Promise<{ page: ListPage; reused: boolean }> {
  const { text, values } = boundStatement(langKey, request);
  // Prepared with a generic plan unless filtered: a filter's selectivity decides the plan (prepared-read.ts).
  const read = () => reader.oneOf(text, values, listRow, !hasFilters(request.filters));
  // The statement (its text names the structure, the kind and the shape) and its values are the whole page.
  return reader.pages.page(langKey, `${reader.nameOf(text)} ${JSON.stringify(values)}`, read);
}

/** listStatement's text (as Postgres takes it) and values, from the statement cached for the request's structure. */
export function boundStatement(langKey: number, request: ListRequest): { text: string; values: unknown[] } {
  const statement = cachedStatement(request);
  const variables = variablesOf(langKey, request);
  return { text: statement.text, values: statement.values.map((value) => ('slot' in value ? variables[value.slot] : value.constant)) };
}

/*
 * The list statement is built once per structure (kind, scope and position
 * types, which filters, the parent's kind, the item shape), not per page:
 * building it from a hundred slonik fragments is a noticeable part of the
 * API's CPU per page. It is built with a marker in place of every value that varies
 * between requests of one structure; each marker's place in the values then
 * says where that request's value goes. Every other value is a constant of
 * the structure. read.repository.test.ts checks the cached statement against
 * a fresh one for each structure.
 */

/** The values of a request that vary between requests of one statement structure, by slot. */
function variablesOf(langKey: number, request: ListRequest): unknown[] {
  const { scope, filters } = request;
  const position = request.position ?? { type: 'page' };
  return [
    langKey,
    request.page,
    request.perPage,
    position.type === 'anchor' ? position.anchor.offset : undefined,
    position.type === 'anchor' ? position.snapshot : undefined,
    position.type === 'anchor' ? position.anchor.key.created_at : undefined,
    position.type === 'anchor' ? position.anchor.key.id : undefined,
    position.type === 'after' ? position.key.created_at : undefined,
    position.type === 'after' ? position.key.id : undefined,
    scope.type === 'variants-of'
      ? scope.productId
      : scope.type === 'brand-products'
        ? scope.brandId
        : scope.type === 'linked'
          ? scope.other
          : undefined,
    scope.type === 'emails' ? scope.emails : undefined,
    request.parent?.id,
    ...FILTER_KEYS.map((key) => filters[key]),
  ];
}

const FILTER_KEYS = ['created_after', 'created_before', 'updated_after', 'updated_before'] as const;
const MARK = '\u0000slot:';
/** Numeric markers: below any value a list statement holds. */
const NUMBER_MARK = -1_000_000_000;

/** The request with a marker for each of its variables (variablesOf's slots). */
function markedRequest(request: ListRequest): { langKey: number; request: ListRequest } {
  const text = (slot: number) => `${MARK}${slot}`;
  const number = (slot: number) => NUMBER_MARK - slot;
  const { scope } = request;
  const position = request.position ?? { type: 'page' };
  const filters: ListFilters = {};
  FILTER_KEYS.forEach((key, index) => {
    if (request.filters[key] !== undefined) filters[key] = text(12 + index);
  });
  return {
    langKey: number(0),
    request: {
      kind: request.kind,
      scope:
        scope.type === 'variants-of'
          ? { ...scope, productId: text(9) }
          : scope.type === 'brand-products'
            ? { ...scope, brandId: text(9) }
            : scope.type === 'linked'
              ? { ...scope, other: text(9) }
              : scope.type === 'emails'
                ? { ...scope, emails: [text(10)] }
                : scope,
      filters,
      page: number(1),
      perPage: number(2),
      shape: request.shape,
      position:
        position.type === 'anchor'
          ? { type: 'anchor', anchor: { offset: number(3), key: { created_at: text(5), id: text(6) } }, snapshot: text(4) }
          : position.type === 'after'
            ? { type: 'after', key: { created_at: text(7), id: text(8) } }
            : position,
      ...(request.parent ? { parent: { kind: request.parent.kind, id: text(11) } } : {}),
    },
  };
}

/** The slot of a marker value, or undefined for a constant. */
function slotOf(value: unknown): number | undefined {
  if (typeof value === 'number' && value <= NUMBER_MARK) return NUMBER_MARK - value;
  if (typeof value === 'string' && value.startsWith(MARK)) return Number(value.slice(MARK.length));
  if (Array.isArray(value) && typeof value[0] === 'string' && value[0].startsWith(MARK)) return slotOf(value[0]);
  return undefined;
}

interface CachedStatement {
  /** The text as Postgres takes it ($1, $2, ...). */
  text: string;
  /** Each value: a constant, or the slot of a request's variable. */
  values: Array<{ slot: number } | { constant: unknown }>;
}

/** Shapes are module constants (read.service.ts); each gets a number for the structure's key. */
const shapeIds = new WeakMap<ItemShape, number>();
let nextShapeId = 0;
const statements = new Map<string, CachedStatement>();
/** Structures are few (kind × scope × position × filters); the last this many are kept. */
const MAX_STATEMENTS = 1_000;

function structureOf(request: ListRequest): string {
  let shape = shapeIds.get(request.shape);
  if (shape === undefined) {
    shape = shapeIds.set(request.shape, nextShapeId).get(request.shape)!;
    nextShapeId += 1;
  }
  const { scope } = request;
  return [
    request.kind,
    scope.type,
    scope.type === 'linked' ? `${scope.rel}:${scope.side}` : '',
    FILTER_KEYS.map((key) => (request.filters[key] === undefined ? 0 : 1)).join(''),
    request.position?.type ?? 'page',
    request.parent?.kind ?? '',
    shape,
  ].join('|');
}

/** listStatement for the request's structure, with the places of its variables. */
function cachedStatement(request: ListRequest): CachedStatement {
  const structure = structureOf(request);
  let statement = statements.get(structure);
  if (!statement) {
    const marked = markedRequest(request);
    const built = listStatement(marked.langKey, marked.request);
    statement = {
      // slonik numbers its placeholders $slonik_1, $slonik_2, ... ; Postgres wants $1, $2, ...
      text: built.sql.replace(/\$slonik_(\d+)/g, '$$$1'),
      values: built.values.map((value) => {
        const slot = slotOf(value);
        return slot === undefined ? { constant: value } : { slot };
      }),
    };
    if (statements.size >= MAX_STATEMENTS) statements.clear();
    statements.set(structure, statement);
  }
  return statement;
}

/** The most rows a page reads: one more than the largest page (a cursor page's look-ahead row). */
const PAGE_ROWS_BOUND = sql.literalValue(String(MAX_PER_PAGE + 1));

/** The statement of listPage. */
export function listStatement(langKey: number, request: ListRequest) {
  const { kind, scope, filters } = request;
  const position = request.position ?? { type: 'page' };
  const keyset = position.type === 'after';
  const counted =
    scope.type === 'all' && !hasFilters(filters)
      ? sql.fragment`
          SELECT coalesce(sum(delta), 0)::int8 AS total, count(*) AS counter_rows
          FROM record_count_deltas
          WHERE lang_key = ${langKey} AND kind = ${kind}`
      : sql.fragment`
          SELECT count(*) AS total, 0::int8 AS counter_rows
          FROM records
          WHERE lang_key = ${langKey} AND kind = ${kind} AND live
            AND ${scopeCondition(langKey, scope)} AND ${filterCondition(filters)}`;
  const parentLive = request.parent
    ? sql.fragment`EXISTS (
        SELECT 1 FROM records
        WHERE lang_key = ${langKey} AND kind = ${request.parent.kind} AND id = ${request.parent.id} AND live
      )`
    : sql.fragment`TRUE`;
  // The list has the order it had when the anchor was read iff no counter row was written since (record_counts.sql).
  const anchorValid =
    position.type === 'anchor'
      ? sql.fragment`NOT EXISTS (
          SELECT 1 FROM record_count_deltas
          WHERE lang_key = ${langKey} AND kind = ${kind} AND NOT pg_visible_in_snapshot(xact, ${position.snapshot}::pg_snapshot)
        )`
      : sql.fragment`FALSE`;
  const anchorOffset = position.type === 'anchor' ? position.anchor.offset : 0;

  let fromLinks = sql.fragment`FALSE`;
  if (scope.type === 'linked') {
    const other = sql.identifier([scope.side === 'a' ? 'b' : 'a']);
    // With filters (or from a cursor) the total does not bound the links, so they are counted (up to the bound).
    const fewLinks =
      hasFilters(filters) || keyset
        ? sql.fragment`(SELECT count(*) FROM (
          SELECT 1 FROM links
          WHERE lang_key = ${langKey} AND rel = ${scope.rel} AND ${other} = ${scope.other}
          LIMIT ${DRIVE_FROM_LINKS_MAX + 1}
        ) AS bounded) <= ${DRIVE_FROM_LINKS_MAX}`
        : sql.fragment`TRUE`;
    fromLinks = sql.fragment`total <= ${DRIVE_FROM_LINKS_MAX} AND ${fewLinks}`;
  }

  const listed = sql.fragment`lang_key = ${langKey} AND kind = ${kind} AND live
        AND ${scopeCondition(langKey, scope)} AND ${filterCondition(filters)}`;
  // A walk finds one key, the page's edge: its first row (from the start or an anchor) or its last (from the end).
  const walk = (branch: 'forward' | 'backward' | 'anchor') => {
    const direction = branch === 'backward' ? sql.fragment`DESC` : sql.fragment`ASC`;
    const start = position.type === 'anchor' && branch === 'anchor' ? after(position.anchor.key) : sql.fragment`TRUE`;
    return sql.fragment`(
      SELECT created_at, id FROM records
      WHERE ${listed} AND ${start}
      ORDER BY created_at ${direction}, id ${direction}
      OFFSET (SELECT w.skip FROM w) LIMIT (SELECT CASE WHEN w.branch = ${branch} THEN 1 ELSE 0 END FROM w)
    )`;
  };
  const walks = [walk('forward'), walk('backward')];
  if (position.type === 'anchor') walks.push(walk('anchor'));
  // The page's rows in one range scan of the list index from its edge (or after a cursor's key): the
  // table rows come with the index entries, instead of one primary-key descent per row.
  const range = (branches: string[], bound: ReturnType<typeof sql.fragment>, direction: 'ASC' | 'DESC') => {
    const order = direction === 'DESC' ? sql.fragment`DESC` : sql.fragment`ASC`;
    return sql.fragment`(
      SELECT id, data, created_at, updated_at FROM records
      WHERE ${listed} AND ${bound}
      ORDER BY created_at ${order}, id ${order}
      LIMIT (SELECT CASE WHEN w.branch IN (${sql.join(branches, sql.fragment`, `)}) THEN w.size ELSE 0 END FROM w)
    )`;
  };
  const edge = sql.fragment`((SELECT created_at FROM edge), (SELECT id FROM edge))`;
  const branches = [
    range(position.type === 'anchor' ? ['forward', 'anchor'] : ['forward'], sql.fragment`(created_at, id) >= ${edge}`, 'ASC'),
    range(['backward'], sql.fragment`(created_at, id) <= ${edge}`, 'DESC'),
  ];
  if (position.type === 'after') branches.push(range(['after'], after(position.key), 'ASC'));
  if (scope.type === 'linked') {
    const mine = sql.identifier(['l', scope.side]);
    const other = sql.identifier(['l', scope.side === 'a' ? 'b' : 'a']);
    // OFFSET 0 fences keep the join driven from the links (one primary-key probe per link), then sorted.
    // Then one primary-key probe per page row, whatever the statistics say: the LIMIT keeps the planner from
    // flattening this into a join, which with statistics from before a bulk file (a kind it saw no rows of)
    // was planned as a scan of every record of the kind for each page row.
    branches.push(sql.fragment`(
      SELECT r.id, r.data, r.created_at, r.updated_at FROM (
        SELECT r.id FROM (
          SELECT ${mine} AS id FROM links l
          WHERE l.lang_key = ${langKey} AND l.rel = ${scope.rel} AND ${other} = ${scope.other}
          OFFSET 0
        ) AS linked
        CROSS JOIN LATERAL (
          SELECT id, created_at FROM records
          WHERE lang_key = ${langKey} AND kind = ${kind} AND id = linked.id AND live AND ${filterCondition(filters)}
            AND ${position.type === 'after' ? after(position.key) : sql.fragment`TRUE`}
          OFFSET 0
        ) AS r
        ORDER BY r.created_at, r.id
        OFFSET (SELECT w.skip FROM w) LIMIT (SELECT CASE WHEN w.branch = 'links' THEN w.size ELSE 0 END FROM w)
      ) AS page
      CROSS JOIN LATERAL (
        SELECT id, data, created_at, updated_at FROM records
        WHERE lang_key = ${langKey} AND kind = ${kind} AND id = page.id
        LIMIT 1
      ) AS r
    )`);
  }

  // From a cursor the page reads one row more than it shows: whether that row exists says whether more follow.
  const size = keyset
    ? sql.fragment`CASE WHEN c.total = 0 THEN 0 ELSE ${request.perPage}::int8 + 1 END`
    : sql.fragment`greatest(least(${request.perPage}::int8, c.total - q.start), 0)`;
  return sql.type(listRow)`
    WITH c AS MATERIALIZED (${counted}),
    anchor AS MATERIALIZED (SELECT ${anchorValid} AS valid),
    bounds AS MATERIALIZED (
      SELECT c.total, q.start, ${size} AS size
      FROM c, (SELECT (${request.page}::int8 - 1) * ${request.perPage} AS start) AS q
    ),
    -- Which branch reads the page (the others get LIMIT 0 and read nothing) and how many rows its walk skips.
    w AS MATERIALIZED (
      SELECT size, CASE
          WHEN branch = 'backward' THEN total - start - size
          WHEN branch = 'anchor' THEN start - ${anchorOffset}::int8 - 1
          WHEN ${keyset} THEN 0
          ELSE start
        END AS skip, branch
      FROM (
        SELECT bounds.*, CASE
          WHEN size = 0 THEN 'none'
          WHEN ${fromLinks} THEN 'links'
          WHEN ${keyset} THEN 'after'
          WHEN anchor.valid AND start > ${anchorOffset}::int8 THEN 'anchor'
          WHEN start * 2 + size > total THEN 'backward'
          ELSE 'forward'
        END AS branch
        FROM bounds, anchor
      ) AS chosen
    ),
    -- The walked branch's key: the page's first row, or its last when walked from the end (none for a
    -- cursor or a linked list's links).
    edge AS MATERIALIZED (SELECT created_at, id FROM (${sql.join(walks, sql.fragment` UNION ALL `)}) AS walks LIMIT 1),
    -- The constant LIMIT (in the text, not a parameter: prepared-read.ts plans this statement once for every
    -- page size) tells the planner the page is small; it cannot see the window's size.
    page AS (SELECT * FROM (${sql.join(branches, sql.fragment` UNION ALL `)}) AS branches LIMIT ${PAGE_ROWS_BOUND}::int8),
    items AS MATERIALIZED (
      SELECT r.created_at, r.id, row_to_json(item)::text AS json
      FROM page AS r
      CROSS JOIN LATERAL (SELECT ${isoText(sql.identifier(['r', 'created_at']))} AS created_text) AS t
      CROSS JOIN LATERAL (SELECT ${itemColumns(langKey, request.shape)}) AS item
      ORDER BY r.created_at, r.id
      LIMIT ${request.perPage}::int8
    ),
    -- Ordered by the timestamp, not its text: the text is formatted for the one row kept.
    last AS (SELECT ${keyTime(sql.identifier(['i', 'created_at']))} AS created_at, i.id FROM items AS i ORDER BY i.created_at DESC, i.id DESC LIMIT 1)
    SELECT
      EXISTS (SELECT 1 FROM languages WHERE lang_key = ${langKey} AND deleted_at IS NULL) AS language_live,
      ${parentLive} AS parent_live,
      (SELECT total FROM c) AS total,
      (SELECT counter_rows FROM c) AS counter_rows,
      coalesce((SELECT '[' || string_agg(json, ',' ORDER BY created_at, id) || ']' FROM items), '[]') AS data,
      (SELECT created_at FROM last) AS last_created_at,
      (SELECT id FROM last) AS last_id,
      CASE WHEN ${keyset} THEN (SELECT count(*) FROM page) > ${request.perPage}::int8
           ELSE (SELECT start + size < total FROM bounds) END AS more,
      (SELECT valid FROM anchor) AS anchor_valid,
      pg_current_snapshot()::text AS snapshot
  `;
}

/**
 * The keys of an unfiltered list at every `step` items (the items at offsets
 * step - 1, 2 * step - 1, ...), and the snapshot they were read in: anchors
 * that let deep pages start near their first row (listStatement, 'anchor').
 * One index-only scan of the whole list, in a snapshot of its own.
 */
export async function readListAnchors(db: DatabasePool, langKey: number, kind: StoredKind, step: number) {
  return db.transaction(async (tx) => {
    await beginReadSnapshot(tx);
    const snapshot = await tx.oneFirst(sql.type(z.object({ snapshot: z.string() }))`SELECT pg_current_snapshot()::text AS snapshot`);
    const keys = await tx.any(sql.type(z.object({ created_at: z.string(), id: z.string() }))`
      SELECT ${keyTime(sql.identifier(['created_at']))} AS created_at, id
      FROM (
        SELECT created_at, id, row_number() OVER (ORDER BY created_at, id) AS n
        FROM records
        WHERE lang_key = ${langKey} AND kind = ${kind} AND live
      ) AS numbered
      WHERE n % ${step} = 0
      ORDER BY n
    `);
    return { snapshot, keys };
  });
}

/** Folds the counter rows of a (language, kind) into one (reads/sql/record_counts.sql). */
export async function foldRecordCount(db: CommonQueryMethods, langKey: number, kind: StoredKind): Promise<void> {
  await db.query(sql.unsafe`SELECT record_count_fold(${langKey}, ${kind})`);
}

/**
 * Vacuums the counter table, so a sum reads the few live rows of its key
 * again instead of the dead ones a large fold left (a bitmap scan does not
 * skip them). Not in a transaction.
 */
export async function vacuumRecordCounts(db: CommonQueryMethods): Promise<void> {
  await db.query(sql.unsafe`VACUUM (ANALYZE) record_count_deltas`);
}

/**
 * The current links of many records at once: for each owner in `owners`
 * (on `side`), the ids on the other side, in id order.
 */
export async function linkedIds(
  db: CommonQueryMethods,
  langKey: number,
  rel: 'product_category' | 'relevant',
  side: 'a' | 'b',
  owners: readonly string[],
): Promise<Map<string, string[]>> {
  if (owners.length === 0) return new Map();
  const mine = sql.identifier([side]);
  const other = sql.identifier([side === 'a' ? 'b' : 'a']);
  const rows = await db.any(sql.type(idsRow)`
    SELECT ${mine} AS owner, array_agg(${other} ORDER BY ${other}) AS ids
    FROM links
    WHERE lang_key = ${langKey} AND rel = ${rel} AND ${mine} = ANY(${sql.array([...owners], 'text')})
    GROUP BY ${mine}
  `);
  return new Map(rows.map((row) => [row.owner, [...row.ids]]));
}

/** For each global unsubscribe (its id: a lower-case email), the oldest live profile with that email. */
export async function profilesByEmail(db: CommonQueryMethods, langKey: number, emails: readonly string[]): Promise<Map<string, string>> {
  if (emails.length === 0) return new Map();
  const rows = await db.any(sql.type(z.object({ email: z.string(), id: z.string() }))`
    SELECT DISTINCT ON (lower(data ->> 'email')) lower(data ->> 'email') AS email, id
    FROM records
    WHERE lang_key = ${langKey} AND kind = 'profile' AND live AND lower(data ->> 'email') = ANY(${sql.array([...emails], 'text')})
    ORDER BY lower(data ->> 'email'), created_seq
  `);
  return new Map(rows.map((row) => [row.email, row.id]));
}

/** For each brand in `brandIds`, its live products (by the products' brand_id), in list order. */
export async function brandProductIds(
  db: CommonQueryMethods,
  langKey: number,
  brandIds: readonly string[],
): Promise<Map<string, string[]>> {
  if (brandIds.length === 0) return new Map();
  const rows = await db.any(sql.type(idsRow)`
    SELECT data ->> 'brand_id' AS owner, array_agg(id ORDER BY created_at, id) AS ids
    FROM records
    WHERE lang_key = ${langKey} AND kind = 'product' AND live
      AND (data ->> 'brand_id') = ANY(${sql.array([...brandIds], 'text')})
    GROUP BY data ->> 'brand_id'
  `);
  return new Map(rows.map((row) => [row.owner, [...row.ids]]));
}

function languageFilter(accountId: number, filters: ListFilters) {
  return sql.fragment`account_id = ${accountId} AND deleted_at IS NULL AND ${filterCondition(filters)}`;
}

/** How many live languages the account has (passing the filters). */
export async function countLanguages(db: CommonQueryMethods, accountId: number, filters: ListFilters): Promise<number> {
  return db.oneFirst(sql.type(countRow)`
    SELECT count(*) AS total FROM languages WHERE ${languageFilter(accountId, filters)}
  `);
}

/** One page of the account's live languages, ascending by (created_at, id). */
export async function pageOfLanguages(
  db: CommonQueryMethods,
  accountId: number,
  filters: ListFilters,
  window: PageWindow,
): Promise<readonly Language[]> {
  const direction = window.fromEnd ? sql.fragment`DESC` : sql.fragment`ASC`;
  return db.any(sql.type(languageSchema)`
    SELECT id, name, code, active, url
    FROM (
      SELECT id, name, code, active, url, created_at
      FROM languages
      WHERE ${languageFilter(accountId, filters)}
      ORDER BY created_at ${direction}, id ${direction}
      OFFSET ${window.offset} LIMIT ${window.limit}
    ) AS page
    ORDER BY created_at, id
  `);
}

/**
 * Makes the caller's transaction one read-only snapshot, so that a list's
 * `total`, its page and the page's links agree. Must be its first statement.
 */
export async function beginReadSnapshot(tx: CommonQueryMethods): Promise<void> {
  await tx.query(sql.unsafe`SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY`);
}
