-- Whether a transaction that has just numbered a run of changes up to
-- p_through_seq, without outbox rows, is the language's next to apply
-- (write_records with p_in_turn, for sync/in-turn.applier.ts): no other
-- transaction is writing the language, and no change of it numbered up to
-- p_through_seq is pending. The caller holds the language's shared lock and
-- its applier lock.
--
-- The order of the two looks is what makes it safe (docs/consistency.md,
-- "Bulk runs applied in turn"); each statement of a volatile function sees
-- what had committed when it started. A writer of the language not seen
-- holding its lock by the first look has either committed before it (then the
-- second look sees its outbox row, if it is numbered below) or takes its
-- number after it, above every number of the run.
CREATE OR REPLACE FUNCTION sync_in_turn(p_lang_key bigint, p_through_seq bigint) RETURNS boolean
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  IF EXISTS (
    SELECT 1
    FROM pg_locks l
    WHERE l.locktype = 'advisory'
      AND l.database = (SELECT d.oid FROM pg_database d WHERE d.datname = current_database())
      AND l.classid = sync_lock_class('language')::oid
      AND l.objid = sync_lock_key(p_lang_key)::oid
      AND l.objsubid = 2
      AND l.granted
      AND l.pid IS DISTINCT FROM pg_backend_pid()
  ) THEN
    RETURN false;
  END IF;
  RETURN NOT EXISTS (
    SELECT 1
    FROM outbox o
    WHERE o.lang_key = p_lang_key
      AND o.seq > coalesce((SELECT p.through_seq FROM outbox_applied p WHERE p.lang_key = p_lang_key), 0)
      AND o.seq <= p_through_seq
      AND o.failed_at IS NULL
  );
END
$$;
