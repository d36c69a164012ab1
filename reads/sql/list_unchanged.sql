-- Whether anything a language's lists show may have changed since a snapshot
-- (reads/list-page-cache.ts keeps pages read in that snapshot and serves them
-- again while this says no).
--
-- It relies on one rule of the write path (docs/consistency.md, "Pages served
-- again"): every transaction that changes what a language's records or links
-- look like also writes, in the same transaction, one of
--   - an outbox row of the language above its applied position (single
--     writes, deletes, bulk runs queued; a slice's progress, a change set
--     aside), or
--   - the language's `outbox_applied` row (every applier batch and bulk run
--     applied in turn that finished a change; an operator's requeue), or
--   - the language's `languages` row (its upsert, delete and purge).
-- So a language none of whose rows of those three was written by a
-- transaction the snapshot does not see looks exactly as it did in that
-- snapshot. The check is conservative: a row written for another reason (a
-- requeue) only costs a page its reuse.

-- Whether a row's xmin (a 32-bit transaction id) committed before a snapshot,
-- for a row visible now; `p_next` is the current snapshot's xmax, as int8.
-- pg_visible_in_snapshot takes the 64-bit id: a visible row's xmin is below
-- the current snapshot's xmax and at most 2^32 ids older, which fixes its
-- epoch. Frozen or bootstrap ids (below 3) are older than any snapshot; an id
-- so old that it wrapped around maps to a recent one at worst, which reads as
-- "changed", never the reverse. One expression, so Postgres inlines it.
CREATE OR REPLACE FUNCTION xmin_visible_in_snapshot(p_xmin xid, p_snapshot pg_snapshot, p_next int8) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT p_xmin::text::int8 < 3 OR pg_visible_in_snapshot(
    ((((p_next >> 32) - (p_xmin::text::int8 >= (p_next & 4294967295))::int) << 32) | p_xmin::text::int8)::text::xid8,
    p_snapshot
  )
$$;

-- PL/pgSQL, not SQL: its statements' plans are kept for the session, where an
-- SQL function's body is planned again on every call (most of its cost).
CREATE OR REPLACE FUNCTION list_unchanged_since(p_lang_key bigint, p_snapshot pg_snapshot) RETURNS boolean
LANGUAGE plpgsql STABLE AS $$
DECLARE
  v_next constant int8 := pg_snapshot_xmax(pg_current_snapshot())::text::int8;
BEGIN
  RETURN
    NOT EXISTS (
      SELECT 1 FROM languages l
      WHERE l.lang_key = p_lang_key AND NOT xmin_visible_in_snapshot(l.xmin, p_snapshot, v_next)
    )
    AND NOT EXISTS (
      SELECT 1 FROM outbox_applied p
      WHERE p.lang_key = p_lang_key AND NOT xmin_visible_in_snapshot(p.xmin, p_snapshot, v_next)
    )
    -- Only the changes still pending: those at or below the position are set aside (whose requeue writes the
    -- position) or deleted, and their index entries are not walked.
    AND NOT EXISTS (
      SELECT 1 FROM outbox o
      WHERE o.lang_key = p_lang_key
        AND o.seq > coalesce((SELECT p.through_seq FROM outbox_applied p WHERE p.lang_key = p_lang_key), 0)
        AND NOT xmin_visible_in_snapshot(o.xmin, p_snapshot, v_next)
    );
END
$$;
