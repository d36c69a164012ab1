import { type CommonQueryMethods, sql } from 'slonik';
import type { StoredKind } from '../catalogue/record-kinds.js';

/** Folds the counter rows of a (language, kind) into one (reads/sql/record_counts.sql). */
export async function foldRecordCount(db: CommonQueryMethods, langKey: number, kind: StoredKind): Promise<void> {
  await db.query(sql.unsafe`SELECT record_count_fold(${langKey}, ${kind})`);
}

/**
 * Vacuums the counter table, so a sum reads the few live rows of its key
 * again instead of the dead ones a large fold left (a bitmap scan does not
 * skip them). Not in a transaction.
 */
export async function vacuumRecordCounts(db: CommonQueryMethods): Promise<void> {
  await db.query(sql.unsafe`VACUUM (ANALYZE) record_count_deltas`);
}
