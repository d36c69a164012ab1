-- The change feed's reads of a language's audit entries (feed/feed.repository.ts
-- builds each entry's JSON around these rows; interface §22).
--
-- Both read along audit_log_language (language_id, seq) in order and stop at
-- the limit, whatever the statistics say. Without statistics for a language
-- (a new one, or a log not analysed since a bulk file filled it) the planner
-- expects a handful of rows and otherwise prefers either a bitmap scan that
-- reads every entry of the range and sorts them, or the primary key's order
-- through every language's entries: for a language a bulk file just gave
-- 120,000 entries, 85 ms a page instead of 1. So bitmap scans are off inside
-- them, and the range is written only as row comparisons on (language_id,
-- seq), ordered by both: that index takes them as the scan's first and last
-- key and gives the order, the primary key can do neither. (They fix the
-- language; a separate `language_id =` would become the scan's start
-- instead, and every page would walk the language's entries from its first.)
-- Each statement reads one block's partition by its name (below): bounds on
-- seq beside the row comparisons would let Postgres prune the other
-- partitions, but they also make the primary key look as good a start for a
-- language without statistics, and it chose that and a sort. A statement run
-- by EXECUTE is planned with its values, and for a language the statistics do
-- not know the planner then sometimes read the whole block and sorted it; so
-- sequential scans and sorts are off inside them too: the language's index is
-- the plan left.

-- The audit log is partitioned by blocks of seq (migrations 0024-0026,
-- sync/audit-blocks.ts): the retained blocks as spans of (after, through],
-- oldest first, each the part of one block inside the range asked. A block's
-- lower end is the one above the block before it (the first retained one
-- reaches down to 0), so each span lies in exactly one partition, audit_log_p<k>.
CREATE OR REPLACE FUNCTION audit_spans(p_after bigint, p_through bigint)
RETURNS TABLE (k integer, span_after bigint, span_through bigint)
LANGUAGE sql STABLE
AS $$
  SELECT b.k, greatest(p_after, b.low - 1), least(p_through, b.high - 1)
  FROM (
    SELECT a.k, coalesce((lag(a.k) OVER (ORDER BY a.k) + 1)::bigint * 68719476736, 0) AS low, (a.k + 1)::bigint * 68719476736 AS high
    FROM audit_partitions a
  ) b
  WHERE b.high - 1 > p_after AND b.low <= p_through
  ORDER BY b.k
$$;

-- The language's entries in (p_after, p_through], oldest first, at most
-- p_limit, of p_kinds only when given: one statement per block, in order,
-- until the limit is reached, each reading that block's partition only, so a
-- page within one block touches no other. A block removed by retention while
-- this runs is passed by: its entries are gone from the history.
CREATE OR REPLACE FUNCTION feed_audit_page(
  p_language_id text, p_lang_key bigint, p_after bigint, p_through bigint, p_limit int, p_kinds text[]
) RETURNS SETOF audit_log
LANGUAGE plpgsql STABLE
-- include: parts/index_only.sql
AS $$
DECLARE
  v_k integer;
  v_after bigint;
  v_through bigint;
  v_left int := p_limit;
  v_found int;
BEGIN
  FOR v_k, v_after, v_through IN SELECT s.k, s.span_after, s.span_through FROM audit_spans(p_after, p_through) s LOOP
    BEGIN
      RETURN QUERY EXECUTE format(
        'SELECT * FROM %I
         WHERE (language_id, seq) > ($1, $2) AND (language_id, seq) <= ($1, $3)
           AND lang_key = $4
           AND ($5::text[] IS NULL OR kind = ANY($5))
         ORDER BY language_id, seq
         LIMIT $6', 'audit_log_p' || v_k)
        USING p_language_id, v_after, v_through, p_lang_key, p_kinds, v_left;
      GET DIAGNOSTICS v_found = ROW_COUNT;
    EXCEPTION WHEN undefined_table THEN
      v_found := 0;
    END;
    v_left := v_left - v_found;
    EXIT WHEN v_left <= 0;
  END LOOP;
END
$$;

-- The seq of the language's last entry in (p_after, p_through], of any kind,
-- or null: how far a read filtered by kind has examined. Blocks newest first.
CREATE OR REPLACE FUNCTION feed_last_seq(p_language_id text, p_lang_key bigint, p_after bigint, p_through bigint) RETURNS bigint
LANGUAGE plpgsql STABLE
-- include: parts/index_only.sql
AS $$
DECLARE
  v_k integer;
  v_after bigint;
  v_through bigint;
  v_seq bigint;
BEGIN
  FOR v_k, v_after, v_through IN SELECT s.k, s.span_after, s.span_through FROM audit_spans(p_after, p_through) s ORDER BY s.k DESC LOOP
    BEGIN
      EXECUTE format(
        'SELECT seq FROM %I
         WHERE (language_id, seq) > ($1, $2) AND (language_id, seq) <= ($1, $3)
           AND lang_key = $4
         ORDER BY language_id DESC, seq DESC
         LIMIT 1', 'audit_log_p' || v_k)
        INTO v_seq
        USING p_language_id, v_after, v_through, p_lang_key;
    EXCEPTION WHEN undefined_table THEN
      v_seq := NULL;
    END;
    IF v_seq IS NOT NULL THEN RETURN v_seq; END IF;
  END LOOP;
  RETURN NULL;
END
$$;
