import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';
import { hasFilters, type ListFilters } from '../schemas/list-query.schema.js';
import type { RecordKind } from '../schemas/record-kinds.js';
import { storedRecord, type StoredRecord } from './record.repository.js';

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
  | { type: 'linked'; rel: 'product_category' | 'relevant'; side: 'a' | 'b'; other: string };

export interface PageWindow {
  offset: number;
  limit: number;
  /** Walk the index from the end (for pages nearer the end than the start); the result is still ascending. */
  fromEnd: boolean;
  /** How many rows the whole list has. */
  total: number;
}

/**
 * A linked list (a category's products) with up to this many links is read
 * from its links and sorted; a larger one walks the list index in order,
 * probing the links. Postgres' own choice, with LIMIT, tends to walk even for
 * a small category of a big catalogue, probing thousands of records per page.
 */
export const DRIVE_FROM_LINKS_MAX = 50_000;

/** Whether the linked list is small enough to be read from its links (its filtered total does not bound its links). */
async function driveFromLinks(db: CommonQueryMethods, langKey: number, scope: Extract<ListScope, { type: 'linked' }>, filters: ListFilters, total: number) {
  if (total > DRIVE_FROM_LINKS_MAX) return false;
  if (!hasFilters(filters)) return true;
  const other = sql.identifier([scope.side === 'a' ? 'b' : 'a']);
  const links = await db.oneFirst(sql.type(countRow)`
    SELECT count(*) AS total FROM (
      SELECT 1 FROM links
      WHERE lang_key = ${langKey} AND rel = ${scope.rel} AND ${other} = ${scope.other}
      LIMIT ${DRIVE_FROM_LINKS_MAX + 1}
    ) AS bounded
  `);
  return links <= DRIVE_FROM_LINKS_MAX;
}

function scopeCondition(langKey: number, scope: ListScope) {
  switch (scope.type) {
    case 'all':
      return sql.fragment`TRUE`;
    case 'variants-of':
      return sql.fragment`kind = 'variant' AND (data ->> 'product_id') = ${scope.productId}`;
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
 * Live records of a kind in a language, from the trigger-kept counter
 * (migrations/0003): a sum over a few rows, never a count over the records.
 */
export async function countLiveRecords(db: CommonQueryMethods, langKey: number, kind: RecordKind): Promise<number> {
  return db.oneFirst(sql.type(countRow)`
    SELECT coalesce(sum(delta), 0)::int8 AS total
    FROM record_count_deltas
    WHERE lang_key = ${langKey} AND kind = ${kind}
  `);
}

/** How many live records of a kind are in the scope and pass the filters (an index range count). */
export async function countRecords(db: CommonQueryMethods, langKey: number, kind: RecordKind, scope: ListScope, filters: ListFilters): Promise<number> {
  return db.oneFirst(sql.type(countRow)`
    SELECT count(*) AS total
    FROM records
    WHERE lang_key = ${langKey} AND kind = ${kind} AND live
      AND ${scopeCondition(langKey, scope)} AND ${filterCondition(filters)}
  `);
}

/**
 * One page of live records, ascending by (created_at, id). The page's keys
 * come from an index-only scan (OFFSET over the index, from whichever end is
 * nearer); only the page's own rows are then read from the table.
 */
export async function pageOfRecords(
  db: CommonQueryMethods,
  langKey: number,
  kind: RecordKind,
  scope: ListScope,
  filters: ListFilters,
  window: PageWindow,
): Promise<readonly StoredRecord[]> {
  const direction = window.fromEnd ? sql.fragment`DESC` : sql.fragment`ASC`;
  if (scope.type === 'linked' && (await driveFromLinks(db, langKey, scope, filters, window.total))) {
    const mine = sql.identifier([scope.side]);
    const other = sql.identifier([scope.side === 'a' ? 'b' : 'a']);
    // OFFSET 0 fences keep the join driven from the links (one primary-key probe per link), then sorted.
    return db.any(sql.type(storedRecord)`
      SELECT id, data, created_at, updated_at
      FROM (
        SELECT r.id, r.data, r.created_at, r.updated_at
        FROM (
          SELECT l.${mine} AS id FROM links l
          WHERE l.lang_key = ${langKey} AND l.rel = ${scope.rel} AND l.${other} = ${scope.other}
          OFFSET 0
        ) AS linked
        CROSS JOIN LATERAL (
          SELECT id, data, created_at, updated_at FROM records
          WHERE lang_key = ${langKey} AND kind = ${kind} AND id = linked.id AND live AND ${filterCondition(filters)}
          OFFSET 0
        ) AS r
        ORDER BY r.created_at ${direction}, r.id ${direction}
        OFFSET ${window.offset} LIMIT ${window.limit}
      ) AS page
      ORDER BY created_at, id
    `);
  }
  return db.any(sql.type(storedRecord)`
    SELECT r.id, r.data, r.created_at, r.updated_at
    FROM (
      SELECT id FROM records
      WHERE lang_key = ${langKey} AND kind = ${kind} AND live
        AND ${scopeCondition(langKey, scope)} AND ${filterCondition(filters)}
      ORDER BY created_at ${direction}, id ${direction}
      OFFSET ${window.offset} LIMIT ${window.limit}
    ) AS page
    JOIN records r ON r.lang_key = ${langKey} AND r.kind = ${kind} AND r.id = page.id
    ORDER BY r.created_at, r.id
  `);
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

/** For each brand in `brandIds`, its live products (by the products' brand_id), in list order. */
export async function brandProductIds(db: CommonQueryMethods, langKey: number, brandIds: readonly string[]): Promise<Map<string, string[]>> {
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

const languageRow = z.object({
  id: z.string(),
  name: z.string(),
  code: z.string(),
  active: z.boolean().nullable(),
  url: z.string().nullable(),
});
export type ListedLanguage = z.infer<typeof languageRow>;

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
): Promise<readonly ListedLanguage[]> {
  const direction = window.fromEnd ? sql.fragment`DESC` : sql.fragment`ASC`;
  return db.any(sql.type(languageRow)`
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
