/*
 * The outbox as the applier keeps it: reading a language's pending changes in
 * order, its applied position, the progress of a change applied over several
 * transactions, and the sweep's list of languages with changes pending.
 */
import { type CommonQueryMethods, type DatabasePool, type DatabaseTransactionConnection, sql } from 'slonik';
import { z } from 'zod';
import { unparsedRows } from '../platform/db.js';
import { waitForLanguageWriters } from './locks.js';

type Tx = DatabaseTransactionConnection;

/** Where a change applied over several transactions got to: its next phase, and how far into it (see change.applier.ts). */
export const changeProgress = z.object({
  phase: z.number().int().nonnegative(),
  /** How far into the phase's list. */
  offset: z.number().int().nonnegative(),
  /** The last key a keyset phase walked past. */
  after: z.string().optional(),
});
export type ChangeProgress = z.infer<typeof changeProgress>;

export const outboxEntry = z.object({
  seq: z.number(),
  lang_key: z.number(),
  account_id: z.number(),
  language_id: z.string(),
  kind: z.string(),
  action: z.enum(['upsert', 'delete', 'assign', 'unassign', 'erase']),
  record_id: z.string(),
  payload: z.record(z.unknown()),
  actor: z.string(),
  request_id: z.string().nullable(),
  accepted_at: z.string(),
  progress: changeProgress.nullable(),
});
export type OutboxEntry = z.infer<typeof outboxEntry>;

const outboxEntryRows = unparsedRows(outboxEntry);

/**
 * The safe horizon of a language: a number at or below which every change of
 * the language has committed or aborted. Writers hold the language's shared
 * lock from before they take a number until they commit, so once the
 * exclusive lock has been granted (and at once released), every change
 * numbered at or below `last_value` as read before is final. Only the
 * language's own writers are waited for, never unrelated transactions.
 */
export async function readHorizon(db: DatabasePool, langKey: number): Promise<number> {
  const lastSeq = await db.oneFirst(sql.type(z.object({ last_seq: z.number() }))`SELECT last_value AS last_seq FROM write_seq`);
  await waitForLanguageWriters(db, langKey);
  return lastSeq;
}

/**
 * `after`: the last change this drain applied; the index entries of applied (deleted) changes before it are not walked again.
 * `maxBytes`: the batch ends once the payloads before a change hold this much (at least one change is read).
 */
export async function readOutboxBatch(
  tx: Tx,
  langKey: number,
  after: number,
  maxSeq: number,
  limit: number,
  maxBytes: number,
): Promise<readonly OutboxEntry[]> {
  return tx.any(sql.type(outboxEntryRows)`
    SELECT o.seq, o.lang_key, o.account_id, o.language_id, o.kind, o.action, o.record_id,
           o.payload, o.actor, o.request_id, o.accepted_at, o.progress
    FROM outbox_batch(${langKey}, ${after}, ${maxSeq}, ${limit}, ${maxBytes}) o
    ORDER BY o.seq
  `);
}

/**
 * Where the language's applier has got (migrations/0018_outbox_applied.sql), as an SQL expression: 0 before its
 * first batch. Every look for a language's pending changes starts past it.
 */
export const appliedThroughOf = (langKey: number) =>
  sql.fragment`coalesce((SELECT p.through_seq FROM outbox_applied p WHERE p.lang_key = ${langKey}), 0)`;

/** Where the language's applier has got; 0 before its first batch. */
export async function appliedThrough(db: CommonQueryMethods, langKey: number): Promise<number> {
  return db.oneFirst(sql.type(z.object({ through_seq: z.number() }))`SELECT ${appliedThroughOf(langKey)} AS through_seq`);
}

/**
 * Moves the language's position up to `seq`, the last change of a batch (in
 * the batch's transaction, under the applier lock), but never past a change
 * still pending: one an operator requeued below a drain that had read past it
 * keeps the position under it until it is applied.
 */
export async function advanceAppliedThrough(tx: Tx, langKey: number, seq: number): Promise<void> {
  await tx.query(sql.unsafe`
    WITH current AS (
      SELECT ${appliedThroughOf(langKey)} AS seq
    ),
    pending AS (
      SELECT min(o.seq) AS seq
      FROM outbox o, current
      WHERE o.lang_key = ${langKey} AND o.seq > current.seq AND o.seq <= ${seq} AND o.failed_at IS NULL
    )
    INSERT INTO outbox_applied (lang_key, through_seq)
    SELECT ${langKey}, coalesce(pending.seq - 1, ${seq}) FROM pending
    ON CONFLICT (lang_key) DO UPDATE SET through_seq = greatest(outbox_applied.through_seq, excluded.through_seq)
  `);
}

export async function deleteOutboxEntries(tx: Tx, seqs: number[]): Promise<void> {
  if (seqs.length === 0) return;
  await tx.query(sql.unsafe`DELETE FROM outbox WHERE seq = ANY(${sql.array(seqs, 'int8')})`);
}

/** Where a change split over several transactions got to; written with the slice's effects. */
export async function saveChangeProgress(tx: Tx, seq: number, progress: ChangeProgress): Promise<void> {
  await tx.query(sql.unsafe`UPDATE outbox SET progress = ${sql.jsonb(progress)} WHERE seq = ${seq}`);
}

export async function markOutboxEntryFailed(db: CommonQueryMethods, seq: number, error: string, maxAttempts: number): Promise<void> {
  await db.query(sql.unsafe`
    UPDATE outbox
    SET attempts = attempts + 1,
        last_error = ${error.slice(0, 2000)},
        failed_at = CASE WHEN attempts + 1 >= ${maxAttempts} THEN now() ELSE NULL END
    WHERE seq = ${seq}
  `);
}

/**
 * Languages with pending changes, by a skip scan (cheap even with millions of
 * pending rows). It walks the index from its end, newest change first: the
 * entries of applied (deleted) changes sit at the old end of each language
 * until vacuum removes them, so a scan from the start would walk them all
 * before finding a language's first pending change, four sweeps a second
 * per worker.
 */
export async function languagesWithPendingChanges(db: CommonQueryMethods): Promise<readonly number[]> {
  return db.anyFirst(sql.type(z.object({ lang_key: z.number() }))`
    WITH RECURSIVE pending AS (
      (SELECT lang_key FROM outbox WHERE failed_at IS NULL ORDER BY lang_key DESC, seq DESC LIMIT 1)
      UNION ALL
      SELECT (
        SELECT o.lang_key FROM outbox o
        WHERE o.lang_key < pending.lang_key AND o.failed_at IS NULL
        ORDER BY o.lang_key DESC, o.seq DESC LIMIT 1
      )
      FROM pending
      WHERE pending.lang_key IS NOT NULL
    )
    SELECT lang_key FROM pending WHERE lang_key IS NOT NULL ORDER BY lang_key
  `);
}
