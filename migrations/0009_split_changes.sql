-- A change whose effects are too large for one applier transaction (an id list
-- of 100,000 categories, a category delete detaching 100,000 products) is
-- applied in slices, each its own transaction. `progress` says where the last
-- committed slice left it ({"phase": n, "offset": m}, see sync/change.applier.ts),
-- so a crash or another worker resumes it exactly; NULL for every other change.
ALTER TABLE outbox ADD COLUMN progress jsonb;

-- The children of a parent (w_ref) in id order, so a parent's delete and an
-- unsubscribe's fan-out page through them by key, reading exactly a slice.
DROP INDEX records_w_ref;
CREATE INDEX records_w_ref ON records (lang_key, kind, w_ref, id) WHERE w_ref IS NOT NULL;
