-- How far each language's applier has got: every change of the language
-- numbered at or below through_seq is applied, or set aside. Pending changes
-- are all above it (a requeued set-aside change lowers it first), so a look
-- for the oldest pending change starts here, past the index entries of the
-- changes already applied and deleted: until vacuum removes them, reading
-- from the start of the language walked them all (12 ms a look during a bulk
-- file, once per batch of it and per status read).
CREATE TABLE outbox_applied (
  lang_key   bigint PRIMARY KEY,
  through_seq bigint NOT NULL
);
