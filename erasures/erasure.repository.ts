import { type CommonQueryMethods, sql } from 'slonik';
import { z } from 'zod';
import { type Erasure, erasureSchema } from './erasure.schema.js';

/* The erasures tables (migrations/0027_erasures.sql). Every statement of the API names the account. */

const at = (column: string) => sql.fragment`to_char(${sql.identifier([column])} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

const COLUMNS = sql.fragment`
  id::text AS id, status, email_sha256, profiles_erased::int AS profiles_erased,
  ${at('created_at')} AS created_at, ${at('finished_at')} AS finished_at
`;

/** The account's live languages, by id: those an erasure may name. */
export async function liveLanguages(db: CommonQueryMethods, accountId: number) {
  return db.any(sql.type(z.object({ lang_key: z.number(), id: z.string() }))`
    SELECT lang_key, id FROM languages WHERE account_id = ${accountId} AND deleted_at IS NULL ORDER BY lang_key
  `);
}

export interface NewErasure {
  id: string;
  accountId: number;
  /** Lower-cased. */
  email: string | null;
  profileId: string | null;
  /** Whether it reaches no language at all: completed at once. */
  empty: boolean;
}

export async function insertErasure(db: CommonQueryMethods, erasure: NewErasure): Promise<void> {
  await db.query(sql.unsafe`
    INSERT INTO erasures (id, account_id, email, profile_id, email_sha256, status, created_at, finished_at)
    VALUES (
      ${erasure.id}, ${erasure.accountId}, ${erasure.empty ? null : erasure.email}, ${erasure.profileId},
      CASE WHEN ${erasure.email}::text IS NULL THEN NULL ELSE encode(sha256(convert_to(${erasure.email}::text, 'UTF8')), 'hex') END,
      ${erasure.empty ? 'completed' : 'queued'}, date_trunc('milliseconds', now()),
      CASE WHEN ${erasure.empty} THEN date_trunc('milliseconds', now()) END
    )
  `);
}

export async function insertErasureLanguage(
  db: CommonQueryMethods,
  erasureId: string,
  language: { lang_key: number; id: string },
  writeSeq: number,
): Promise<void> {
  await db.query(sql.unsafe`
    INSERT INTO erasure_languages (erasure_id, lang_key, language_id, write_seq)
    VALUES (${erasureId}, ${language.lang_key}, ${language.id}, ${writeSeq})
  `);
}

export async function findErasure(db: CommonQueryMethods, accountId: number, id: string): Promise<Erasure | null> {
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(id)) return null;
  return db.maybeOne(sql.type(erasureSchema)`SELECT ${COLUMNS} FROM erasures WHERE account_id = ${accountId} AND id = ${id}`);
}

export async function pageOfErasures(
  db: CommonQueryMethods,
  accountId: number,
  offset: number,
  limit: number,
): Promise<{ total: number; rows: readonly Erasure[] }> {
  const total = await db.oneFirst(sql.type(z.object({ count: z.number() }))`
    SELECT count(*)::int AS count FROM erasures WHERE account_id = ${accountId}
  `);
  const rows = await db.any(sql.type(erasureSchema)`
    SELECT ${COLUMNS} FROM erasures WHERE account_id = ${accountId} ORDER BY created_at, id OFFSET ${offset} LIMIT ${limit}
  `);
  return { total, rows };
}
