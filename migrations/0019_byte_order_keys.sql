-- Record keys compare byte by byte (COLLATE "C"), whatever the database's
-- collation.
--
-- Under a libc collation other than C (C.UTF-8 here, en_US.UTF-8 on many
-- servers), every comparison of two keys calls strcoll: each index descent
-- of records and links (a v2 page probes the links of each of its 250 items;
-- 39% of a page's Postgres CPU was those probes), each insert into their
-- indexes, and each sort. Byte order is memcmp.
--
-- Under C.UTF-8 the order is the same: glibc's C.UTF-8 sorts by code point,
-- and UTF-8 bytes sort in code point order. Under a language's collation
-- (en_US.UTF-8), lists and cursors now follow byte order ('B' before 'a')
-- instead of dictionary order, the same on every server
-- (docs/decisions.md, "Hot paths"). It is also the order the set-based
-- applier puts a writer's links in, in JavaScript, to audit their removal as
-- the index lists them (catalogue/key-order.ts): under a dictionary collation
-- the two disagreed.
--
-- Only the collation changes: the tables are not rewritten, their indexes
-- on these columns are rebuilt.
ALTER TABLE records
  ALTER COLUMN kind TYPE text COLLATE "C",
  ALTER COLUMN id TYPE text COLLATE "C",
  ALTER COLUMN w_ref TYPE text COLLATE "C";

ALTER TABLE links
  ALTER COLUMN rel TYPE text COLLATE "C",
  ALTER COLUMN a TYPE text COLLATE "C",
  ALTER COLUMN b TYPE text COLLATE "C";

ALTER TABLE audit_log
  ALTER COLUMN kind TYPE text COLLATE "C",
  ALTER COLUMN record_id TYPE text COLLATE "C",
  ALTER COLUMN language_id TYPE text COLLATE "C";
