import { sql } from 'slonik';
import type { Database } from './db.js';
import { LanguageNotFoundError } from './errors.js';
import type { OutboxNotifier } from './outbox-notifier.js';
import {
  findLanguage,
  markLanguageDeleted,
  toLanguageResponse,
  upsertLanguage,
  type LanguageRow,
} from './repositories/language.repository.js';
import { insertOutboxEntry, LOCK_LANGUAGE } from './repositories/record.repository.js';
import type { LanguageWrite } from './schemas/language.schema.js';

export interface LanguageContext {
  db: Database;
  notifier: OutboxNotifier;
  accountId: number;
  clientId: string;
  requestId: string;
}

export async function saveLanguage(context: LanguageContext, input: LanguageWrite) {
  const row = await context.db.transaction(async (tx) => {
    const saved = await upsertLanguage(tx, context.accountId, input);
    // Like every writer, hold the language's shared lock before taking a number (the applier's horizon relies on it).
    await tx.query(sql.unsafe`SELECT pg_advisory_xact_lock_shared(${LOCK_LANGUAGE}, ${saved.lang_key}::int)`);
    await insertOutboxEntry(tx, saved.lang_key, 'language', 'upsert', saved.id, {
      accountId: context.accountId,
      languageId: saved.id,
      actor: context.clientId,
      requestId: context.requestId,
      payload: { ...input, created: saved.inserted ?? false },
    });
    return saved;
  });
  context.notifier.notify(row.lang_key);
  return toLanguageResponse(row);
}

/**
 * Deletes a language (an unknown id is reported as deleted: SPEC has no 404
 * here). Writes in flight hold the language's shared lock, so they finish
 * before it goes; its records are purged in the background.
 */
export async function deleteLanguage(context: LanguageContext, languageId: string) {
  const row = await context.db.transaction(async (tx) => {
    const live = await findLanguage(tx, context.accountId, languageId);
    if (!live) return null;
    await tx.query(sql.unsafe`SELECT pg_advisory_xact_lock(${LOCK_LANGUAGE}, ${live.lang_key}::int)`);
    const deleted = await markLanguageDeleted(tx, context.accountId, languageId);
    if (!deleted) return null;
    await insertOutboxEntry(tx, deleted.lang_key, 'language', 'delete', deleted.id, {
      accountId: context.accountId,
      languageId: deleted.id,
      actor: context.clientId,
      requestId: context.requestId,
      payload: { id: deleted.id },
    });
    return deleted;
  });
  forgetLanguageForWrites(context.db, context.accountId, languageId);
  if (row) context.notifier.notify(row.lang_key);
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

const WRITE_CACHE_TTL_MS = 60_000;
const WRITE_CACHE_MAX = 10_000;

/** Per pool (so two databases in one process never share entries): `${accountId}:${languageId}` → row and expiry. */
const writeCaches = new WeakMap<Database, Map<string, { row: LanguageRow; expires: number }>>();

/**
 * requireLanguage for writes, cached per process: a write checks in its own
 * statement that the language is still live (and reports 'language-gone'),
 * so a stale entry can never land a write in a deleted language. Reads do
 * not use it. `fresh` bypasses the cache.
 * @throws {LanguageNotFoundError}
 */
export async function languageForWrites(db: Database, accountId: number, languageId: string, fresh = false): Promise<LanguageRow> {
  let cache = writeCaches.get(db);
  if (!cache) writeCaches.set(db, (cache = new Map()));
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
