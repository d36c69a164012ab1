import { type DatabasePool, sql } from 'slonik';
import { z } from 'zod';
import type { StoredKind } from '../catalogue/record-kinds.js';
import { keyTime } from './list-conditions.js';
import { beginReadSnapshot } from './read-snapshot.js';

/**
 * The keys of an unfiltered list at every `step` items (the items at offsets
 * step - 1, 2 * step - 1, ...), and the snapshot they were read in: anchors
 * that let deep pages start near their first row (listStatement, 'anchor').
 * One pass over the list index, in a snapshot of its own: each anchor is the
 * item `step` after the one before, found by skipping `step - 1` index
 * entries from it (list keys are unique), which costs a third of numbering
 * every item with row_number() and keeping every step-th (the read grows with
 * the list: docs/scaling.md).
 */
export async function readListAnchors(db: DatabasePool, langKey: number, kind: StoredKind, step: number) {
  return db.transaction(async (tx) => {
    await beginReadSnapshot(tx);
    const snapshot = await tx.oneFirst(sql.type(z.object({ snapshot: z.string() }))`SELECT pg_current_snapshot()::text AS snapshot`);
    const listed = sql.fragment`lang_key = ${langKey} AND kind = ${kind} AND live`;
    const keys = await tx.any(sql.type(z.object({ created_at: z.string(), id: z.string() }))`
      WITH RECURSIVE anchors AS (
        (
          SELECT created_at, id, 1 AS n FROM records
          WHERE ${listed}
          ORDER BY created_at, id OFFSET ${step - 1} LIMIT 1
        )
        UNION ALL
        SELECT next.created_at, next.id, anchors.n + 1
        FROM anchors CROSS JOIN LATERAL (
          SELECT created_at, id FROM records
          WHERE ${listed} AND (created_at, id) > (anchors.created_at, anchors.id)
          ORDER BY created_at, id OFFSET ${step - 1} LIMIT 1
        ) AS next
      )
      SELECT ${keyTime(sql.identifier(['created_at']))} AS created_at, id FROM anchors ORDER BY n
    `);
    return { snapshot, keys };
  });
}
