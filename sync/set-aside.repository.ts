import { type CommonQueryMethods, type DatabaseTransactionConnection, sql } from 'slonik';
import { z } from 'zod';

/*
 * Set-aside changes: outbox rows the applier could not apply after their
 * attempts (failed_at set; see drain.ts). They stay until an operator
 * retries or discards them.
 */

export const setAsideRow = z.object({
  seq: z.number(),
  lang_key: z.number(),
  account_id: z.number(),
  account: z.string(),
  language_id: z.string(),
  kind: z.string(),
  action: z.string(),
  record_id: z.string(),
  actor: z.string(),
  request_id: z.string().nullable(),
  error: z.string().nullable(),
  attempts: z.number(),
  accepted_at: z.string(),
  failed_at: z.string(),
});
export type SetAsideRow = z.infer<typeof setAsideRow>;

export interface SetAsideFilter {
  /** The account's name. */
  account?: string;
  languageId?: string;
  kind?: string;
  /** Only changes numbered above this. */
  after: number;
  limit: number;
}

const columns = sql.fragment`
  o.seq, o.lang_key, o.account_id, a.name AS account, o.language_id, o.kind, o.action, o.record_id, o.actor,
  o.request_id, o.last_error AS error, o.attempts, o.accepted_at, o.failed_at
`;

const conditions = (filter: Omit<SetAsideFilter, 'after' | 'limit'>) => {
  const where = [sql.fragment`o.failed_at IS NOT NULL`];
  if (filter.account !== undefined) where.push(sql.fragment`o.account_id = (SELECT id FROM accounts WHERE name = ${filter.account})`);
  if (filter.languageId !== undefined) where.push(sql.fragment`o.language_id = ${filter.languageId}`);
  if (filter.kind !== undefined) where.push(sql.fragment`o.kind = ${filter.kind}`);
  return sql.join(where, sql.fragment` AND `);
};

/** Set-aside changes in write order, at most `limit`, and whether more follow. */
export async function listSetAside(db: CommonQueryMethods, filter: SetAsideFilter) {
  const rows = await db.any(sql.type(setAsideRow)`
    SELECT ${columns}
    FROM outbox o
    JOIN accounts a ON a.id = o.account_id
    WHERE ${conditions(filter)} AND o.seq > ${filter.after}
    ORDER BY o.seq
    LIMIT ${filter.limit + 1}
  `);
  return { rows: rows.slice(0, filter.limit), more: rows.length > filter.limit };
}

/** One set-aside change, locked until the transaction ends (so two operators cannot act on it twice). */
export async function lockSetAside(tx: DatabaseTransactionConnection, seq: number): Promise<SetAsideRow | null> {
  return tx.maybeOne(sql.type(setAsideRow)`
    SELECT ${columns}
    FROM outbox o
    JOIN accounts a ON a.id = o.account_id
    WHERE o.failed_at IS NOT NULL AND o.seq = ${seq}
    FOR UPDATE OF o
  `);
}

const targetCondition = (target: { seq: number } | Omit<SetAsideFilter, 'after' | 'limit'>) =>
  'seq' in target ? sql.fragment`o.failed_at IS NOT NULL AND o.seq = ${target.seq}` : conditions(target);

/** The languages of the set-aside changes named or matching, in lock order (read without a lock, to take the applier locks first). */
export async function setAsideLanguages(
  db: CommonQueryMethods,
  target: { seq: number } | Omit<SetAsideFilter, 'after' | 'limit'>,
): Promise<readonly number[]> {
  return db.anyFirst(sql.type(z.object({ lang_key: z.number() }))`
    SELECT DISTINCT o.lang_key FROM outbox o WHERE ${targetCondition(target)} ORDER BY o.lang_key
  `);
}

/**
 * Puts changes back in line, the ones named or all matching, of these
 * languages: the applier takes them up again, with their attempts counted
 * afresh. Each language's position (outbox_applied) goes back below its
 * oldest change requeued, so the applier reads from there again. The caller
 * holds the languages' applier locks: a batch in flight would otherwise move
 * the position past a change requeued under it.
 * @returns the changes requeued (number and language).
 */
export async function requeueSetAside(
  tx: DatabaseTransactionConnection,
  target: { seq: number } | Omit<SetAsideFilter, 'after' | 'limit'>,
  langKeys: readonly number[],
): Promise<ReadonlyArray<{ seq: number; lang_key: number }>> {
  const rows = await tx.any(sql.type(z.object({ seq: z.number(), lang_key: z.number() }))`
    UPDATE outbox o SET failed_at = NULL, attempts = 0, last_error = NULL
    WHERE ${targetCondition(target)} AND o.lang_key = ANY(${sql.array(langKeys, 'int8')})
    RETURNING o.seq, o.lang_key
  `);
  if (rows.length > 0) {
    await tx.query(sql.unsafe`
      UPDATE outbox_applied p SET through_seq = least(p.through_seq, r.oldest - 1)
      FROM (
        SELECT lang_key, min(seq) AS oldest
        FROM unnest(${sql.array(
          rows.map((row) => row.lang_key),
          'int8',
        )}, ${sql.array(
          rows.map((row) => row.seq),
          'int8',
        )}) AS t(lang_key, seq)
        GROUP BY lang_key
      ) r
      WHERE p.lang_key = r.lang_key
    `);
  }
  return rows;
}

export async function deleteSetAside(tx: DatabaseTransactionConnection, seq: number): Promise<void> {
  await tx.query(sql.unsafe`DELETE FROM outbox WHERE seq = ${seq} AND failed_at IS NOT NULL`);
}
