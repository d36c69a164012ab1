/*
 * Stubs the applier creates: records a change names that do not exist yet,
 * made in the serial view and, where the view must not see them yet, outside it.
 */
import { type DatabaseTransactionConnection, sql } from 'slonik';
import { z } from 'zod';
import { textArray, unparsedRows } from '../platform/db.js';

type Tx = DatabaseTransactionConnection;

const keyRows = unparsedRows(z.object({ kind: z.string(), id: z.string() }));

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

/** The stubs as rows `t(kind, id, seq, at)`, for one set-based statement. */
const stubRows = (stubs: readonly StubTarget[]) => sql.fragment`unnest(
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
) AS t(kind, id, seq, at)`;

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
    FROM ${stubRows(stubs)}
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
      SELECT * FROM ${stubRows(stubs)}
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
