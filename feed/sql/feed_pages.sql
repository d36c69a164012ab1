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
-- The plain `seq` bounds beside them only tell Postgres which partitions the
-- range can touch.

-- The audit log is partitioned by blocks of seq (migrations 0024-0026): the
-- retained blocks as spans of (after, through], oldest first, each the part of
-- one block inside the range asked. A block's lower end is the one above the
-- block before it (the first retained one reaches down to 0), so each span
-- names exactly one partition.
CREATE OR REPLACE FUNCTION audit_spans(p_after bigint, p_through bigint)
RETURNS TABLE (span_after bigint, span_through bigint)
LANGUAGE sql STABLE
AS $$
  SELECT greatest(p_after, b.low - 1), least(p_through, b.high - 1)
  FROM (
    SELECT coalesce((lag(k) OVER (ORDER BY k) + 1)::bigint * 68719476736, 0) AS low, (k + 1)::bigint * 68719476736 AS high
    FROM audit_partitions
  ) b
  WHERE b.high - 1 > p_after AND b.low <= p_through
  ORDER BY b.low
$$;

-- The language's entries in (p_after, p_through], oldest first, at most
-- p_limit, of p_kinds only when given. One statement per block, in order,
-- until the limit is reached: each names its block's seq range beside the row
-- comparisons, and is planned with its values (force_custom_plan), so
-- Postgres reads that block's partition only; a page within one block
-- touches no other.
CREATE OR REPLACE FUNCTION feed_audit_page(
  p_language_id text, p_lang_key bigint, p_after bigint, p_through bigint, p_limit int, p_kinds text[]
) RETURNS SETOF audit_log
LANGUAGE plpgsql STABLE
SET enable_bitmapscan = off
SET plan_cache_mode = force_custom_plan
AS $$
DECLARE
  v_after bigint;
  v_through bigint;
  v_left int := p_limit;
  v_found int;
BEGIN
  FOR v_after, v_through IN SELECT span_after, span_through FROM audit_spans(p_after, p_through) LOOP
    RETURN QUERY
      SELECT * FROM audit_log
      WHERE (language_id, seq) > (p_language_id, v_after) AND (language_id, seq) <= (p_language_id, v_through)
        AND seq > v_after AND seq <= v_through
        AND lang_key = p_lang_key
        AND (p_kinds IS NULL OR kind = ANY(p_kinds))
      ORDER BY language_id, seq
      LIMIT v_left;
    GET DIAGNOSTICS v_found = ROW_COUNT;
    v_left := v_left - v_found;
    EXIT WHEN v_left <= 0;
  END LOOP;
END
$$;

-- The seq of the language's last entry in (p_after, p_through], of any kind,
-- or null: how far a read filtered by kind has examined. Blocks newest first.
CREATE OR REPLACE FUNCTION feed_last_seq(p_language_id text, p_lang_key bigint, p_after bigint, p_through bigint) RETURNS bigint
LANGUAGE plpgsql STABLE
SET enable_bitmapscan = off
SET plan_cache_mode = force_custom_plan
AS $$
DECLARE
  v_after bigint;
  v_through bigint;
  v_seq bigint;
BEGIN
  FOR v_after, v_through IN SELECT span_after, span_through FROM audit_spans(p_after, p_through) ORDER BY span_after DESC LOOP
    SELECT seq INTO v_seq FROM audit_log
    WHERE (language_id, seq) > (p_language_id, v_after) AND (language_id, seq) <= (p_language_id, v_through)
      AND seq > v_after AND seq <= v_through
      AND lang_key = p_lang_key
    ORDER BY language_id DESC, seq DESC
    LIMIT 1;
    IF v_seq IS NOT NULL THEN RETURN v_seq; END IF;
  END LOOP;
  RETURN NULL;
END
$$;
