import { type CommonQueryMethods, sql } from 'slonik';
import { z } from 'zod';
import { type Language, type LanguageWrite, languageSchema } from '../catalogue/language.schema.js';
import { isStorableText } from '../catalogue/primitives.schema.js';

/** A language as stored: its response shape plus the key its records hang from. */
const languageRow = languageSchema.extend({
  lang_key: z.number(),
  created_at: z.string(),
  updated_at: z.string(),
  /** Set by upsertLanguage: whether the upsert created it. */
  inserted: z.boolean().optional(),
});
export type LanguageRow = z.infer<typeof languageRow>;

const columns = sql.fragment`lang_key, id, name, code, active, url, created_at, updated_at`;

/** Creates the language or merges into the live one: omitted optional fields keep their values, `null` clears them. */
export async function upsertLanguage(db: CommonQueryMethods, accountId: number, input: LanguageWrite): Promise<LanguageRow> {
  const keep = (name: 'name' | 'code' | 'active' | 'url') =>
    input[name] === undefined ? sql.identifier(['languages', name]) : sql.identifier(['excluded', name]);
  return db.one(sql.type(languageRow)`
    INSERT INTO languages AS languages (account_id, id, name, code, active, url, created_at, updated_at)
    VALUES (
      ${accountId}, ${input.id}, ${input.name ?? null}, ${input.code ?? null},
      ${input.active ?? null}, ${input.url ?? null},
      date_trunc('milliseconds', now()), date_trunc('milliseconds', now())
    )
    ON CONFLICT (account_id, id) WHERE deleted_at IS NULL DO UPDATE SET
      name = ${keep('name')},
      code = ${keep('code')},
      active = ${keep('active')},
      url = ${keep('url')},
      updated_at = excluded.updated_at
    RETURNING ${columns}, (xmax = 0) AS inserted
  `);
}

export async function findLanguage(db: CommonQueryMethods, accountId: number, languageId: string): Promise<LanguageRow | null> {
  if (!isStorableText(languageId)) return null;
  return db.maybeOne(sql.type(languageRow)`
    SELECT ${columns}
    FROM languages
    WHERE account_id = ${accountId} AND id = ${languageId} AND deleted_at IS NULL
  `);
}

/** Tombstones the live language; its records are purged in the background. */
export async function markLanguageDeleted(db: CommonQueryMethods, accountId: number, languageId: string): Promise<LanguageRow | null> {
  if (!isStorableText(languageId)) return null;
  return db.maybeOne(sql.type(languageRow)`
    UPDATE languages
    SET deleted_at = now()
    WHERE account_id = ${accountId} AND id = ${languageId} AND deleted_at IS NULL
    RETURNING ${columns}
  `);
}

export async function listLanguagesPendingPurge(db: CommonQueryMethods, limit: number): Promise<readonly number[]> {
  return db.anyFirst(sql.type(z.object({ lang_key: z.number() }))`
    SELECT l.lang_key FROM languages l
    WHERE l.deleted_at IS NOT NULL AND l.purged_at IS NULL
      AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.lang_key = l.lang_key)
    ORDER BY l.lang_key
    LIMIT ${limit}
  `);
}

export async function markLanguagePurged(db: CommonQueryMethods, langKey: number): Promise<void> {
  await db.query(sql.unsafe`UPDATE languages SET purged_at = now() WHERE lang_key = ${langKey}`);
}

/** The language as responses show it. */
export const toLanguageResponse = (row: LanguageRow): Language => ({
  id: row.id,
  name: row.name,
  code: row.code,
  active: row.active,
  url: row.url,
});

/** Deletes up to `limit` rows of a deleted language from `table`; returns how many went. */
export async function purgeLanguageBatch(
  db: CommonQueryMethods,
  table: 'records' | 'links',
  langKey: number,
  limit: number,
): Promise<number> {
  const result = await db.query(sql.unsafe`
    DELETE FROM ${sql.identifier([table])}
    WHERE ctid = ANY(ARRAY(SELECT ctid FROM ${sql.identifier([table])} WHERE lang_key = ${langKey} LIMIT ${limit}))
  `);
  return result.rowCount;
}
