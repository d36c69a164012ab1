-- The applier's next changes, in order. The outbox is a queue: its statistics
-- are stale most of the time (empty at one analyze, a million rows a minute
-- later), and with "few rows" estimated the planner collects every pending
-- change of the language in a bitmap and sorts it, per batch. The ordered
-- index scan reads exactly the batch, whatever the statistics say.
--
-- A batch also stops once the payloads before a change hold `p_max_bytes`
-- (as stored; always at least one change), so that a batch of changes with
-- 1 MiB id lists each cannot fill the worker's memory.
DROP FUNCTION IF EXISTS outbox_batch(bigint, bigint, bigint, integer);

CREATE OR REPLACE FUNCTION outbox_batch(p_lang_key bigint, p_after bigint, p_max_seq bigint, p_limit integer, p_max_bytes bigint)
RETURNS SETOF outbox
LANGUAGE sql STABLE
SET enable_bitmapscan = off
SET enable_sort = off
AS $$
  SELECT o.*
  FROM (
    SELECT n.seq, sum(pg_column_size(n.payload)) OVER (ORDER BY n.seq) - pg_column_size(n.payload) AS bytes_before
    FROM outbox n
    WHERE n.lang_key = p_lang_key AND n.seq > p_after AND n.seq <= p_max_seq AND n.failed_at IS NULL
    ORDER BY n.seq
    LIMIT p_limit
  ) b
  JOIN outbox o ON o.seq = b.seq
  WHERE b.bytes_before < p_max_bytes
  ORDER BY o.seq
$$;
