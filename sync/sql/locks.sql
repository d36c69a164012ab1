-- The advisory locks of the sync protocol (docs/consistency.md, "Safe horizon").
-- Every lock is transaction-scoped and keyed by (class, language key). This
-- file is the one place the class numbers are written down: SQL and
-- TypeScript (sync/locks.ts) call the functions below.
--
--   language  every writer of a language holds it shared from before it takes
--             a write number until it commits; a language delete takes it
--             exclusively; the applier takes it exclusively for a moment to
--             know that every number it has read is final.
--   applier   one applier per language: held for the whole of each batch
--             transaction, and of an operator's action on set-aside changes:
--             the only transactions that write audit entries (the audit
--             API's horizon relies on that).

CREATE OR REPLACE FUNCTION sync_lock_class(p_lock text) RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE p_lock WHEN 'language' THEN 1 WHEN 'applier' THEN 2 END
$$;

-- lang_key is a bigserial; advisory keys are int4, so keys wrap past 2^31
-- languages (two languages then share a lock: slower, never wrong).
CREATE OR REPLACE FUNCTION sync_lock_key(p_lang_key bigint) RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT (p_lang_key % 2147483648)::integer
$$;

CREATE OR REPLACE FUNCTION sync_lock_language_shared(p_lang_key bigint) RETURNS void
LANGUAGE sql AS $$
  SELECT pg_advisory_xact_lock_shared(sync_lock_class('language'), sync_lock_key(p_lang_key))
$$;

CREATE OR REPLACE FUNCTION sync_lock_language_exclusive(p_lang_key bigint) RETURNS void
LANGUAGE sql AS $$
  SELECT pg_advisory_xact_lock(sync_lock_class('language'), sync_lock_key(p_lang_key))
$$;

CREATE OR REPLACE FUNCTION sync_try_lock_applier(p_lang_key bigint) RETURNS boolean
LANGUAGE sql AS $$
  SELECT pg_try_advisory_xact_lock(sync_lock_class('applier'), sync_lock_key(p_lang_key))
$$;

-- Waits for the applier lock: an operator's action on set-aside changes writes
-- audit entries, which only transactions holding this lock may do.
CREATE OR REPLACE FUNCTION sync_lock_applier(p_lang_key bigint) RETURNS void
LANGUAGE sql AS $$
  SELECT pg_advisory_xact_lock(sync_lock_class('applier'), sync_lock_key(p_lang_key))
$$;

-- The transactions holding an applier lock now (virtual transaction ids), in
-- this database only: advisory locks are cluster-wide, and another database's
-- appliers (another deployment, another test) never write this audit log.
CREATE OR REPLACE FUNCTION sync_applier_lock_holders() RETURNS SETOF text
LANGUAGE sql STABLE AS $$
  SELECT virtualtransaction FROM pg_locks
  WHERE locktype = 'advisory' AND classid = sync_lock_class('applier') AND granted
    AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
$$;
