import { sql, type CommonQueryMethods, type DatabaseTransactionConnection } from 'slonik';
import { z } from 'zod';
import type { RecordKind } from '../schemas/record-kinds.js';

/** What an outbox entry asks the applier to do. `assign`/`unassign` are v2 product-category assignments. */
export type OutboxAction = 'upsert' | 'delete' | 'assign' | 'unassign';

/** Advisory lock classes (two-key form). */
export const LOCK_LANGUAGE = 1;
export const LOCK_APPLIER = 2;

export const storedRecord = z.object({
  id: z.string(),
  data: z.record(z.unknown()),
  created_at: z.string().nullable(),
  updated_at: z.string().nullable(),
});
export type StoredRecord = z.infer<typeof storedRecord>;

const writtenRecord = storedRecord.extend({ seq: z.number() });
export type WrittenRecord = z.infer<typeof writtenRecord>;

const writeOutcome = z.discriminatedUnion('status', [
  writtenRecord.extend({ status: z.literal('written') }),
  z.object({ status: z.literal('language-gone') }),
]);

export interface OutboxFields {
  accountId: number;
  languageId: string;
  actor: string;
  requestId: string;
  payload: Record<string, unknown>;
}

/**
 * Holds the language's shared lock until commit, before the transaction takes
 * a write number: a concurrent language delete (exclusive) waits for it, and
 * the applier's horizon (exclusive, momentarily) knows every number taken
 * before it asked is committed or aborted once it gets the lock.
 */
export async function beginLanguageWrite(tx: DatabaseTransactionConnection, langKey: number): Promise<void> {
  await tx.query(sql.unsafe`SELECT pg_advisory_xact_lock_shared(${LOCK_LANGUAGE}, ${langKey}::int)`);
}

/**
 * Creates or merges a record and queues its effects in the outbox, in one
 * round trip (migrations/0005_write_record.sql): takes the language's shared
 * lock, then a write number, and retries with a new number when a
 * higher-numbered write of the same record got there first, so stamps only
 * ever grow. Runs in the caller's transaction, or alone in its own.
 * @returns null when the language is gone (deleted, or deleted while we waited).
 */
export async function writeRecord(
  db: CommonQueryMethods,
  langKey: number,
  kind: RecordKind,
  id: string,
  fields: Record<string, unknown>,
  times: { created_at?: string | null; updated_at?: string | null },
  outbox: OutboxFields,
): Promise<WrittenRecord | null> {
  const row = await db.one(sql.type(writeOutcome)`
    SELECT status, id, data, created_at, updated_at, seq
    FROM write_record(
      ${langKey}, ${kind}, ${id}, ${sql.jsonb(fields as never)},
      ${times.created_at ?? null}::timestamptz, ${times.updated_at ?? null}::timestamptz,
      ${outbox.accountId}, ${outbox.languageId}, ${sql.jsonb(outbox.payload as never)}, ${outbox.actor}, ${outbox.requestId}
    )
  `);
  if (row.status !== 'written') return null;
  const { status: _status, ...record } = row;
  return record;
}

/**
 * Tombstones a live record and queues its cascade. Returns the record as it
 * was, or null when there is no live record with that id.
 */
export async function deleteRecord(
  tx: DatabaseTransactionConnection,
  langKey: number,
  kind: RecordKind,
  id: string,
  outbox: OutboxFields,
): Promise<StoredRecord | null> {
  const before = await tx.maybeOne(sql.type(storedRecord)`
    SELECT id, data, created_at, updated_at
    FROM records
    WHERE lang_key = ${langKey} AND kind = ${kind} AND id = ${id} AND live
    FOR UPDATE
  `);
  if (!before) return null;
  await tx.query(sql.unsafe`
    WITH s AS (SELECT nextval('write_seq') AS seq),
    d AS (
      UPDATE records
      SET live = false, data = '{}', stamps = '{}', deleted_seq = s.seq, write_seq = s.seq
      FROM s
      WHERE lang_key = ${langKey} AND kind = ${kind} AND id = ${id}
      RETURNING s.seq
    )
    INSERT INTO outbox (seq, lang_key, account_id, language_id, kind, action, record_id, payload, actor, request_id)
    SELECT d.seq, ${langKey}, ${outbox.accountId}, ${outbox.languageId}, ${kind}, 'delete', ${id},
           ${sql.jsonb(outbox.payload as never)}, ${outbox.actor}, ${outbox.requestId}
    FROM d
  `);
  return before;
}

export async function findLiveRecord(db: CommonQueryMethods, langKey: number, kind: RecordKind, id: string): Promise<StoredRecord | null> {
  return db.maybeOne(sql.type(storedRecord)`
    SELECT id, data, created_at, updated_at
    FROM records
    WHERE lang_key = ${langKey} AND kind = ${kind} AND id = ${id} AND live
  `);
}

export async function findProfileByEmail(db: CommonQueryMethods, langKey: number, email: string): Promise<StoredRecord | null> {
  return db.maybeOne(sql.type(storedRecord)`
    SELECT id, data, created_at, updated_at
    FROM records
    WHERE lang_key = ${langKey} AND kind = 'profile' AND live AND lower(data ->> 'email') = lower(${email})
    ORDER BY created_seq
    LIMIT 1
  `);
}

/** Queues an audit-only change (languages are written synchronously but audited like every change). */
export async function insertOutboxEntry(
  tx: DatabaseTransactionConnection,
  langKey: number,
  kind: string,
  action: OutboxAction,
  recordId: string,
  outbox: OutboxFields,
): Promise<number> {
  return tx.oneFirst(sql.type(z.object({ seq: z.number() }))`
    INSERT INTO outbox (seq, lang_key, account_id, language_id, kind, action, record_id, payload, actor, request_id)
    VALUES (nextval('write_seq'), ${langKey}, ${outbox.accountId}, ${outbox.languageId}, ${kind}, ${action}, ${recordId},
            ${sql.jsonb(outbox.payload as never)}, ${outbox.actor}, ${outbox.requestId})
    RETURNING seq
  `);
}

/**
 * Holds a live record against a concurrent delete until commit (FOR SHARE
 * conflicts with the delete's row update). Returns false when it is not live.
 */
export async function shareLockLiveRecord(tx: DatabaseTransactionConnection, langKey: number, kind: RecordKind, id: string): Promise<boolean> {
  const row = await tx.maybeOne(sql.type(z.object({ id: z.string() }))`
    SELECT id FROM records
    WHERE lang_key = ${langKey} AND kind = ${kind} AND id = ${id} AND live
    FOR SHARE
  `);
  return row !== null;
}

export interface RecordWrite {
  kind: RecordKind;
  id: string;
  fields: Record<string, unknown>;
  times: { created_at?: string | null; updated_at?: string | null };
  payload: Record<string, unknown>;
}

/**
 * writeRecord for a run of distinct records in one statement, numbered in
 * the order given. All writes must agree on whether they give created_at.
 * @returns 'overtaken' when a concurrent write of one of them got a later
 * number first: the caller must roll back and try the run again.
 */
export async function writeRecords(
  db: CommonQueryMethods,
  langKey: number,
  writes: readonly RecordWrite[],
  outbox: Omit<OutboxFields, 'payload'>,
): Promise<'written' | 'language-gone' | 'overtaken'> {
  const createdGiven = writes.some((write) => write.times.created_at);
  return db.oneFirst(sql.type(z.object({ status: z.enum(['written', 'language-gone', 'overtaken']) }))`
    SELECT status FROM write_records(
      ${langKey},
      ${sql.array(writes.map((write) => write.kind), 'text')},
      ${sql.array(writes.map((write) => write.id), 'text')},
      ${sql.array(writes.map((write) => JSON.stringify(write.fields)), 'jsonb')},
      ${sql.array(writes.map((write) => write.times.created_at ?? null), 'timestamptz')},
      ${sql.array(writes.map((write) => write.times.updated_at ?? null), 'timestamptz')},
      ${sql.array(writes.map((write) => JSON.stringify(write.payload)), 'jsonb')},
      ${createdGiven},
      ${outbox.accountId}, ${outbox.languageId}, ${outbox.actor}, ${outbox.requestId}
    )
  `);
}
