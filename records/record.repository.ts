import { type CommonQueryMethods, type DatabaseTransactionConnection, sql } from 'slonik';
import { z } from 'zod';
import type { RecordKind } from '../catalogue/record-kinds.js';
import { type StoredRecord, storedRecord } from '../sync/write.repository.js';

export async function findLiveRecord(db: CommonQueryMethods, langKey: number, kind: RecordKind, id: string): Promise<StoredRecord | null> {
  return db.maybeOne(sql.type(storedRecord)`
    SELECT id, data, created_at, updated_at
    FROM records
    WHERE lang_key = ${langKey} AND kind = ${kind} AND id = ${id} AND live
  `);
}

/** The oldest live profile with this email, compared case-insensitively (profile rule 9). */
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
  kind: RecordKind,
  id: string,
): Promise<boolean> {
  const row = await tx.maybeOne(sql.type(z.object({ id: z.string() }))`
    SELECT id FROM records
    WHERE lang_key = ${langKey} AND kind = ${kind} AND id = ${id} AND live
    FOR SHARE
  `);
  return row !== null;
}
