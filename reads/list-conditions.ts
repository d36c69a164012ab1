import { sql } from 'slonik';
import type { ListKey } from '../catalogue/list-cursor.js';
import type { ListFilters } from '../catalogue/list-query.schema.js';
import type { ListScope } from './list-request.js';

/** The condition on a record of the list's kind for being in the scope's list. */
export function scopeCondition(langKey: number, scope: ListScope) {
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

/** The timestamp filters of a list (each absent one TRUE). */
export function filterCondition(filters: ListFilters) {
  const parts = [sql.fragment`TRUE`];
  if (filters.created_after !== undefined) parts.push(sql.fragment`created_at > ${filters.created_after}::timestamptz`);
  if (filters.created_before !== undefined) parts.push(sql.fragment`created_at < ${filters.created_before}::timestamptz`);
  if (filters.updated_after !== undefined) parts.push(sql.fragment`updated_at > ${filters.updated_after}::timestamptz`);
  if (filters.updated_before !== undefined) parts.push(sql.fragment`updated_at < ${filters.updated_before}::timestamptz`);
  return sql.join(parts, sql.fragment` AND `);
}

/** A list key as cursors and anchors carry it: created_at in UTC with microseconds, so no two keys collapse. */
export const keyTime = (column: ReturnType<typeof sql.identifier>) =>
  sql.fragment`to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

/** After a list key, in list order (of the table's columns, or of the alias `prefix`'s). */
export const after = (key: ListKey, prefix?: string) => {
  const createdAt = sql.identifier(prefix ? [prefix, 'created_at'] : ['created_at']);
  const id = sql.identifier(prefix ? [prefix, 'id'] : ['id']);
  return sql.fragment`(${createdAt}, ${id}) > (${key.created_at}::timestamptz, ${key.id})`;
};
