import { type CommonQueryMethods, type DatabaseTransactionConnection, sql } from 'slonik';
import { z } from 'zod';
import type { StoredKind } from '../catalogue/record-kinds.js';
import { type StoredRecord, storedRecord } from '../sync/write.repository.js';

/**
 * A live record by its key. The key is looked up first and `live` checked on
 * the one row found (OFFSET 0 keeps the planner from merging the two): with
 * `live` in the same WHERE, statistics from before a bulk file (no profiles
 * yet) made the partial email index look cheaper than the primary key, and
 * each lookup filtered every profile of the language.
 */
export async function findLiveRecord(db: CommonQueryMethods, langKey: number, kind: StoredKind, id: string): Promise<StoredRecord | null> {
  return db.maybeOne(sql.type(storedRecord)`
    SELECT id, data, created_at, updated_at
    FROM (
      SELECT id, data, created_at, updated_at, live
      FROM records
      WHERE lang_key = ${langKey} AND kind = ${kind} AND id = ${id}
      OFFSET 0
    ) keyed
    WHERE live
  `);
}

/** The live records of a kind among `ids` (in no particular order), looked up by key as findLiveRecord does. */
export async function findLiveRecords(
  db: CommonQueryMethods,
  langKey: number,
  kind: StoredKind,
  ids: readonly string[],
): Promise<readonly StoredRecord[]> {
  if (ids.length === 0) return [];
  return db.any(sql.type(storedRecord)`
    SELECT id, data, created_at, updated_at
    FROM (
      SELECT id, data, created_at, updated_at, live
      FROM records
      WHERE lang_key = ${langKey} AND kind = ${kind} AND id = ANY(${sql.array(ids, 'text')})
      OFFSET 0
    ) keyed
    WHERE live
  `);
}

/** The oldest live profile with this email, compared case-insensitively (the profile rule, interface §4.5). */
export async function findProfileByEmail(db: CommonQueryMethods, langKey: number, email: string): Promise<StoredRecord | null> {
  return db.maybeOne(sql.type(storedRecord)`
    SELECT id, data, created_at, updated_at
    FROM records
    WHERE lang_key = ${langKey} AND kind = 'profile' AND live AND lower(data ->> 'email') = lower(${email})
    ORDER BY created_seq
    LIMIT 1
  `);
}

/**
 * Holds a live record against a concurrent delete until commit (FOR SHARE
 * conflicts with the delete's row update). Returns false when it is not live.
 */
export async function shareLockLiveRecord(
  tx: DatabaseTransactionConnection,
  langKey: number,
  kind: StoredKind,
  id: string,
): Promise<boolean> {
  const row = await tx.maybeOne(sql.type(z.object({ id: z.string() }))`
    SELECT id FROM records
    WHERE lang_key = ${langKey} AND kind = ${kind} AND id = ${id} AND live
    FOR SHARE
  `);
  return row !== null;
}

/** A live record, locked against every other writer until commit (a line write reads and rewrites its parent's lines). */
export async function lockLiveRecord(
  tx: DatabaseTransactionConnection,
  langKey: number,
  kind: StoredKind,
  id: string,
): Promise<StoredRecord | null> {
  return tx.maybeOne(sql.type(storedRecord)`
    SELECT id, data, created_at, updated_at
    FROM records
    WHERE lang_key = ${langKey} AND kind = ${kind} AND id = ${id} AND live
    FOR UPDATE
  `);
}

/** Whether the language is live (a write that locked it checks again: a delete may have committed while it waited). */
export async function languageIsLive(db: CommonQueryMethods, langKey: number): Promise<boolean> {
  return db.exists(sql.unsafe`SELECT 1 FROM languages WHERE lang_key = ${langKey} AND deleted_at IS NULL`);
}

const matchableProfile = z.object({ id: z.string(), email: z.string().nullable(), created_seq: z.number() });
const loweredEmail = z.object({ email: z.string(), lowered: z.string() });

/**
 * What the profile rule (interface §4.5) needs of the language's profiles for a set of ids and
 * emails: each email as `lower()` turns it (the comparison findProfileByEmail
 * makes; JavaScript's lower-casing differs from Postgres' for some letters),
 * and every live profile that has one of the ids or one of those emails, with
 * its email in lower case and the number that orders it by age. Two
 * statements, each on its own index (the key, the partial email index).
 */
export async function findMatchableProfiles(
  db: CommonQueryMethods,
  langKey: number,
  ids: readonly string[],
  emails: readonly string[],
): Promise<{ lowered: Map<string, string>; profiles: ReadonlyArray<z.infer<typeof matchableProfile>> }> {
  const lowered = new Map(
    (
      await db.any(sql.type(loweredEmail)`
        SELECT email, lower(email) AS lowered FROM unnest(${sql.array(emails, 'text')}) AS email
      `)
    ).map((row) => [row.email, row.lowered]),
  );
  const profiles = await db.any(sql.type(matchableProfile)`
    SELECT id, lower(data ->> 'email') AS email, created_seq
    FROM (
      SELECT id, data, created_seq, live
      FROM records
      WHERE lang_key = ${langKey} AND kind = 'profile' AND id = ANY(${sql.array(ids, 'text')})
      OFFSET 0
    ) keyed
    WHERE live
    UNION
    SELECT id, lower(data ->> 'email'), created_seq
    FROM records
    WHERE lang_key = ${langKey} AND kind = 'profile' AND live
      AND lower(data ->> 'email') = ANY(${sql.array([...new Set(lowered.values())], 'text')})
  `);
  return { lowered, profiles };
}
