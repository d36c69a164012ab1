-- The write half of the sync protocol for one record, in one round trip: the
-- language's shared lock, a write number, the upsert of the record's own
-- fields (the API view) and its outbox row. As a function it runs in the
-- caller's transaction (or the call's own) with its plans cached per connection.
--
-- Order matters and is kept: the language's shared lock is taken before a
-- write number (the applier's horizon relies on it), and each statement of a
-- plpgsql function in READ COMMITTED takes a fresh snapshot, so a language
-- deleted while we waited for the lock is seen as gone.
--
-- status: 'written' (the row), 'language-gone' (no row). An update that lost a
-- race to a higher-numbered write of the same record is retried with a new
-- number, as before.
CREATE OR REPLACE FUNCTION write_record(
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
  created_given boolean := p_created_at IS NOT NULL;
BEGIN
  PERFORM sync_lock_language_shared(p_lang_key);
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
        -- include: parts/record_merge.sql
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

-- Single writes that arrived together (sync/prepared-write.ts), in one
-- statement and one transaction: each is write_record, in the order given,
-- and answers with its position in `p_writes` (a JSON array of objects with
-- write_record's arguments under the keys below). They commit together,
-- so a write is acknowledged only with the others; a refusal of one refuses
-- all, and the caller then sends each alone.
CREATE OR REPLACE FUNCTION write_record_many(p_writes jsonb)
RETURNS TABLE (ord integer, status text, id text, data jsonb, created_at timestamptz, updated_at timestamptz, seq bigint)
LANGUAGE plpgsql AS $$
DECLARE
  w record;
  i integer := 0;
BEGIN
  FOR w IN
    SELECT * FROM jsonb_to_recordset(p_writes) AS x(
      lang_key bigint, kind text, record_id text, fields jsonb, created_at timestamptz, updated_at timestamptz,
      account_id bigint, language_id text, payload jsonb, actor text, request_id text
    )
  LOOP
    i := i + 1;
    RETURN QUERY
      SELECT i, r.status, r.id, r.data, r.created_at, r.updated_at, r.seq
      FROM write_record(
        w.lang_key, w.kind, w.record_id, w.fields, w.created_at, w.updated_at,
        w.account_id, w.language_id, w.payload, w.actor, w.request_id
      ) AS r;
  END LOOP;
END
$$;
