-- Live-record totals of the v2 lists per (language, kind), kept by triggers on
-- `records` into record_count_deltas (its table: migrations/0004_v2_counts.sql).
--
-- The total of a (lang_key, kind) is sum(delta). Writers only ever INSERT
-- delta rows, so concurrent writers never wait on a counter row: a shared
-- counter row would be held until commit, and a long transaction (an applier
-- or bulk batch) holding it while waiting for a record row that an API write
-- holds (and that write waiting for the counter) would deadlock. Now and then a
-- writer folds the visible rows of its key into one (skipping rows another
-- transaction is folding), so each key keeps about two hundred rows at most.
--
-- The same rows tell readers when a list's order changed: every change of
-- which records are live, or of a live record's created_at, writes a row
-- (a created_at change a row with delta 0), tagged with its transaction
-- (`xact`) and with the least created_at it touched (`low_created_at`; null:
-- anywhere). An item of a list that has no row written
-- after a snapshot with a low_created_at at or before the item's own is where
-- it was in that snapshot: nothing before it came or went (reads/list-anchors.ts
-- relies on this).
--
-- A fold is dear under steady writes: its scan of the key visits every row
-- deleted by earlier folds that autovacuum has not removed yet (a few seconds'
-- worth of writes), so folding often makes single writes dearer. Once in 128
-- keeps a key at a hundred rows or so (and up to 64 of earlier folds), which
-- a total sums in one short index scan, and a list that finds more than 256
-- folds them itself (reads/read.service.ts).

-- The signatures before low_created_at: dropped so that no caller reaches them.
DROP FUNCTION IF EXISTS record_count_add(bigint, text, bigint);
DROP FUNCTION IF EXISTS record_count_fold(bigint, text);

-- Folds the key's rows into one, which keeps the least created_at of what it
-- folded (null if any was null: anywhere), so a folded row says no more about
-- where the list changed than its rows did. A fold takes the changes' own
-- rows and leaves earlier folds' rows alone, until there are FOLDED_MAX of
-- those; then it takes them too. Folding them together puts the least time of
-- every change since the last such fold in one new row, which makes every
-- anchor read before it stale once (a list written from a bulk file keeps its
-- earliest time in its folded row): so that happens once in FOLDED_MAX folds,
-- not at every fold.
CREATE OR REPLACE FUNCTION record_count_fold(p_lang_key bigint, p_kind text) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  FOLDED_MAX constant int := 64;
  v_all boolean;
BEGIN
  v_all := (
    SELECT count(*) FROM (
      SELECT 1 FROM record_count_deltas WHERE lang_key = p_lang_key AND kind = p_kind AND folded LIMIT FOLDED_MAX
    ) AS earlier
  ) >= FOLDED_MAX;
  WITH taken AS (
    DELETE FROM record_count_deltas
    WHERE ctid = ANY (ARRAY(
      SELECT ctid FROM record_count_deltas
      WHERE lang_key = p_lang_key AND kind = p_kind AND (v_all OR NOT folded)
      FOR UPDATE SKIP LOCKED
    ))
    RETURNING delta, low_created_at
  )
  -- Written even when the deltas sum to 0: a change that moved a record (delta 0) is still a change of the order.
  INSERT INTO record_count_deltas (lang_key, kind, delta, low_created_at, folded)
  SELECT p_lang_key, p_kind, sum(delta), CASE WHEN bool_or(low_created_at IS NULL) THEN NULL ELSE min(low_created_at) END, true
  FROM taken
  HAVING count(*) > 0;
END
$$;

-- Adds one delta row per (lang_key, kind) and folds that key about once in 128 changes.
CREATE OR REPLACE FUNCTION record_count_add(p_lang_key bigint, p_kind text, p_delta bigint, p_low timestamptz) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  IF p_delta = 0 THEN
    RETURN;
  END IF;
  INSERT INTO record_count_deltas (lang_key, kind, delta, low_created_at) VALUES (p_lang_key, p_kind, p_delta, p_low);
  IF random() < 1.0 / 128 THEN
    PERFORM record_count_fold(p_lang_key, p_kind);
  END IF;
END
$$;

-- Inserts and deletes are counted per statement (a bulk load or a purge batch
-- adds one row per key, not one per record); a change of `live` per row, and
-- only when it really changes (the WHEN clause costs no function call).
CREATE OR REPLACE FUNCTION records_count_inserted() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM record_count_add(lang_key, kind, n, low)
  FROM (SELECT lang_key, kind, count(*) AS n, min(created_at) AS low FROM inserted_rows WHERE live GROUP BY lang_key, kind) AS changes;
  RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION records_count_deleted() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM record_count_add(lang_key, kind, -n, low)
  FROM (SELECT lang_key, kind, count(*) AS n, min(created_at) AS low FROM deleted_rows WHERE live GROUP BY lang_key, kind) AS changes;
  RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION records_count_live_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM record_count_add(NEW.lang_key, NEW.kind, CASE WHEN NEW.live THEN 1 ELSE -1 END, least(OLD.created_at, NEW.created_at));
  RETURN NULL;
END
$$;

-- A live record moved in list order: a row with delta 0 marks the change.
CREATE OR REPLACE FUNCTION records_list_reordered() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO record_count_deltas (lang_key, kind, delta, low_created_at)
  VALUES (NEW.lang_key, NEW.kind, 0, least(OLD.created_at, NEW.created_at));
  RETURN NULL;
END
$$;

CREATE OR REPLACE TRIGGER records_count_inserted AFTER INSERT ON records
  REFERENCING NEW TABLE AS inserted_rows
  FOR EACH STATEMENT EXECUTE FUNCTION records_count_inserted();

CREATE OR REPLACE TRIGGER records_count_deleted AFTER DELETE ON records
  REFERENCING OLD TABLE AS deleted_rows
  FOR EACH STATEMENT EXECUTE FUNCTION records_count_deleted();

CREATE OR REPLACE TRIGGER records_count_live_changed AFTER UPDATE OF live ON records
  FOR EACH ROW WHEN (OLD.live IS DISTINCT FROM NEW.live)
  EXECUTE FUNCTION records_count_live_changed();

CREATE OR REPLACE TRIGGER records_list_reordered AFTER UPDATE OF created_at ON records
  FOR EACH ROW WHEN (OLD.live AND NEW.live AND OLD.created_at IS DISTINCT FROM NEW.created_at)
  EXECUTE FUNCTION records_list_reordered();
