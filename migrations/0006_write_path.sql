-- supersedes: 0005_write_record.sql sha256:2f1e38ef0f41109653a83dfb854701cc1a45c585eb1d70c4a43fb2ee2a203f4d
-- (its functions now live in sync/sql/, re-applied whenever they change)

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
