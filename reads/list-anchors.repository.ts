import { type DatabasePool, sql } from 'slonik';
import { z } from 'zod';
import type { StoredKind } from '../catalogue/record-kinds.js';
import { keyTime } from './list-conditions.js';
import { beginReadSnapshot } from './read-snapshot.js';

/**
 * The keys of an unfiltered list at every `step` items (the items at offsets
 * step - 1, 2 * step - 1, ...), and the snapshot they were read in: anchors
 * that let deep pages start near their first row (listStatement, 'anchor').
 * One index-only scan of the whole list, in a snapshot of its own.
 */
export async function readListAnchors(db: DatabasePool, langKey: number, kind: StoredKind, step: number) {
  return db.transaction(async (tx) => {
    await beginReadSnapshot(tx);
    const snapshot = await tx.oneFirst(sql.type(z.object({ snapshot: z.string() }))`SELECT pg_current_snapshot()::text AS snapshot`);
    const keys = await tx.any(sql.type(z.object({ created_at: z.string(), id: z.string() }))`
      SELECT ${keyTime(sql.identifier(['created_at']))} AS created_at, id
      FROM (
        SELECT created_at, id, row_number() OVER (ORDER BY created_at, id) AS n
        FROM records
        WHERE lang_key = ${langKey} AND kind = ${kind} AND live
      ) AS numbered
      WHERE n % ${step} = 0
      ORDER BY n
    `);
    return { snapshot, keys };
  });
}
