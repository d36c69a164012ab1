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

-- The language's entries in (p_after, p_through], oldest first, at most
-- p_limit, of p_kinds only when given.
CREATE OR REPLACE FUNCTION feed_audit_page(
  p_language_id text, p_lang_key bigint, p_after bigint, p_through bigint, p_limit int, p_kinds text[]
) RETURNS SETOF audit_log
LANGUAGE sql STABLE
SET enable_bitmapscan = off
AS $$
  SELECT * FROM audit_log
  WHERE (language_id, seq) > (p_language_id, p_after) AND (language_id, seq) <= (p_language_id, p_through)
    AND lang_key = p_lang_key
    AND (p_kinds IS NULL OR kind = ANY(p_kinds))
  ORDER BY language_id, seq
  LIMIT p_limit
$$;

-- The seq of the language's last entry in (p_after, p_through], of any kind,
-- or null: how far a read filtered by kind has examined.
CREATE OR REPLACE FUNCTION feed_last_seq(p_language_id text, p_lang_key bigint, p_after bigint, p_through bigint) RETURNS bigint
LANGUAGE sql STABLE
SET enable_bitmapscan = off
AS $$
  SELECT seq FROM audit_log
  WHERE (language_id, seq) > (p_language_id, p_after) AND (language_id, seq) <= (p_language_id, p_through)
    AND lang_key = p_lang_key
  ORDER BY language_id DESC, seq DESC
  LIMIT 1
$$;
