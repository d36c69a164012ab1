import type { Database } from '../platform/db.js';
import { LanguageNotFoundError } from '../platform/errors.js';
import { findLanguage, type LanguageRow } from './language.repository.js';

const TTL_MS = 60_000;
const MAX_ENTRIES = 10_000;

/**
 * The account's live languages, kept per API process (built once at
 * start-up, api/server.ts) for the requests whose own statement checks again
 * that the language is live: a single write (its statement reports
 * 'language-gone') and a v2 list page (`language_live` in its statement). A
 * stale entry can so never land a write in a deleted language or answer a
 * page of one; other reads look the language up each time.
 */
export class LiveLanguages {
  /** `${accountId}:${languageId}` → row and expiry. */
  private readonly entries = new Map<string, { row: LanguageRow; expires: number }>();

  constructor(private readonly db: Database) {}

  /**
   * The language, from the process's entries unless `fresh`.
   * @throws {LanguageNotFoundError}
   */
  async get(accountId: number, languageId: string, fresh = false): Promise<LanguageRow> {
    const key = `${accountId}:${languageId}`;
    const hit = this.entries.get(key);
    if (!fresh && hit && hit.expires > Date.now()) return hit.row;
    const row = await findLanguage(this.db, accountId, languageId);
    if (!row) {
      this.entries.delete(key);
      throw new LanguageNotFoundError(languageId);
    }
    if (this.entries.size >= MAX_ENTRIES) this.entries.clear();
    this.entries.set(key, { row, expires: Date.now() + TTL_MS });
    return row;
  }

  /** Drops the entry of a language written, deleted, or found gone by a statement. */
  forget(accountId: number, languageId: string): void {
    this.entries.delete(`${accountId}:${languageId}`);
  }
}
