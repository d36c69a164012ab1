-- The applier's next changes, in order. The outbox is a queue: its statistics
-- are stale most of the time (empty at one analyze, a million rows a minute
-- later), and with "few rows" estimated the planner collects every pending
-- change of the language in a bitmap and sorts it, per batch. The ordered
-- index scan reads exactly the batch, whatever the statistics say.
CREATE OR REPLACE FUNCTION outbox_batch(p_lang_key bigint, p_after bigint, p_max_seq bigint, p_limit integer)
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
