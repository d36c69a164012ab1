-- supersedes: 0003_v2_counts.sql sha256:ee5387442383d098fb213691e118504ccecd4fa34de8c9d8ad0c4576a297e412
-- (its functions and triggers now live in reads/sql/record_counts.sql)

-- v2 lists: live-record totals per (language, kind) without counting rows, and
-- indexes that fit the v2 listings' order (created_at, id).

-- The total of a (lang_key, kind) is sum(delta): see reads/sql/record_counts.sql.
CREATE TABLE record_count_deltas (
  lang_key bigint NOT NULL,
  kind     text NOT NULL,
  delta    bigint NOT NULL
);

CREATE INDEX record_count_deltas_key ON record_count_deltas (lang_key, kind);

-- Existing rows. (On a live database, writers must be held off until the
-- triggers of reads/sql/record_counts.sql exist: run migrations with the
-- service stopped, as `npm start` and the compose file do.)
INSERT INTO record_count_deltas (lang_key, kind, delta)
SELECT lang_key, kind, count(*) FROM records WHERE live GROUP BY lang_key, kind;

-- The list index again, now also carrying updated_at: pages and counts with
-- updated_after / updated_before filters stay index-only while walking the
-- list order (created_at, id).
DROP INDEX records_list;
CREATE INDEX records_list ON records (lang_key, kind, created_at, id) INCLUDE (updated_at) WHERE live;

-- Variants of a product in list order (GET .../products/{id}/variants).
CREATE INDEX records_variant_list ON records (lang_key, (data ->> 'product_id'), created_at, id)
  WHERE live AND kind = 'variant';

-- GET /api/v2/languages: an account's live languages in list order.
CREATE INDEX languages_list ON languages (account_id, created_at, id) WHERE deleted_at IS NULL;
