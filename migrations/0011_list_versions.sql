-- Each live-record counter row remembers the transaction that wrote it, so a
-- reader can tell whether a list changed since a snapshot it saw: deep pages
-- of the v2 lists start from cached anchors only while no counter row of the
-- list was written after the anchors' snapshot (reads/list-anchors.ts).
ALTER TABLE record_count_deltas ADD COLUMN xact xid8 NOT NULL DEFAULT pg_current_xact_id();
