-- The audit log becomes partitioned by blocks of seq (0026), each block opened
-- at a point in time and removed whole once retention has passed it
-- (docs/decisions.md, "Audit retention"). Block k holds seq in
-- [k * 2^36, (k + 1) * 2^36); audit_partitions says when each was opened.
CREATE TABLE audit_partitions (
  k         integer PRIMARY KEY,
  opened_at timestamptz NOT NULL
);

-- The existing table becomes one block. A CHECK that implies its partition
-- bound lets ATTACH (0026) skip its scan; NOT VALID here takes the lock for a
-- moment only, and the scan that proves it (0025) lets writes go on. The block
-- is the one at least half a block above the sequence, so writes between
-- these migrations cannot leave it.
DO $$
DECLARE
  v_last bigint := (SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM audit_log_seq_seq);
  v_k integer := ((v_last + 34359738368) / 68719476736)::integer;
BEGIN
  INSERT INTO audit_partitions (k, opened_at) VALUES (v_k, now());
  EXECUTE format(
    'ALTER TABLE audit_log ADD CONSTRAINT audit_log_block CHECK (seq >= 0 AND seq < %s) NOT VALID',
    (v_k + 1)::bigint * 68719476736
  );
END $$;

-- Retention's batches find what they remove without reading what they keep.
CREATE INDEX webhook_deliveries_delivered ON webhook_deliveries (delivered_at) WHERE status = 'delivered';
ALTER TABLE bulk_jobs ADD COLUMN lines_removed_at timestamptz;
CREATE INDEX bulk_jobs_lines_kept ON bulk_jobs (finished_at)
  WHERE lines_removed_at IS NULL AND status IN ('completed', 'failed');
