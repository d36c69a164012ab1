import { type CommonQueryMethods, type DatabasePool, type DatabaseTransactionConnection, sql } from 'slonik';
import { z } from 'zod';
import { compareKeys } from '../catalogue/key-order.js';
import { copyInto, copyText } from '../platform/copy-in.js';
import { unparsedRows } from '../platform/db.js';
import { waitForLanguageWriters } from './locks.js';

export type { AuditEntry } from './audit.repository.js';

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
  action: z.enum(['upsert', 'delete', 'assign', 'unassign']),
  record_id: z.string(),
  payload: z.record(z.unknown()),
  actor: z.string(),
  request_id: z.string().nullable(),
  accepted_at: z.string(),
  progress: changeProgress.nullable(),
});
export type OutboxEntry = z.infer<typeof outboxEntry>;

/* The row types of the statements a batch runs on thousands of rows: typed, not parsed (platform/db.ts, unparsedRows). */
const outboxEntryRows = unparsedRows(outboxEntry);
const serialStateRows = unparsedRows(z.object({ id: z.string(), w_live: z.boolean(), w_ref: z.string().nullable() }));
const lockedStateRows = unparsedRows(z.object({ id: z.string(), w_live: z.boolean(), w_ref: z.string().nullable(), at: z.string() }));
const livenessRows = unparsedRows(z.object({ kind: z.string(), id: z.string(), w_live: z.boolean() }));
const keyRows = unparsedRows(z.object({ kind: z.string(), id: z.string() }));
const linkRows = unparsedRows(z.object({ writer: z.string(), other: z.string() }));

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

/*
 * Set-based statements. Each takes at most one slice of ids (the applier's
 * budget, see change.applier.ts), so its time is bounded whatever the size of
 * the list or of the relation it works on. They name their rows with
 * `id = ANY(ids)`, or page through an index with a row comparison that only
 * that index can serve, so every scan is bounded by the slice whatever the
 * (often stale, mid-bulk) statistics say: with a language grown from nothing
 * to a million rows since the last analyze, a join or anti-join against a
 * list can be planned as a nested loop over both (10^10 comparisons for two
 * lists of 100,000). No statement here joins a list against a table.
 */

const textArray = (values: readonly string[]) => sql.array([...values], 'text');

/** A record's key within a language, for sets and maps of targets. */
export const targetKey = (kind: string, id: string) => `${kind}\u0000${id}`;

/** What a stub holds: its fields (a point-at list's parent, or none) and its tracked reference. */
export interface StubContent {
  fields: Record<string, unknown>;
  ref: string | null;
}

export const EMPTY_STUB: StubContent = { fields: {}, ref: null };

/** A stub to create, numbered and timed as the change that names it. */
export interface StubTarget {
  kind: string;
  id: string;
  seq: number;
  at: string;
}

/** The serial view of the rows of `ids` that exist (unlocked: only the language's applier writes it). */
export async function serialStates(
  tx: Tx,
  langKey: number,
  kind: string,
  ids: readonly string[],
): Promise<Map<string, { w_live: boolean; w_ref: string | null }>> {
  if (ids.length === 0) return new Map();
  const rows = await tx.any(sql.type(serialStateRows)`
    SELECT id, w_live, w_ref FROM records
    WHERE lang_key = ${langKey} AND kind = ${kind} AND id = ANY(${textArray(ids)})
  `);
  return new Map(rows.map((row) => [row.id, { w_live: row.w_live, w_ref: row.w_ref }]));
}

/**
 * Stubs where there is no row: live in both views, each numbered by the change
 * that names it. Returns the targetKeys inserted; a key an API write inserted
 * meanwhile is left out, and the caller treats it as a row that exists
 * (stubOutsideSerialView).
 */
export async function insertStubsMany(tx: Tx, langKey: number, stubs: readonly StubTarget[], content = EMPTY_STUB): Promise<Set<string>> {
  if (stubs.length === 0) return new Set();
  const fields = sql.jsonb(content.fields as never);
  const rows = await tx.any(sql.type(keyRows)`
    INSERT INTO records (lang_key, kind, id, data, stamps, live, created_seq, write_seq, created_at, updated_at, w_live, w_ref)
    SELECT ${langKey}, t.kind, t.id, ${fields},
           coalesce((SELECT jsonb_object_agg(k, t.seq) FROM jsonb_object_keys(${fields}) AS k), '{}'),
           true, t.seq, t.seq, t.at, t.at, true, ${content.ref}::text
    FROM unnest(
      ${textArray(stubs.map((stub) => stub.kind))},
      ${textArray(stubs.map((stub) => stub.id))},
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
 * Stubs over rows that exist outside the serial view. Serially each target
 * is created here, so it becomes live in the serial view; in the API view:
 * - a tombstone deleted before the stub's number is revived as the stub;
 * - a tombstone deleted later stays deleted (a stub never brings back what a
 *   later request deleted);
 * - a row the API already created later keeps its fields, gets the stub's
 *   fields where it did not write them later, and its creation moves back to
 *   the stub (so the API's create is, serially, an update).
 * See docs/consistency.md, "A stub job runs after a later ...".
 */
export async function stubOutsideSerialView(tx: Tx, langKey: number, stubs: readonly StubTarget[], content = EMPTY_STUB): Promise<void> {
  if (stubs.length === 0) return;
  const fields = sql.jsonb(content.fields as never);
  const ids = textArray(stubs.map((stub) => stub.id));
  await tx.query(sql.unsafe`
    WITH t AS (
      SELECT * FROM unnest(
        ${textArray(stubs.map((stub) => stub.kind))},
        ${ids},
        ${sql.array(
          stubs.map((stub) => stub.seq),
          'int8',
        )},
        ${sql.array(
          stubs.map((stub) => stub.at),
          'timestamptz',
        )}
      ) AS t(kind, id, seq, at)
    )
    UPDATE records r SET
      w_live = true,
      w_ref = ${content.ref}::text,
      live = r.live OR r.deleted_seq < t.seq,
      data = CASE
        WHEN NOT r.live AND r.deleted_seq < t.seq THEN ${fields}
        WHEN r.live AND r.deleted_seq < t.seq THEN r.data || (
          SELECT coalesce(jsonb_object_agg(f.key, f.value), '{}') FROM jsonb_each(${fields}) f
          WHERE coalesce((r.stamps ->> f.key)::bigint, 0) < t.seq
        )
        ELSE r.data
      END,
      stamps = CASE
        WHEN NOT r.live AND r.deleted_seq < t.seq THEN coalesce((SELECT jsonb_object_agg(k, t.seq) FROM jsonb_object_keys(${fields}) AS k), '{}')
        WHEN r.live AND r.deleted_seq < t.seq THEN r.stamps || (
          SELECT coalesce(jsonb_object_agg(f.key, t.seq), '{}') FROM jsonb_each(${fields}) f
          WHERE coalesce((r.stamps ->> f.key)::bigint, 0) < t.seq
        )
        ELSE r.stamps
      END,
      created_seq = CASE
        WHEN NOT r.live AND r.deleted_seq < t.seq THEN t.seq
        WHEN r.live AND r.deleted_seq < t.seq AND r.created_seq > t.seq THEN t.seq
        ELSE r.created_seq
      END,
      write_seq = CASE WHEN NOT r.live AND r.deleted_seq < t.seq THEN greatest(r.write_seq, t.seq) ELSE r.write_seq END,
      -- A stub that precedes the API write that created the row: the record dates from the stub, unless that
      -- write or a later one gave its own created_at (an update that gives one sets it). Their outbox rows, still
      -- pending behind this change, say so: the record's writes are numbered created_seq to write_seq.
      created_at = CASE
        WHEN NOT r.live AND r.deleted_seq < t.seq THEN t.at
        WHEN r.live AND r.deleted_seq < t.seq AND r.created_seq > t.seq AND NOT EXISTS (
          SELECT 1 FROM outbox o
          WHERE o.lang_key = r.lang_key AND o.seq BETWEEN r.created_seq AND r.write_seq
            AND o.kind = r.kind AND o.record_id = r.id AND jsonb_typeof(o.payload -> 'created_at') = 'string'
        ) THEN t.at
        ELSE r.created_at
      END,
      updated_at = CASE WHEN NOT r.live AND r.deleted_seq < t.seq THEN t.at ELSE r.updated_at END
    FROM t
    WHERE r.lang_key = ${langKey} AND r.id = ANY(${ids}) AND r.kind = t.kind AND r.id = t.id AND NOT r.w_live
  `);
}

/**
 * Writes fields into the API view of `ids` as a change numbered `seq`: a field
 * keeps its value where the API wrote it later, and nothing happens to a
 * record deleted later.
 */
export async function projectFieldsMany(
  tx: Tx,
  langKey: number,
  kind: string,
  ids: readonly string[],
  fields: Record<string, unknown>,
  seq: number,
): Promise<void> {
  if (ids.length === 0 || Object.keys(fields).length === 0) return;
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
    WHERE lang_key = ${langKey} AND kind = ${kind} AND id = ANY(${textArray(ids)}) AND live AND deleted_seq < ${seq}
  `);
}

/** Point-at list, serial view: the live records of `ids` whose tracked reference is not `parent` now name it. Returns those. */
export async function moveSerialRefs(tx: Tx, langKey: number, kind: string, ids: readonly string[], parent: string): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const moved = await tx.anyFirst(sql.type(z.object({ id: z.string() }))`
    UPDATE records SET w_ref = ${parent}
    WHERE lang_key = ${langKey} AND kind = ${kind} AND id = ANY(${textArray(ids)}) AND w_live AND w_ref IS DISTINCT FROM ${parent}
    RETURNING id
  `);
  return new Set(moved);
}

/**
 * The next `limit` records (by id, after `after` when given) whose serial
 * reference names `parentId`: the children a parent's delete cascades to or
 * detaches, the profiles an unsubscribe fans out to. The row comparison can
 * only be served by the w_ref index, which holds them in this order, so the
 * scan reads exactly the page (an ordered scan of the kind's primary key,
 * which stale statistics may prefer, could walk all of the kind).
 */
export async function serialChildrenPage(
  tx: Tx,
  langKey: number,
  kind: string,
  parentId: string,
  after: string | null,
  limit: number,
): Promise<readonly string[]> {
  return tx.anyFirst(sql.type(z.object({ id: z.string() }))`
    SELECT id FROM records
    WHERE lang_key = ${langKey} AND kind = ${kind} AND w_ref = ${parentId} AND w_live
      AND (w_ref, id) > (${parentId}::text, ${after ?? ''}::text)
    ORDER BY w_ref, id
    LIMIT ${limit}
  `);
}

/** Cascade of a parent's delete numbered `seq`: gone in the serial view; in the API view only what no later write re-created. */
export async function cascadeDeleteMany(tx: Tx, langKey: number, kind: string, ids: readonly string[], seq: number): Promise<void> {
  if (ids.length === 0) return;
  const matching = sql.fragment`lang_key = ${langKey} AND kind = ${kind} AND id = ANY(${textArray(ids)})`;
  await tx.query(sql.unsafe`UPDATE records SET w_live = false, w_ref = NULL WHERE ${matching}`);
  // Fields written later by the API survive (they re-created the record), everything older goes.
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
    WHERE ${matching} AND live AND deleted_seq < ${seq}
  `);
}

/** A parent's delete numbered `seq` clears the children's reference `field` (serially, and in the API view unless written later). */
export async function setNullMany(
  tx: Tx,
  langKey: number,
  kind: string,
  ids: readonly string[],
  field: string,
  seq: number,
): Promise<void> {
  if (ids.length === 0) return;
  await tx.query(sql.unsafe`
    UPDATE records SET w_live = true, w_ref = NULL
    WHERE lang_key = ${langKey} AND kind = ${kind} AND id = ANY(${textArray(ids)})
  `);
  await projectFieldsMany(tx, langKey, kind, ids, { [field]: null }, seq);
}

export type LinkSide = 'a' | 'b';

const otherSide = (side: LinkSide): LinkSide => (side === 'a' ? 'b' : 'a');

const linkColumns = (side: LinkSide) => ({
  mine: sql.identifier([side]),
  other: sql.identifier([otherSide(side)]),
});

/**
 * The next `limit` ids linked to `id` on its side, in order, after `after`
 * (from the start when null). The row comparison can only be served by the
 * index that leads with this side, so the scan reads exactly the page.
 */
export async function linksPage(
  tx: Tx,
  langKey: number,
  rel: string,
  side: LinkSide,
  id: string,
  after: string | null,
  limit: number,
): Promise<readonly string[]> {
  const { mine, other } = linkColumns(side);
  return tx.anyFirst(sql.type(z.object({ id: z.string() }))`
    SELECT l.${other} AS id FROM links l
    WHERE l.lang_key = ${langKey} AND l.rel = ${rel} AND l.${mine} = ${id} AND l.${other} > ${after ?? ''}::text
    ORDER BY l.${other}
    LIMIT ${limit}
  `);
}

/** Removes the links between `id` (on its side) and `others`. */
export async function unlinkMany(
  tx: Tx,
  langKey: number,
  rel: string,
  side: LinkSide,
  id: string,
  others: readonly string[],
): Promise<void> {
  if (others.length === 0) return;
  const { mine, other } = linkColumns(side);
  await tx.query(sql.unsafe`
    DELETE FROM links
    WHERE lang_key = ${langKey} AND rel = ${rel} AND ${mine} = ${id} AND ${other} = ANY(${textArray(others)})
  `);
}

/** Links the writer to `ids` (one slice of its list); returns the ids that were not linked yet. */
export async function linkMany(
  tx: Tx,
  langKey: number,
  rel: string,
  side: LinkSide,
  writer: string,
  ids: readonly string[],
  seq: number,
): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const { mine, other } = linkColumns(side);
  const added = await tx.anyFirst(sql.type(z.object({ id: z.string() }))`
    INSERT INTO links (lang_key, rel, ${mine}, ${other}, seq)
    SELECT ${langKey}, ${rel}, ${writer}, other_id, ${seq}
    FROM unnest(${textArray(ids)}) AS other_id
    ON CONFLICT DO NOTHING
    RETURNING ${other} AS id
  `);
  return new Set(added);
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

/* Forms for runs of independent upserts (see run.applier.ts). */

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
  // Two statements, so that no plan depends on what the statistics know of the language: one primary-key probe per
  // id (LATERAL), then an update of the rows found, by ctid. (One statement with "id = ANY(ids)" can be planned, for a
  // language the statistics have not seen yet, as a read of all its records.)
  // The probe locks each row as the update would; the update's own snapshot, taken after those locks, sees the rows'
  // latest versions, which nobody else can move until this transaction ends. Only the language's applier writes
  // w_live and w_ref.
  const found = await tx.any(sql.type(lockedStateRows)`
    SELECT i.id, r.w_live, r.w_ref, r.ctid::text AS at
    FROM unnest(${textArray(rows.map((row) => row.id))}) AS i(id)
    CROSS JOIN LATERAL (
      SELECT r.ctid, r.w_live, r.w_ref
      FROM records r
      WHERE r.lang_key = ${langKey} AND r.kind = ${kind} AND r.id = i.id
      FOR UPDATE
    ) AS r
  `);
  const existed = new Map<string, boolean>();
  const next = new Map<string, { at: string; live: boolean; ref: string | null; wasLive: boolean; wasRef: string | null }>();
  for (const row of found) {
    existed.set(row.id, row.w_live);
    next.set(row.id, { at: row.at, live: row.w_live, ref: row.w_ref, wasLive: row.w_live, wasRef: row.w_ref });
  }
  // In write order: a reference that was sent replaces the kept one; a record that was not live keeps none.
  for (const row of rows) {
    const state = next.get(row.id);
    if (!state) continue;
    state.ref = row.sentRef !== undefined ? row.sentRef.value : state.live ? state.ref : null;
    state.live = true;
  }
  // A record already live with the reference it keeps needs no new version of its row: a catalogue synced again is
  // mostly such records.
  const marks = [...next.values()].filter((state) => !state.wasLive || state.ref !== state.wasRef);
  if (marks.length === 0) return existed;
  await tx.query(sql.unsafe`
    UPDATE records r SET w_live = true, w_ref = t.ref
    FROM unnest(
      ${sql.array(
        marks.map((state) => state.at),
        'tid',
      )},
      ${sql.array(
        marks.map((state) => state.ref),
        'text',
      )}
    ) AS t(at, ref)
    WHERE r.ctid = t.at
  `);
  return existed;
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
  const rows = await tx.any(sql.type(livenessRows)`
    SELECT r.kind, r.id, r.w_live
    FROM records r
    WHERE r.lang_key = ${langKey}
      AND r.kind = ANY(${textArray([...new Set(keys.map((key) => key.kind))])})
      AND r.id = ANY(${textArray([...new Set(keys.map((key) => key.id))])})
  `);
  return new Map(rows.filter((row) => wanted.has(targetKey(row.kind, row.id))).map((row) => [targetKey(row.kind, row.id), row.w_live]));
}

/**
 * The links of `writers` on their side, at most `limit` (the caller asks for
 * one more than it can take, to know that a run is too big), sorted. (No
 * ORDER BY: with a list of writers the index cannot return them in order,
 * and sorting a writer's million links to keep a few would be the scan the
 * limit is there to avoid.)
 */
export async function existingLinks(
  tx: Tx,
  langKey: number,
  rel: string,
  side: LinkSide,
  writers: readonly string[],
  limit: number,
): Promise<ReadonlyArray<{ writer: string; other: string }>> {
  if (writers.length === 0) return [];
  const { mine, other } = linkColumns(side);
  // One index probe per writer (LATERAL): with "= ANY(writers)" and a language the statistics do not know, the
  // planner estimated one row for the whole language and read all of its links, filtering them.
  const rows = await tx.any(sql.type(linkRows)`
    SELECT w.writer, l.other
    FROM unnest(${textArray(writers)}) AS w(writer)
    CROSS JOIN LATERAL (
      SELECT l.${other} AS other FROM links l
      WHERE l.lang_key = ${langKey} AND l.rel = ${rel} AND l.${mine} = w.writer
      LIMIT ${limit}
    ) AS l
    LIMIT ${limit}
  `);
  return [...rows].sort((x, y) => (x.writer === y.writer ? compareKeys(x.other, y.other) : compareKeys(x.writer, y.writer)));
}

/** Removes exactly these links. */
export async function removeLinkPairs(
  tx: Tx,
  langKey: number,
  rel: string,
  side: LinkSide,
  pairs: ReadonlyArray<{ writer: string; other: string }>,
): Promise<void> {
  if (pairs.length === 0) return;
  const { mine, other } = linkColumns(side);
  const writers = textArray(pairs.map((pair) => pair.writer));
  const others = textArray(pairs.map((pair) => pair.other));
  await tx.query(sql.unsafe`
    DELETE FROM links l
    USING unnest(${writers}, ${others}) AS p(writer, other)
    WHERE l.lang_key = ${langKey} AND l.rel = ${rel} AND l.${mine} = ANY(${writers}) AND l.${other} = ANY(${others})
      AND l.${mine} = p.writer AND l.${other} = p.other
  `);
}

/**
 * Adds these links, each numbered by its change: links none of their writers
 * has yet (the caller leaves out the ones it read). Copied (a plain insert:
 * no ON CONFLICT, nothing returned): only the applier writes links, under its
 * language's lock, so nothing can have added one since they were read (a
 * duplicate is a bug, and fails the batch loudly), so nothing probes the
 * unique index for a conflict or returns rows no one reads.
 */
export async function insertLinkPairs(
  tx: Tx,
  langKey: number,
  rel: string,
  side: LinkSide,
  pairs: ReadonlyArray<{ writer: string; other: string; seq: number }>,
): Promise<void> {
  // Copied (platform/copy-in.ts): a run's new links are many rows with no conflict to handle.
  const prefix = `${langKey}\t${copyText(rel)}\t`;
  let rows = '';
  for (const pair of pairs) rows += `${prefix}${copyText(pair.writer)}\t${copyText(pair.other)}\t${pair.seq}\n`;
  await copyInto(tx, 'links', ['lang_key', 'rel', side, otherSide(side), 'seq'], rows);
}
