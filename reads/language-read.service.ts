import { type ListQuery, listQuerySchema } from '../catalogue/list-query.schema.js';
import { parseOrThrow } from '../catalogue/validation.js';
import { toLanguageResponse } from '../records/language.repository.js';
import { requireLanguage } from '../records/language.service.js';
import { countLanguages, type PageWindow, pageOfLanguages } from './language-list.repository.js';
import { type ListJson, listJson, type ReadContext } from './read-context.js';
import { beginReadSnapshot } from './read-snapshot.js';
import type { Item } from './record-presenter.js';

/* The v2 reads of the account's languages. */

/**
 * Validates a list query (interface §8.7).
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
