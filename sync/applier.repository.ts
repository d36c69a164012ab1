import { type CommonQueryMethods, type DatabasePool, type DatabaseTransactionConnection, sql } from 'slonik';
import { z } from 'zod';
import { waitForLanguageWriters } from './locks.js';

export type { AuditEntry } from './audit.repository.js';

type Tx = DatabaseTransactionConnection;

export const outboxEntry = z.object({
  seq: z.number(),
  lang_key: z.number(),
  account_id: z.number(),
  account: z.string(),
  language_id: z.string(),
  kind: z.string(),
  action: z.enum(['upsert', 'delete', 'assign', 'unassign']),
  record_id: z.string(),
  payload: z.record(z.unknown()),
  actor: z.string(),
  request_id: z.string().nullable(),
  accepted_at: z.string(),
});
export type OutboxEntry = z.infer<typeof outboxEntry>;

export const rowState = z.object({
  live: z.boolean(),
  w_live: z.boolean(),
  w_ref: z.string().nullable(),
  stamps: z.record(z.number()),
  deleted_seq: z.number(),
  write_seq: z.number(),
});
export type RowState = z.infer<typeof rowState>;

export interface RecordKey {
  langKey: number;
  kind: string;
  id: string;
}

const where = (key: RecordKey) => sql.fragment`lang_key = ${key.langKey} AND kind = ${key.kind} AND id = ${key.id}`;

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

/** `after`: the last change this drain applied; the index entries of applied (deleted) changes before it are not walked again. */
export async function readOutboxBatch(
  tx: Tx,
  langKey: number,
  after: number,
  maxSeq: number,
  limit: number,
): Promise<readonly OutboxEntry[]> {
  return tx.any(sql.type(outboxEntry)`
    SELECT o.seq, o.lang_key, o.account_id, a.name AS account, o.language_id, o.kind, o.action, o.record_id,
           o.payload, o.actor, o.request_id, o.accepted_at
    FROM outbox_batch(${langKey}, ${after}, ${maxSeq}, ${limit}) o
    JOIN accounts a ON a.id = o.account_id
    ORDER BY o.seq
  `);
}

export async function deleteOutboxEntries(tx: Tx, seqs: number[]): Promise<void> {
  if (seqs.length === 0) return;
  await tx.query(sql.unsafe`DELETE FROM outbox WHERE seq = ANY(${sql.array(seqs, 'int8')})`);
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

/** Languages with pending changes, by a skip scan (cheap even with millions of pending rows). */
export async function languagesWithPendingChanges(db: CommonQueryMethods): Promise<readonly number[]> {
  return db.anyFirst(sql.type(z.object({ lang_key: z.number() }))`
    WITH RECURSIVE pending AS (
      (SELECT lang_key FROM outbox WHERE failed_at IS NULL ORDER BY lang_key LIMIT 1)
      UNION ALL
      SELECT (
        SELECT o.lang_key FROM outbox o
        WHERE o.lang_key > pending.lang_key AND o.failed_at IS NULL
        ORDER BY o.lang_key LIMIT 1
      )
      FROM pending
      WHERE pending.lang_key IS NOT NULL
    )
    SELECT lang_key FROM pending WHERE lang_key IS NOT NULL
  `);
}

export async function lockRow(tx: Tx, key: RecordKey): Promise<RowState | null> {
  return tx.maybeOne(sql.type(rowState)`
    SELECT live, w_live, w_ref, stamps, deleted_seq, write_seq
    FROM records
    WHERE ${where(key)}
    FOR UPDATE
  `);
}

export async function setSerialState(tx: Tx, key: RecordKey, wLive: boolean, wRef: string | null): Promise<void> {
  await tx.query(sql.unsafe`UPDATE records SET w_live = ${wLive}, w_ref = ${wRef} WHERE ${where(key)}`);
}

/**
 * A stub where there is no row: live in both views. Returns false when an API
 * write inserted the row meanwhile (the caller then treats it as existing).
 */
export async function insertStub(
  tx: Tx,
  key: RecordKey,
  fields: Record<string, unknown>,
  seq: number,
  at: string,
  wRef: string | null,
): Promise<boolean> {
  const result = await tx.query(sql.unsafe`
    INSERT INTO records (lang_key, kind, id, data, stamps, live, created_seq, write_seq, created_at, updated_at, w_live, w_ref)
    VALUES (
      ${key.langKey}, ${key.kind}, ${key.id}, ${sql.jsonb(fields as never)},
      coalesce((SELECT jsonb_object_agg(k, ${seq}::bigint) FROM jsonb_object_keys(${sql.jsonb(fields as never)}) AS k), '{}'),
      true, ${seq}, ${seq}, ${at}::timestamptz, ${at}::timestamptz, true, ${wRef}
    )
    ON CONFLICT (lang_key, kind, id) DO NOTHING
  `);
  return result.rowCount > 0;
}

/** Revives a tombstone (deleted before `seq`) as a stub. */
export async function reviveAsStub(tx: Tx, key: RecordKey, fields: Record<string, unknown>, seq: number, at: string) {
  await tx.query(sql.unsafe`
    UPDATE records SET
      data = ${sql.jsonb(fields as never)},
      stamps = coalesce((SELECT jsonb_object_agg(k, ${seq}::bigint) FROM jsonb_object_keys(${sql.jsonb(fields as never)}) AS k), '{}'),
      live = true, created_seq = ${seq}, write_seq = greatest(write_seq, ${seq}),
      created_at = ${at}::timestamptz, updated_at = ${at}::timestamptz
    WHERE ${where(key)} AND NOT live AND deleted_seq < ${seq}
  `);
}

/**
 * Writes fields into the API view as a change numbered `seq`: a field keeps
 * its value when the API wrote it later, and nothing happens when the record
 * was deleted later.
 */
export async function projectFields(tx: Tx, key: RecordKey, fields: Record<string, unknown>, seq: number) {
  if (Object.keys(fields).length === 0) return;
  const json = sql.jsonb(fields as never);
  await tx.query(sql.unsafe`
    UPDATE records SET
      data = data || (
        SELECT coalesce(jsonb_object_agg(f.key, f.value), '{}') FROM jsonb_each(${json}) f
        WHERE coalesce((stamps ->> f.key)::bigint, 0) < ${seq}
      ),
      stamps = stamps || (
        SELECT coalesce(jsonb_object_agg(f.key, ${seq}::bigint), '{}') FROM jsonb_each(${json}) f
        WHERE coalesce((stamps ->> f.key)::bigint, 0) < ${seq}
      )
    WHERE ${where(key)} AND live AND deleted_seq < ${seq}
  `);
}

/** A stub numbered `seq` precedes an API create numbered later: the record was created by the stub. */
export async function backdateCreation(tx: Tx, key: RecordKey, seq: number, at: string) {
  await tx.query(sql.unsafe`
    UPDATE records SET created_seq = ${seq}, created_at = ${at}::timestamptz
    WHERE ${where(key)} AND live AND deleted_seq < ${seq} AND created_seq > ${seq}
  `);
}

/**
 * Deletes in the API view as of `seq`: fields written later by the API
 * survive (they re-created the record), everything older goes.
 */
export async function projectDelete(tx: Tx, key: RecordKey, seq: number) {
  await tx.query(sql.unsafe`
    UPDATE records SET
      live = write_seq > ${seq},
      data = CASE WHEN write_seq > ${seq} THEN (
        SELECT coalesce(jsonb_object_agg(f.key, f.value), '{}') FROM jsonb_each(data) f
        WHERE coalesce((stamps ->> f.key)::bigint, 0) > ${seq}
      ) ELSE '{}' END,
      stamps = CASE WHEN write_seq > ${seq} THEN (
        SELECT coalesce(jsonb_object_agg(f.key, f.value), '{}') FROM jsonb_each(stamps) f
        WHERE f.value::bigint > ${seq}
      ) ELSE '{}' END,
      created_seq = CASE WHEN write_seq > ${seq} THEN write_seq ELSE created_seq END,
      created_at = CASE WHEN write_seq > ${seq} THEN updated_at ELSE created_at END,
      deleted_seq = ${seq}
    WHERE ${where(key)} AND live AND deleted_seq < ${seq}
  `);
}

export async function serialChildren(tx: Tx, langKey: number, kind: string, parentId: string): Promise<readonly string[]> {
  return tx.anyFirst(sql.type(z.object({ id: z.string() }))`
    SELECT id FROM records
    WHERE lang_key = ${langKey} AND kind = ${kind} AND w_live AND w_ref = ${parentId}
    ORDER BY id
  `);
}

export type LinkSide = 'a' | 'b';

/** The writer's side of a many-to-many relation becomes exactly `ids`. */
export async function replaceLinks(tx: Tx, langKey: number, rel: string, side: LinkSide, writer: string, ids: string[], seq: number) {
  const mine = sql.identifier([side]);
  const other = sql.identifier([side === 'a' ? 'b' : 'a']);
  // Sorted, so the audit entries come out the same whichever path (per change or set-based) applied them.
  const removed = [
    ...(await tx.anyFirst(sql.type(z.object({ id: z.string() }))`
      DELETE FROM links
      WHERE lang_key = ${langKey} AND rel = ${rel} AND ${mine} = ${writer} AND NOT (${other} = ANY(${sql.array(ids, 'text')}))
      RETURNING ${other} AS id
    `)),
  ].sort();
  const added =
    ids.length === 0
      ? []
      : await tx.anyFirst(sql.type(z.object({ id: z.string() }))`
    INSERT INTO links (lang_key, rel, ${mine}, ${other}, seq)
    SELECT ${langKey}, ${rel}, ${writer}, other_id, ${seq}
    FROM unnest(${sql.array(ids, 'text')}) AS other_id
    ON CONFLICT DO NOTHING
    RETURNING ${other} AS id
  `);
  return { removed, added };
}

/** Removes every link of `id` on one side; returns the ids on the other side. */
export async function removeLinks(tx: Tx, langKey: number, rel: string, side: LinkSide, id: string): Promise<readonly string[]> {
  const mine = sql.identifier([side]);
  const other = sql.identifier([side === 'a' ? 'b' : 'a']);
  return tx.anyFirst(sql.type(z.object({ id: z.string() }))`
    DELETE FROM links WHERE lang_key = ${langKey} AND rel = ${rel} AND ${mine} = ${id}
    RETURNING ${other} AS id
  `);
}

/** Adds or removes one link; true when that changed anything. */
export async function setLink(tx: Tx, langKey: number, rel: string, a: string, b: string, present: boolean, seq: number): Promise<boolean> {
  const result = present
    ? await tx.query(sql.unsafe`
        INSERT INTO links (lang_key, rel, a, b, seq) VALUES (${langKey}, ${rel}, ${a}, ${b}, ${seq})
        ON CONFLICT DO NOTHING
      `)
    : await tx.query(sql.unsafe`DELETE FROM links WHERE lang_key = ${langKey} AND rel = ${rel} AND a = ${a} AND b = ${b}`);
  return result.rowCount > 0;
}

/** Which of `ids` exist at this point of the serial order (their rows locked). One statement for a whole list. */
export async function serialLiveIds(tx: Tx, langKey: number, kind: string, ids: string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const live = await tx.anyFirst(sql.type(z.object({ id: z.string() }))`
    SELECT id FROM records
    WHERE lang_key = ${langKey} AND kind = ${kind} AND id = ANY(${sql.array(ids, 'text')}) AND w_live
    ORDER BY id
    FOR UPDATE
  `);
  return new Set(live);
}

/**
 * The serial view of a record written by its own change: it exists from now
 * on; its tracked reference is the one sent, or kept when not sent (cleared
 * when the write re-creates it). Returns whether it existed just before, or
 * null when there is no row.
 */
export async function markWritten(tx: Tx, key: RecordKey, sentRef: { value: string | null } | undefined): Promise<boolean | null> {
  const sent = sentRef !== undefined;
  const value = sentRef?.value ?? null;
  return tx.maybeOneFirst(sql.type(z.object({ was_live: z.boolean() }))`
    WITH old AS (
      SELECT w_live, w_ref FROM records WHERE ${where(key)} FOR UPDATE
    )
    UPDATE records r SET
      w_live = true,
      w_ref = CASE WHEN ${sent} THEN ${value}::text WHEN old.w_live THEN old.w_ref ELSE NULL END
    FROM old
    WHERE r.lang_key = ${key.langKey} AND r.kind = ${key.kind} AND r.id = ${key.id}
    RETURNING old.w_live AS was_live
  `);
}

/* Set-based forms for runs of independent upserts (see run.applier.ts). */

/** A record's key within a language, for sets and maps of targets. */
export const targetKey = (kind: string, id: string) => `${kind}\u0000${id}`;

/**
 * markWritten for many records of one kind at once.
 * @returns id → whether it existed in the serial view just before (ids with no row are absent).
 */
export async function markWrittenMany(
  tx: Tx,
  langKey: number,
  kind: string,
  rows: ReadonlyArray<{ id: string; sentRef: { value: string | null } | undefined }>,
): Promise<Map<string, boolean>> {
  // `id = ANY(ids)` bounds every scan by the batch, whatever the (often stale, mid-bulk) statistics say.
  const ids = sql.array(
    rows.map((row) => row.id),
    'text',
  );
  const result = await tx.any(sql.type(z.object({ id: z.string(), was_live: z.boolean() }))`
    WITH input AS (
      SELECT * FROM unnest(
        ${ids},
        ${sql.array(
          rows.map((row) => row.sentRef !== undefined),
          'bool',
        )},
        ${sql.array(
          rows.map((row) => row.sentRef?.value ?? null),
          'text',
        )}
      ) AS t(id, sent, ref)
    ),
    -- Only the language's applier (which holds its lock) writes w_live and w_ref: no lock needed to read them first.
    old AS (
      SELECT r.id, r.w_live, r.w_ref
      FROM records r
      WHERE r.lang_key = ${langKey} AND r.kind = ${kind} AND r.id = ANY(${ids})
    )
    UPDATE records r SET
      w_live = true,
      w_ref = CASE WHEN i.sent THEN i.ref WHEN old.w_live THEN old.w_ref ELSE NULL END
    FROM input i
    JOIN old ON old.id = i.id
    WHERE r.lang_key = ${langKey} AND r.kind = ${kind} AND r.id = ANY(${ids}) AND r.id = i.id
    RETURNING r.id, old.w_live AS was_live
  `);
  return new Map(result.map((row) => [row.id, row.was_live]));
}

/**
 * The serial-view liveness of the rows of `keys` that exist, by targetKey.
 * Unlocked: only the language's applier changes w_live, and a row inserted
 * meanwhile by an API write is caught by insertStubsMany's conflict.
 */
export async function serialLiveness(
  tx: Tx,
  langKey: number,
  keys: ReadonlyArray<{ kind: string; id: string }>,
): Promise<Map<string, boolean>> {
  if (keys.length === 0) return new Map();
  const wanted = new Set(keys.map((key) => targetKey(key.kind, key.id)));
  // Index conditions only (no join), so the scan is bounded by the keys whatever the statistics say.
  const rows = await tx.any(sql.type(z.object({ kind: z.string(), id: z.string(), w_live: z.boolean() }))`
    SELECT r.kind, r.id, r.w_live
    FROM records r
    WHERE r.lang_key = ${langKey}
      AND r.kind = ANY(${sql.array([...new Set(keys.map((key) => key.kind))], 'text')})
      AND r.id = ANY(${sql.array([...new Set(keys.map((key) => key.id))], 'text')})
  `);
  return new Map(rows.filter((row) => wanted.has(targetKey(row.kind, row.id))).map((row) => [targetKey(row.kind, row.id), row.w_live]));
}

/**
 * Stubs (no fields) where there is no row, each numbered by the change that
 * first named it. Returns the targetKeys inserted; a key an API write
 * inserted meanwhile is left out, and the caller treats it as existing.
 */
export async function insertStubsMany(
  tx: Tx,
  langKey: number,
  stubs: ReadonlyArray<{ kind: string; id: string; seq: number; at: string }>,
): Promise<Set<string>> {
  if (stubs.length === 0) return new Set();
  const rows = await tx.any(sql.type(z.object({ kind: z.string(), id: z.string() }))`
    INSERT INTO records (lang_key, kind, id, data, stamps, live, created_seq, write_seq, created_at, updated_at, w_live, w_ref)
    SELECT ${langKey}, t.kind, t.id, '{}', '{}', true, t.seq, t.seq, t.at, t.at, true, NULL
    FROM unnest(
      ${sql.array(
        stubs.map((stub) => stub.kind),
        'text',
      )},
      ${sql.array(
        stubs.map((stub) => stub.id),
        'text',
      )},
      ${sql.array(
        stubs.map((stub) => stub.seq),
        'int8',
      )},
      ${sql.array(
        stubs.map((stub) => stub.at),
        'timestamptz',
      )}
    ) AS t(kind, id, seq, at)
    ORDER BY t.kind, t.id
    ON CONFLICT (lang_key, kind, id) DO NOTHING
    RETURNING kind, id
  `);
  return new Set(rows.map((row) => targetKey(row.kind, row.id)));
}

/**
 * replaceLinks for many writers of one relation side at once: each writer's
 * links become exactly its pairs. Writers must be distinct.
 */
export async function replaceLinksMany(
  tx: Tx,
  langKey: number,
  rel: string,
  side: LinkSide,
  writers: readonly string[],
  pairs: ReadonlyArray<{ writer: string; other: string; seq: number }>,
): Promise<{ removed: Map<string, string[]>; added: Map<string, Set<string>> }> {
  const mine = sql.identifier([side]);
  const other = sql.identifier([side === 'a' ? 'b' : 'a']);
  const pairWriters = sql.array(
    pairs.map((pair) => pair.writer),
    'text',
  );
  const pairOthers = sql.array(
    pairs.map((pair) => pair.other),
    'text',
  );
  const removedRows = await tx.any(sql.type(z.object({ writer: z.string(), other: z.string() }))`
    DELETE FROM links l
    WHERE l.lang_key = ${langKey} AND l.rel = ${rel} AND l.${mine} = ANY(${sql.array(writers, 'text')})
      AND (l.${mine}, l.${other}) NOT IN (SELECT * FROM unnest(${pairWriters}, ${pairOthers}))
    RETURNING l.${mine} AS writer, l.${other} AS other
  `);
  const addedRows =
    pairs.length === 0
      ? []
      : await tx.any(sql.type(z.object({ writer: z.string(), other: z.string() }))`
          INSERT INTO links (lang_key, rel, ${mine}, ${other}, seq)
          SELECT ${langKey}, ${rel}, t.writer, t.other, t.seq
          FROM unnest(${pairWriters}, ${pairOthers}, ${sql.array(
            pairs.map((pair) => pair.seq),
            'int8',
          )}) AS t(writer, other, seq)
          ON CONFLICT DO NOTHING
          RETURNING ${mine} AS writer, ${other} AS other
        `);
  const removed = new Map<string, string[]>();
  for (const row of removedRows) removed.set(row.writer, [...(removed.get(row.writer) ?? []), row.other]);
  for (const list of removed.values()) list.sort();
  const added = new Map<string, Set<string>>();
  for (const row of addedRows) added.set(row.writer, (added.get(row.writer) ?? new Set()).add(row.other));
  return { removed, added };
}
