import { hasFilters } from '../catalogue/list-query.schema.js';
import type { ListRequest } from './list-request.js';
import { type ListPage, listRow } from './list-statement.js';
import type { ListStatementCache } from './list-statement-cache.js';
import type { PreparedReader } from './prepared-read.js';

/**
 * A list's total and one page of it (list-statement.ts), through the list
 * pages' own pool, or the page kept for the same statement and values while
 * nothing it shows was written since (list-page-cache.ts).
 */
export async function listPage(
  reader: PreparedReader,
  statements: ListStatementCache,
  langKey: number,
  request: ListRequest,
): Promise<{ page: ListPage; reused: boolean }> {
  const { text, values } = statements.bound(langKey, request);
  // Prepared with a generic plan unless filtered: a filter's selectivity decides the plan (prepared-read.ts).
  const read = () => reader.oneOf(text, values, listRow, !hasFilters(request.filters));
  // The statement (its text names the structure, the kind and the shape) and its values are the whole page.
  return reader.pages.page(langKey, `${reader.nameOf(text)} ${JSON.stringify(values)}`, read);
}
