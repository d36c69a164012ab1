-- One round trip per single write. The statements are the ones the API used
-- to send one by one inside a transaction; as a function they run in the
-- caller's transaction (or the call's own) with plans cached per connection.
--
-- Order matters and is kept: the language's shared lock is taken before a
-- write number (the applier's horizon relies on it), and each statement of a
-- plpgsql function in READ COMMITTED takes a fresh snapshot, so a language
-- deleted while we waited for the lock is seen as gone.
--
-- status: 'written' (the row), 'language-gone' (no row). An update that lost a
-- race to a higher-numbered write of the same record is retried with a new
-- number, as before.
CREATE FUNCTION write_record(
  p_lang_key    bigint,
  p_kind        text,
  p_id          text,
  p_fields      jsonb,
  p_created_at  timestamptz,
  p_updated_at  timestamptz,
  p_account_id  bigint,
  p_language_id text,
  p_payload     jsonb,
  p_actor       text,
  p_request_id  text
)
RETURNS TABLE (status text, id text, data jsonb, created_at timestamptz, updated_at timestamptz, seq bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  attempt integer := 0;
BEGIN
  PERFORM pg_advisory_xact_lock_shared(1, p_lang_key::int);
  LOOP
    attempt := attempt + 1;
    RETURN QUERY
      WITH s AS (
        SELECT nextval('write_seq') AS seq, date_trunc('milliseconds', clock_timestamp()) AS now
      ),
      w AS (
        INSERT INTO records AS r (lang_key, kind, id, data, stamps, live, created_seq, write_seq, created_at, updated_at)
        SELECT
          p_lang_key, p_kind, p_id, p_fields,
          coalesce((SELECT jsonb_object_agg(name, s.seq) FROM jsonb_object_keys(p_fields) AS name), '{}'::jsonb),
          true, s.seq, s.seq, coalesce(p_created_at, s.now), coalesce(p_updated_at, s.now)
        FROM s
        WHERE EXISTS (SELECT 1 FROM languages l WHERE l.lang_key = p_lang_key AND l.deleted_at IS NULL)
        ON CONFLICT (lang_key, kind, id) DO UPDATE SET
          data = CASE WHEN r.live THEN r.data || excluded.data ELSE excluded.data END,
          stamps = CASE WHEN r.live THEN r.stamps || excluded.stamps ELSE excluded.stamps END,
          live = true,
          created_seq = CASE WHEN r.live THEN r.created_seq ELSE excluded.created_seq END,
          write_seq = excluded.write_seq,
          created_at = CASE
            WHEN p_created_at IS NOT NULL OR NOT r.live THEN excluded.created_at
            ELSE r.created_at
          END,
          updated_at = excluded.updated_at
        WHERE r.write_seq < excluded.write_seq
        RETURNING r.id, r.data, r.created_at, r.updated_at, r.write_seq AS seq
      ),
      o AS (
        INSERT INTO outbox (seq, lang_key, account_id, language_id, kind, action, record_id, payload, actor, request_id)
        SELECT w.seq, p_lang_key, p_account_id, p_language_id, p_kind, 'upsert', w.id, p_payload, p_actor, p_request_id
        FROM w
      )
      SELECT 'written'::text, w.id, w.data, w.created_at, w.updated_at, w.seq FROM w;
    IF FOUND THEN
      RETURN;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM languages l WHERE l.lang_key = p_lang_key AND l.deleted_at IS NULL) THEN
      RETURN QUERY SELECT 'language-gone'::text, NULL::text, NULL::jsonb, NULL::timestamptz, NULL::timestamptz, NULL::bigint;
      RETURN;
    END IF;
    IF attempt >= 5 THEN
      RAISE EXCEPTION 'write of % % overtaken % times', p_kind, p_id, attempt;
    END IF;
  END LOOP;
END
$$;

-- write_record for a run of bulk lines (distinct records, in line order). Its
-- upsert must stay the same as write_record's. It is written out twice on
-- purpose: sharing it through arrays (write_record calling this with one
-- element) made every single write about 30% more expensive in Postgres
-- (pgbench, 20 clients: 4,500 against 3,100 tps).
--
-- The numbers are taken in line order, so the run is applied as if its lines
-- were sent one by one. When a concurrent single write of one of the records got a
-- higher number first, nothing is returned for that row and the status is
-- 'overtaken': the caller rolls back and applies the run again.
CREATE FUNCTION write_records(
  p_lang_key      bigint,
  p_kinds         text[],
  p_ids           text[],
  p_fields        jsonb[],
  p_created_at    timestamptz[],
  p_updated_at    timestamptz[],
  p_payloads      jsonb[],
  p_created_given boolean,
  p_account_id    bigint,
  p_language_id   text,
  p_actor         text,
  p_request_id    text
)
RETURNS TABLE (status text, written integer)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  n    integer := cardinality(p_ids);
  seqs bigint[];
  done integer;
BEGIN
  PERFORM pg_advisory_xact_lock_shared(1, p_lang_key::int);
  IF NOT EXISTS (SELECT 1 FROM languages l WHERE l.lang_key = p_lang_key AND l.deleted_at IS NULL) THEN
    RETURN QUERY SELECT 'language-gone'::text, 0;
    RETURN;
  END IF;
  seqs := ARRAY(SELECT nextval('write_seq') FROM generate_series(1, n) ORDER BY 1);
  WITH input AS (
    SELECT t.*, date_trunc('milliseconds', clock_timestamp()) AS now
    FROM unnest(p_kinds, p_ids, p_fields, p_created_at, p_updated_at, p_payloads, seqs)
      AS t(kind, id, fields, created_at, updated_at, payload, seq)
  ),
  w AS (
    INSERT INTO records AS r (lang_key, kind, id, data, stamps, live, created_seq, write_seq, created_at, updated_at)
    SELECT
      p_lang_key, i.kind, i.id, i.fields,
      coalesce((SELECT jsonb_object_agg(name, i.seq) FROM jsonb_object_keys(i.fields) AS name), '{}'::jsonb),
      true, i.seq, i.seq, coalesce(i.created_at, i.now), coalesce(i.updated_at, i.now)
    FROM input i
    ORDER BY i.kind, i.id
    ON CONFLICT (lang_key, kind, id) DO UPDATE SET
      data = CASE WHEN r.live THEN r.data || excluded.data ELSE excluded.data END,
      stamps = CASE WHEN r.live THEN r.stamps || excluded.stamps ELSE excluded.stamps END,
      live = true,
      created_seq = CASE WHEN r.live THEN r.created_seq ELSE excluded.created_seq END,
      write_seq = excluded.write_seq,
      created_at = CASE
        WHEN p_created_given OR NOT r.live THEN excluded.created_at
        ELSE r.created_at
      END,
      updated_at = excluded.updated_at
    WHERE r.write_seq < excluded.write_seq
    RETURNING r.kind, r.id, r.write_seq AS seq
  ),
  o AS (
    INSERT INTO outbox (seq, lang_key, account_id, language_id, kind, action, record_id, payload, actor, request_id)
    SELECT w.seq, p_lang_key, p_account_id, p_language_id, w.kind, 'upsert', w.id, i.payload, p_actor, p_request_id
    FROM w
    JOIN input i ON i.seq = w.seq
    RETURNING 1
  )
  SELECT count(*) INTO done FROM o;
  RETURN QUERY SELECT CASE WHEN done < n THEN 'overtaken' ELSE 'written' END, done;
END
$$;

-- The applier marks every written record in the serial view (w_live, w_ref).
-- With w_live out of every index and room left on each page, that update is a
-- HOT update: no new index entries, about a third of the cost per record.
DROP INDEX records_w_ref;
CREATE INDEX records_w_ref ON records (lang_key, kind, w_ref) WHERE w_ref IS NOT NULL;
ALTER TABLE records SET (fillfactor = 80);

-- Every record, link and audit row is written once per change, millions per
-- bulk file, so each index and per-row check on them is paid millions of times:
-- - audit_log (record_id, seq) serves lookups with or without kind, so the
--   (kind, record_id, seq) index only cost writes;
-- - the foreign keys to languages checked one row at a time that a language
--   exists; every writer already checks in the same statement that it is live
--   (a stricter check: tombstoned languages keep their rows until purged).
DROP INDEX audit_log_record;
ALTER TABLE records DROP CONSTRAINT records_lang_key_fkey;
ALTER TABLE links DROP CONSTRAINT links_lang_key_fkey;

-- The applier's next changes, in order. The outbox is a queue: its statistics
-- are stale most of the time (empty at one analyze, a million rows a minute
-- later), and with "few rows" estimated the planner collects every pending
-- change of the language in a bitmap and sorts it, per batch. The ordered
-- index scan reads exactly the batch, whatever the statistics say.
CREATE FUNCTION outbox_batch(p_lang_key bigint, p_after bigint, p_max_seq bigint, p_limit integer)
RETURNS SETOF outbox
LANGUAGE sql STABLE
SET enable_bitmapscan = off
SET enable_sort = off
AS $$
  SELECT *
  FROM outbox o
  WHERE o.lang_key = p_lang_key AND o.seq > p_after AND o.seq <= p_max_seq AND o.failed_at IS NULL
  ORDER BY o.seq
  LIMIT p_limit
$$;
