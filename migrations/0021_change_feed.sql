-- Where the retained audit history starts. Retention removes old audit
-- entries in whole time partitions; the seq it removed through is kept here,
-- so a change feed cursor below it is known to have lost entries and is
-- answered 410 cursor_expired rather than silently skipping them
-- (interface §22.6, §25). One row: audit seq is one sequence for every language.
CREATE TABLE audit_retention (
  only_row        boolean PRIMARY KEY DEFAULT true CHECK (only_row),
  removed_through bigint NOT NULL DEFAULT 0
);
INSERT INTO audit_retention DEFAULT VALUES;

-- A feed entry names the bulk job its change came from: the job whose
-- upload's request id the entry carries (feed/feed.repository.ts), looked up
-- for each distinct request id of a page.
CREATE INDEX bulk_jobs_request ON bulk_jobs (request_id) WHERE request_id IS NOT NULL;
