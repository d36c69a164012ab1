import type { StoredKind } from '../catalogue/record-kinds.js';
import type { Database } from '../platform/db.js';
import { presentLiveRecords } from '../reads/read.service.js';
import type { LanguageRow } from '../records/language.repository.js';
import { toLanguageResponse } from '../records/language.repository.js';
import type { FeedRow } from './feed.repository.js';
import type { CurrentRecord } from './feed-page.js';

/**
 * `include=record` (interface §22.5): each entry's record as GET one answers
 * it now, or null when the record no longer exists; a language's own entries
 * get the language. The page's records are read kind by kind, all ids of a
 * kind at once.
 */
export async function currentRecords(db: Database, language: LanguageRow, rows: readonly FeedRow[]): Promise<CurrentRecord[]> {
  const idsByKind = new Map<string, string[]>();
  for (const row of rows) {
    if (row.kind === 'language') continue;
    const ids = idsByKind.get(row.kind) ?? [];
    ids.push(row.record_id);
    idsByKind.set(row.kind, ids);
  }
  const found = new Map<string, Map<string, Record<string, unknown>>>();
  for (const [kind, ids] of idsByKind) found.set(kind, await presentLiveRecords(db, language.lang_key, kind as StoredKind, ids));
  const languageItem = toLanguageResponse(language);
  return rows.map((row) => (row.kind === 'language' ? languageItem : (found.get(row.kind)?.get(row.record_id) ?? null)));
}
