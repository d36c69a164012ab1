import { type CommonQueryMethods, sql } from 'slonik';
import { z } from 'zod';
import { appliedThroughOf } from './outbox.repository.js';
import type { OutboxAction } from './write.repository.js';

/*
 * One writer's changes of a language whose effects are not applied yet: the
 * outbox rows carrying its request id, past the applier's position. A change
 * set aside is not waited for (it is applied only when an operator acts).
 */

const pendingOf = (langKey: number, requestId: string) => sql.fragment`
  FROM outbox o
  WHERE o.lang_key = ${langKey} AND o.seq > ${appliedThroughOf(langKey)}
    AND o.failed_at IS NULL AND o.request_id = ${requestId}
`;

/**
 * The kinds and actions of the writer's pending changes, each with the
 * payload fields that carry a value (not null, not empty text, not an empty
 * list): what their effects may still change (catalogue/liveness.ts).
 */
export async function pendingChangeKinds(
  db: CommonQueryMethods,
  langKey: number,
  requestId: string,
): Promise<ReadonlyArray<{ kind: string; action: OutboxAction; named: readonly string[] }>> {
  return db.any(sql.type(
    z.object({ kind: z.string(), action: z.enum(['upsert', 'delete', 'assign', 'unassign', 'erase']), named: z.array(z.string()) }),
  )`
    SELECT DISTINCT o.kind, o.action, ARRAY(
      SELECT e.key FROM jsonb_each(o.payload) e
      WHERE e.value NOT IN ('null'::jsonb, '""'::jsonb, '[]'::jsonb)
      ORDER BY e.key
    ) AS named
    ${pendingOf(langKey, requestId)}
  `);
}

/** Whether any change of the writer still waits for its effects. */
export async function hasPendingChanges(db: CommonQueryMethods, langKey: number, requestId: string): Promise<boolean> {
  return db.oneFirst(sql.type(z.object({ pending: z.boolean() }))`
    SELECT EXISTS (SELECT 1 ${pendingOf(langKey, requestId)}) AS pending
  `);
}
