-- write_record for a run of bulk lines (distinct records, in line order). The
-- merge of each write is write_record's, included from parts/record_merge.sql
-- when the file is applied: write_record calling this with one-element arrays
-- would make every single write markedly dearer in Postgres.
--
-- The numbers are taken in line order, so the run is applied as if its lines
-- were sent one by one. When a concurrent single write of one of the records got a
-- higher number first, nothing is returned for that row and the status is
-- 'overtaken': the caller rolls back and applies the run again.
--
-- Without p_queue no outbox rows are written: the caller applies the run's
-- effects in its own transaction when the run is in turn, or queues them
-- (sync/in-turn.applier.ts). It gets the numbers, in the order of the writes,
-- and the time the changes were accepted.
--
-- With p_in_turn (the caller holds the language's applier lock) the function
-- looks, right after numbering the run, whether the run is the language's
-- next to apply (sync_in_turn, in_turn.sql; the look only needs the numbers
-- taken) and says so. In turn and given p_refs, it also writes the serial
-- view of each record it creates (w_live, and w_ref from p_refs: the
-- reference each write sent, or NULL), which the applier would otherwise
-- write in a second version of the row a moment later, and returns the
-- numbers of those writes (`fresh`): the applier must treat them as records
-- that did not exist, and the caller must undo the whole write (its
-- savepoint) if it does not apply the run after all. A row inserted by this
-- statement is one whose new version has no xmax (ON CONFLICT DO UPDATE
-- locks the row it updates first, and the lock stays on the new version).
DROP FUNCTION IF EXISTS write_records(bigint, text[], text[], jsonb[], timestamptz[], timestamptz[], jsonb[], boolean, bigint, text, text, text);
DROP FUNCTION IF EXISTS write_records(bigint, text[], text[], jsonb[], timestamptz[], timestamptz[], jsonb[], boolean, bigint, text, text, text, boolean);

CREATE OR REPLACE FUNCTION write_records(
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
  p_request_id    text,
  p_queue         boolean,
  p_in_turn       boolean,
  p_refs          text[]
)
RETURNS TABLE (status text, seqs bigint[], accepted_at timestamptz, in_turn boolean, fresh bigint[])
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  n    integer := cardinality(p_ids);
  numbers bigint[];
  done integer;
  looked boolean := false;
  preset boolean;
  created bigint[];
  created_given boolean := p_created_given;
BEGIN
  PERFORM sync_lock_language_shared(p_lang_key);
  IF NOT EXISTS (SELECT 1 FROM languages l WHERE l.lang_key = p_lang_key AND l.deleted_at IS NULL) THEN
    RETURN QUERY SELECT 'language-gone'::text, NULL::bigint[], NULL::timestamptz, NULL::boolean, NULL::bigint[];
    RETURN;
  END IF;
  numbers := ARRAY(SELECT nextval('write_seq') FROM generate_series(1, n) ORDER BY 1);
  IF p_in_turn THEN
    looked := sync_in_turn(p_lang_key, numbers[n]);
  END IF;
  preset := looked AND p_refs IS NOT NULL;
  WITH input AS (
    SELECT t.*, date_trunc('milliseconds', clock_timestamp()) AS now
    FROM unnest(p_kinds, p_ids, p_fields, p_created_at, p_updated_at, p_payloads, numbers, p_refs)
      AS t(kind, id, fields, created_at, updated_at, payload, seq, ref)
  ),
  w AS (
    INSERT INTO records AS r (lang_key, kind, id, data, stamps, live, created_seq, write_seq, created_at, updated_at, w_live, w_ref)
    SELECT
      p_lang_key, i.kind, i.id, i.fields,
      coalesce((SELECT jsonb_object_agg(name, i.seq) FROM jsonb_object_keys(i.fields) AS name), '{}'::jsonb),
      true, i.seq, i.seq, coalesce(i.created_at, i.now), coalesce(i.updated_at, i.now),
      preset, CASE WHEN preset THEN i.ref END
    FROM input i
    ORDER BY i.kind, i.id
        -- include: parts/record_merge.sql
    RETURNING r.kind, r.id, r.write_seq AS seq, r.xmax = 0 AS created
  ),
  o AS (
    INSERT INTO outbox (seq, lang_key, account_id, language_id, kind, action, record_id, payload, actor, request_id)
    SELECT w.seq, p_lang_key, p_account_id, p_language_id, w.kind, 'upsert', w.id, i.payload, p_actor, p_request_id
    FROM w
    JOIN input i ON i.seq = w.seq
    WHERE p_queue
  )
  SELECT count(*), array_agg(w.seq) FILTER (WHERE w.created AND preset) INTO done, created FROM w;
  IF done < n THEN
    RETURN QUERY SELECT 'overtaken'::text, NULL::bigint[], NULL::timestamptz, NULL::boolean, NULL::bigint[];
  ELSE
    RETURN QUERY SELECT 'written'::text, numbers, clock_timestamp(), looked, coalesce(created, '{}');
  END IF;
END
$$;
