-- The plan settings of every function that reads a block's partition along
-- audit_log_language: the language's index is the only plan left (why: the
-- head of feed_pages.sql).
SET enable_bitmapscan = off
SET enable_seqscan = off
SET enable_sort = off
