import { type CommonQueryMethods, sql } from 'slonik';
import { z } from 'zod';
import { type Language, languageSchema } from '../catalogue/language.schema.js';
import type { ListFilters } from '../catalogue/list-query.schema.js';
import { filterCondition } from './list-conditions.js';

const countRow = z.object({ total: z.number() });

export interface PageWindow {
  offset: number;
  limit: number;
  /** Walk the index from the end (for pages nearer the end than the start); the result is still ascending. */
  fromEnd: boolean;
  /** How many rows the whole list has. */
  total: number;
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
