import type { LanguageWrite } from '../catalogue/language.schema.js';
import type { Database } from '../platform/db.js';
import { LanguageNotFoundError } from '../platform/errors.js';
import { holdLanguageExclusively, holdLanguageForWrite } from '../sync/locks.js';
import { queueChange } from '../sync/write.repository.js';
import { findLanguage, type LanguageRow, markLanguageDeleted, toLanguageResponse, upsertLanguage } from './language.repository.js';
import { originOf, type WriteContext } from './write-context.js';

export async function saveLanguage(context: WriteContext, input: LanguageWrite) {
  const row = await context.db.transaction(async (tx) => {
    const saved = await upsertLanguage(tx, context.accountId, input);
    // Like every writer, hold the language's shared lock before taking a number (the applier's horizon relies on it).
    await holdLanguageForWrite(tx, saved.lang_key);
    await queueChange(tx, saved.lang_key, 'language', 'upsert', saved.id, originOf(context, saved.id), {
      ...input,
      created: saved.inserted ?? false,
    });
    return saved;
  });
  context.notifier.notify(row.lang_key, context.requestId);
  return toLanguageResponse(row);
}

/**
 * Deletes a language. Writes in flight hold the language's shared lock, so
 * they finish before it goes; its records are purged in the background.
 * @returns the language as it was, or null when there was none (v1 answers
 * 200 all the same, as interface §4.8 says; v2 answers 404).
 */
export async function deleteLanguage(context: WriteContext, languageId: string) {
  const row = await context.db.transaction(async (tx) => {
    const live = await findLanguage(tx, context.accountId, languageId);
    if (!live) return null;
    await holdLanguageExclusively(tx, live.lang_key);
    const deleted = await markLanguageDeleted(tx, context.accountId, languageId);
    if (!deleted) return null;
    await queueChange(tx, deleted.lang_key, 'language', 'delete', deleted.id, originOf(context, deleted.id), { id: deleted.id });
    return deleted;
  });
  forgetLanguageForWrites(context.db, context.accountId, languageId);
  if (row) context.notifier.notify(row.lang_key, context.requestId);
  return row ? toLanguageResponse(row) : null;
}

/**
 * The live language of the account addressed by a path segment.
 * @throws {LanguageNotFoundError} for an unknown, deleted or other account's language.
 */
export async function requireLanguage(db: Database, accountId: number, languageId: string): Promise<LanguageRow> {
  const row = await findLanguage(db, accountId, languageId);
  if (!row) throw new LanguageNotFoundError(languageId);
  return row;
}

const WRITE_CACHE_TTL_MS = 60_000;
const WRITE_CACHE_MAX = 10_000;

/** Per pool (so two databases in one process never share entries): `${accountId}:${languageId}` → row and expiry. */
const writeCaches = new WeakMap<Database, Map<string, { row: LanguageRow; expires: number }>>();

/**
 * requireLanguage for writes, cached per process: a write checks in its own
 * statement that the language is still live (and reports 'language-gone'),
 * so a stale entry can never land a write in a deleted language. The v2 list
 * pages use it too: their statement checks the same (read.service.ts
 * `listOf`, `language_live`). Other reads do not. `fresh` bypasses the cache.
 * @throws {LanguageNotFoundError}
 */
export async function languageForWrites(db: Database, accountId: number, languageId: string, fresh = false): Promise<LanguageRow> {
  const cache = writeCaches.get(db) ?? new Map<string, { row: LanguageRow; expires: number }>();
  writeCaches.set(db, cache);
  const key = `${accountId}:${languageId}`;
  const hit = cache.get(key);
  if (!fresh && hit && hit.expires > Date.now()) return hit.row;
  const row = await requireLanguage(db, accountId, languageId).catch((error: unknown) => {
    cache.delete(key);
    throw error;
  });
  if (cache.size >= WRITE_CACHE_MAX) cache.clear();
  cache.set(key, { row, expires: Date.now() + WRITE_CACHE_TTL_MS });
  return row;
}

export function forgetLanguageForWrites(db: Database, accountId: number, languageId: string): void {
  writeCaches.get(db)?.delete(`${accountId}:${languageId}`);
}
