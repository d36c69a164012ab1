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
  context.languages.forget(context.accountId, languageId);
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
