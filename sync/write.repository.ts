import { type CommonQueryMethods, type DatabaseTransactionConnection, sql } from 'slonik';
import { z } from 'zod';
import type { StoredKind } from '../catalogue/record-kinds.js';

/*
 * The write half of the sync protocol: every accepted change takes a number
 * from `write_seq` while it holds the language's shared lock, and commits its
 * own effect on the record (the API view) together with an outbox row that
 * the applier (drain.ts) turns into its queued effects, in number order.
 * The single-statement writes are the SQL functions in sync/sql/.
 */

/** What an outbox entry asks the applier to do. `assign`/`unassign` are v2 link writers (category assignment, related product). */
export type OutboxAction = 'upsert' | 'delete' | 'assign' | 'unassign' | 'erase';

/** Who made a change and where: stored on its outbox row and, from there, on its audit entries. */
export interface ChangeOrigin {
  accountId: number;
  languageId: string;
  /** The client id of the request. */
  actor: string;
  requestId: string;
}

/** A row of `records` as the API view shows it. */
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

export interface RecordTimes {
  created_at?: string | null;
  updated_at?: string | null;
}

/**
 * Creates or merges a record and queues its effects, in one round trip
 * (write_record in sync/sql/write_record.sql): takes the language's shared
 * lock, then a write number, and retries with a new number when a
 * higher-numbered write of the same record got there first, so stamps only
 * ever grow. Runs in the caller's transaction, or alone in its own.
 * @returns null when the language is gone (deleted, or deleted while we waited).
 */
export async function writeRecord(db: CommonQueryMethods, write: SingleWrite): Promise<WrittenRecord | null> {
  const { langKey, kind, id, fields, times, origin, payload } = write;
  const row = await db.one(sql.type(writeOutcome)`
    SELECT status, id, data, created_at, updated_at, seq
    FROM write_record(
      ${langKey}, ${kind}, ${id}, ${sql.jsonb(fields as never)},
      ${times.created_at ?? null}::timestamptz, ${times.updated_at ?? null}::timestamptz,
      ${origin.accountId}, ${origin.languageId}, ${sql.jsonb(payload as never)}, ${origin.actor}, ${origin.requestId}
    )
  `);
  if (row.status !== 'written') return null;
  const { status: _status, ...record } = row;
  return record;
}

export interface RecordWrite {
  kind: StoredKind;
  id: string;
  fields: Record<string, unknown>;
  times: RecordTimes;
  payload: Record<string, unknown>;
}

/** One write on its own (write_record's arguments): a record write, its language and who sent it. */
export interface SingleWrite extends RecordWrite {
  langKey: number;
  origin: ChangeOrigin;
}

/**
 * How a run was written: its numbers in the order of the writes, and when it
 * was accepted; with `inTurn`, whether it is the language's next to apply,
 * and the numbers of the writes that created their record with its serial
 * view already written (`fresh`).
 */
export type RunWritten =
  | { status: 'written'; seqs: number[]; acceptedAt: string; inTurn: boolean; fresh: ReadonlySet<number> }
  | { status: 'language-gone' }
  | { status: 'overtaken' };

const runWritten = z.discriminatedUnion('status', [
  z.object({
    status: z.literal('written'),
    seqs: z.array(z.number()),
    accepted_at: z.string(),
    in_turn: z.boolean(),
    fresh: z.array(z.number()),
  }),
  z.object({ status: z.literal('language-gone') }),
  z.object({ status: z.literal('overtaken') }),
]);

/** How writeRecords leaves a run's effects; the default queues them (outbox rows). */
export type RunEffects =
  | { queue: true }
  /**
   * No outbox rows: the caller applies the run's effects or queues them
   * itself (sync/in-turn.applier.ts), in the same transaction, and holds the
   * language's applier lock. The statement looks whether the run is in turn;
   * with `refs` (each write's sent reference, sentReference) it also writes
   * the serial view of the records it creates when it is.
   */
  | { queue: false; refs?: ReadonlyArray<string | null> };

/**
 * writeRecord for a run of distinct records in one statement
 * (write_records), numbered in the order given. All writes must agree on
 * whether they give created_at.
 * @returns 'overtaken' when a concurrent write of one of them got a later
 * number first: the caller must roll back and try the run again.
 */
export async function writeRecords(
  db: CommonQueryMethods,
  langKey: number,
  writes: readonly RecordWrite[],
  origin: ChangeOrigin,
  effects: RunEffects = { queue: true },
): Promise<RunWritten> {
  const { queue } = effects;
  const refs = effects.queue ? undefined : effects.refs;
  const createdGiven = writes.some((write) => write.times.created_at);
  const row = await db.one(sql.type(runWritten)`
    SELECT status, to_json(seqs) AS seqs, accepted_at, in_turn, to_json(fresh) AS fresh FROM write_records(
      ${langKey},
      ${sql.array(
        writes.map((write) => write.kind),
        'text',
      )},
      ${sql.array(
        writes.map((write) => write.id),
        'text',
      )},
      ${sql.array(
        writes.map((write) => JSON.stringify(write.fields)),
        'jsonb',
      )},
      ${sql.array(
        writes.map((write) => write.times.created_at ?? null),
        'timestamptz',
      )},
      ${sql.array(
        writes.map((write) => write.times.updated_at ?? null),
        'timestamptz',
      )},
      ${sql.array(queue ? writes.map((write) => JSON.stringify(write.payload)) : [], 'jsonb')},
      ${createdGiven},
      ${origin.accountId}, ${origin.languageId}, ${origin.actor}, ${origin.requestId},
      ${queue}, ${!queue}, ${refs === undefined ? null : sql.array(refs, 'text')}
    )
  `);
  if (row.status !== 'written') return row;
  return { status: 'written', seqs: row.seqs, acceptedAt: row.accepted_at, inTurn: row.in_turn, fresh: new Set(row.fresh) };
}

/**
 * The outbox rows of upserts already written with `queue: false`
 * (writeRecords), for the applier to apply in number order: what
 * write_records would have written with them.
 */
export async function queueWrittenRecords(
  tx: DatabaseTransactionConnection,
  langKey: number,
  origin: ChangeOrigin,
  written: ReadonlyArray<{ seq: number; kind: string; id: string; payload: Record<string, unknown> }>,
  acceptedAt: string,
): Promise<void> {
  if (written.length === 0) return;
  await tx.query(sql.unsafe`
    INSERT INTO outbox (seq, lang_key, account_id, language_id, kind, action, record_id, payload, actor, request_id, accepted_at)
    SELECT w.seq, ${langKey}, ${origin.accountId}, ${origin.languageId}, w.kind, 'upsert', w.id, w.payload,
           ${origin.actor}, ${origin.requestId}, ${acceptedAt}::timestamptz
    FROM unnest(
      ${sql.array(
        written.map((write) => write.seq),
        'int8',
      )},
      ${sql.array(
        written.map((write) => write.kind),
        'text',
      )},
      ${sql.array(
        written.map((write) => write.id),
        'text',
      )},
      ${sql.array(
        written.map((write) => JSON.stringify(write.payload)),
        'jsonb',
      )}
    ) AS w(seq, kind, id, payload)
  `);
}

/**
 * Tombstones a live record and queues its cascade. The caller holds the
 * language (holdLanguageForWrite). Returns the record as it was, or null when
 * there is no live record with that id.
 */
export async function deleteRecord(
  tx: DatabaseTransactionConnection,
  langKey: number,
  kind: StoredKind,
  id: string,
  origin: ChangeOrigin,
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
    SELECT d.seq, ${langKey}, ${origin.accountId}, ${origin.languageId}, ${kind}, 'delete', ${id},
           ${sql.jsonb({ id })}, ${origin.actor}, ${origin.requestId}
    FROM d
  `);
  return before;
}

/**
 * Queues a change whose own effect the caller has already made (a language
 * write) or that only the applier makes (an assignment). The caller holds the
 * language (holdLanguageForWrite).
 * @returns its write number.
 */
export async function queueChange(
  tx: DatabaseTransactionConnection,
  langKey: number,
  kind: string,
  action: OutboxAction,
  recordId: string,
  origin: ChangeOrigin,
  payload: Record<string, unknown>,
): Promise<number> {
  return tx.oneFirst(sql.type(z.object({ seq: z.number() }))`
    INSERT INTO outbox (seq, lang_key, account_id, language_id, kind, action, record_id, payload, actor, request_id)
    VALUES (nextval('write_seq'), ${langKey}, ${origin.accountId}, ${origin.languageId}, ${kind}, ${action}, ${recordId},
            ${sql.jsonb(payload as never)}, ${origin.actor}, ${origin.requestId})
    RETURNING seq
  `);
}
