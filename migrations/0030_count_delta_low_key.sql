-- Each live-record counter row also remembers the earliest list position its
-- change touched (the least created_at of the records it counts), so that a
-- deep page's anchor stays usable while records are only added after it: a
-- list that grows at its end keeps every earlier item where it was
-- (reads/list-anchors.ts). Null means "anywhere" (rows written before this
-- column). `folded` marks the rows a fold wrote (reads/sql/record_counts.sql).
ALTER TABLE record_count_deltas ADD COLUMN low_created_at timestamptz;
ALTER TABLE record_count_deltas ADD COLUMN folded boolean NOT NULL DEFAULT false;
