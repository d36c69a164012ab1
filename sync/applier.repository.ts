import { type DatabaseTransactionConnection, sql } from 'slonik';
import { z } from 'zod';
import { textArray, unparsedRows } from '../platform/db.js';
import { targetKey } from './stubs.repository.js';

type Tx = DatabaseTransactionConnection;

/* The row types of the statements a batch runs on thousands of rows: typed, not parsed (platform/db.ts, unparsedRows). */
const serialStateRows = unparsedRows(z.object({ id: z.string(), w_live: z.boolean(), w_ref: z.string().nullable() }));
const lockedStateRows = unparsedRows(z.object({ id: z.string(), w_live: z.boolean(), w_ref: z.string().nullable(), at: z.string() }));
const livenessRows = unparsedRows(z.object({ kind: z.string(), id: z.string(), w_live: z.boolean() }));

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
