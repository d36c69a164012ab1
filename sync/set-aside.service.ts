import type { Database } from '../platform/db.js';
import { insertAuditEntries } from './audit.repository.js';
import { lockApplier } from './locks.js';
import {
  deleteSetAside,
  listSetAside,
  lockSetAside,
  requeueSetAside,
  type SetAsideFilter,
  type SetAsideRow,
  setAsideLanguages,
} from './set-aside.repository.js';

/*
 * What an operator can do with changes the applier set aside (drain.ts):
 * look at them, put them back in line once the cause is fixed, or give one up.
 *
 * A retried change is applied when the applier next drains its language, after
 * the changes that came after it were applied: it is applied at the present
 * point of the write order, not at its own (see docs/consistency.md,
 * "Set-aside changes"). A discarded change's effects are never applied; the
 * fields its request wrote stay as the API acknowledged them.
 */

/** Who acted, as the audit log names it: `admin:<ADMIN_USER>`. */
export const operatorActor = (user: string) => `admin:${user}`;

export interface Operator {
  user: string;
  requestId: string;
}

/** A set-aside change as the admin API shows it. */
export function presentSetAside(row: SetAsideRow) {
  return {
    seq: row.seq,
    account: row.account,
    language_id: row.language_id,
    kind: row.kind,
    action: row.action,
    record_id: row.record_id,
    actor: row.actor,
    request_id: row.request_id,
    error: row.error,
    attempts: row.attempts,
    accepted_at: row.accepted_at,
    failed_at: row.failed_at,
  };
}

export async function listSetAsideChanges(db: Database, filter: SetAsideFilter) {
  const page = await listSetAside(db, filter);
  return { data: page.rows.map(presentSetAside), next_after: page.more ? page.rows[page.rows.length - 1]!.seq : null };
}

/**
 * Puts the change `seq`, or every set-aside change matching the filter, back
 * in line. The caller wakes the appliers of the languages returned.
 */
export async function retrySetAside(
  db: Database,
  target: { seq: number } | { account?: string; languageId?: string; kind?: string },
): Promise<{ seqs: number[]; langKeys: number[] }> {
  const rows = await db.transaction(async (tx) => {
    // The appliers' locks first, in one order (as discard takes its one): see requeueSetAside.
    const langKeys = await setAsideLanguages(tx, target);
    for (const langKey of langKeys) await lockApplier(tx, langKey);
    return requeueSetAside(tx, target, langKeys);
  });
  return { seqs: rows.map((row) => row.seq).sort((a, b) => a - b), langKeys: [...new Set(rows.map((row) => row.lang_key))] };
}

/**
 * Gives up a set-aside change for good, with an audit entry (`discard`)
 * naming the operator. The applier lock is taken first, as every writer of
 * audit entries does (see listAuditEntries).
 * @returns the change as it was, or null when no such change is set aside.
 */
export async function discardSetAside(db: Database, seq: number, operator: Operator) {
  const [langKey] = await setAsideLanguages(db, { seq });
  if (langKey === undefined) return null;
  return db.transaction(async (tx) => {
    await lockApplier(tx, langKey);
    const row = await lockSetAside(tx, seq);
    if (!row) return null;
    await deleteSetAside(tx, seq);
    await insertAuditEntries(tx, [
      {
        account_id: row.account_id,
        lang_key: row.lang_key,
        language_id: row.language_id,
        kind: row.kind,
        record_id: row.record_id,
        action: 'discard',
        actor: operatorActor(operator.user),
        request_id: operator.requestId,
        write_seq: row.seq,
        at: new Date().toISOString(),
        changes: {
          seq: row.seq,
          action: row.action,
          request_id: row.request_id,
          accepted_at: row.accepted_at,
          error: row.error,
        },
      },
    ]);
    return presentSetAside(row);
  });
}
