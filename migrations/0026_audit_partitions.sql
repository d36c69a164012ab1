-- audit_log becomes a table partitioned by RANGE (seq) whose one partition is
-- the existing table (docs/decisions.md, "Audit retention"). Nothing is
-- copied: the table is renamed and attached; its validated CHECK (0024, 0025)
-- lets ATTACH skip the scan, and the parent's indexes take over the table's
-- own instead of building new ones.
DO $$
DECLARE
  v_k integer := (SELECT max(k) FROM audit_partitions);
  v_name text := format('audit_log_p%s', v_k);
BEGIN
  EXECUTE format('ALTER TABLE audit_log RENAME TO %I', v_name);
  EXECUTE format('ALTER TABLE %I RENAME CONSTRAINT audit_log_pkey TO %I', v_name, format('audit_log_pkey_p%s', v_k));
  EXECUTE format('ALTER INDEX audit_log_language RENAME TO %I', format('audit_log_language_p%s', v_k));
  EXECUTE format('ALTER INDEX audit_log_record_id RENAME TO %I', format('audit_log_record_id_p%s', v_k));

  CREATE TABLE audit_log (
    seq         bigint NOT NULL DEFAULT nextval('audit_log_seq_seq'),
    at          timestamptz NOT NULL DEFAULT clock_timestamp(),
    account_id  bigint NOT NULL,
    lang_key    bigint NOT NULL,
    language_id text COLLATE "C" NOT NULL,
    kind        text COLLATE "C" NOT NULL,
    record_id   text COLLATE "C" NOT NULL,
    action      text NOT NULL,
    actor       text NOT NULL,
    request_id  text,
    write_seq   bigint NOT NULL,
    changes     jsonb NOT NULL DEFAULT '{}'
  ) PARTITION BY RANGE (seq);
  -- The sequence belongs to the parent, so dropping an old block never drops it.
  ALTER SEQUENCE audit_log_seq_seq OWNED BY audit_log.seq;
  EXECUTE format('ALTER TABLE %I ALTER COLUMN seq DROP DEFAULT', v_name);

  EXECUTE format('ALTER TABLE audit_log ATTACH PARTITION %I FOR VALUES FROM (0) TO (%s)', v_name, (v_k + 1)::bigint * 68719476736);
  ALTER TABLE audit_log ADD PRIMARY KEY (seq);
  CREATE INDEX audit_log_record_id ON audit_log (record_id, seq);
  CREATE INDEX audit_log_language ON audit_log (language_id, seq);
  EXECUTE format('ALTER TABLE %I DROP CONSTRAINT audit_log_block', v_name);
END $$;

-- Functions returning SETOF audit_log are bound to the old table's row type;
-- their repeatable file defines them again over the new one.
DROP FUNCTION IF EXISTS feed_audit_page(text, bigint, bigint, bigint, int, text[]);
DELETE FROM schema_repeatables WHERE name = 'feed/sql/feed_pages.sql';
