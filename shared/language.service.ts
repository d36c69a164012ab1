import type { Database } from './db.js';
import { LanguageNotFoundError } from './errors.js';
import {
  findLanguage,
  markLanguageDeleted,
  toLanguageResponse,
  upsertLanguage,
  type LanguageRow,
} from './repositories/language.repository.js';
import type { LanguageWrite } from './schemas/language.schema.js';

export async function saveLanguage(db: Database, accountId: number, input: LanguageWrite) {
  const row = await upsertLanguage(db, accountId, input);
  return toLanguageResponse(row);
}

/** Deletes a language (idempotent: an unknown id is reported as deleted, SPEC has no 404 here). */
export async function deleteLanguage(db: Database, accountId: number, languageId: string) {
  const row = await markLanguageDeleted(db, accountId, languageId);
  return row ? toLanguageResponse(row) : { id: languageId };
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
