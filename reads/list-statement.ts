import { sql } from 'slonik';
import { z } from 'zod';
import { hasFilters, MAX_PER_PAGE } from '../catalogue/list-query.schema.js';
import { isoText, itemColumns, itemFields } from './item-shape.js';
import { after, filterCondition, keyTime, scopeCondition } from './list-conditions.js';
import type { ListRequest } from './list-request.js';

/**
 * The statement of a v2 list page. Every list is ordered by (created_at, id), the key
 * of the `records_list` index (WHERE live), which also carries updated_at, so
 * pages and counts are index-only range scans.
 */

export const listRow = z.object({
  /** Whether the language is still live: the list's language may come from a cache (read.service.ts, listOf). */
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

/** The most rows a page reads: one more than the largest page (a cursor page's look-ahead row). */
const PAGE_ROWS_BOUND = sql.literalValue(String(MAX_PER_PAGE + 1));

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
  // The anchor is still at its offset iff no counter row written since it was read touched the list at or
  // before it (record_counts.sql): records added after it (a list growing at its end) leave it where it was.
  const anchorValid =
    position.type === 'anchor'
      ? sql.fragment`NOT EXISTS (
          SELECT 1 FROM record_count_deltas
          WHERE lang_key = ${langKey} AND kind = ${kind} AND NOT pg_visible_in_snapshot(xact, ${position.snapshot}::pg_snapshot)
            AND (low_created_at > ${position.anchor.key.created_at}::timestamptz) IS NOT TRUE
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
          -- From the anchor unless the list grew so far past it that the walk from the end is shorter.
          WHEN anchor.valid AND start > ${anchorOffset}::int8 AND start - ${anchorOffset}::int8 - 1 <= total - start - size THEN 'anchor'
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
      ${itemFields(request.shape)}
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
