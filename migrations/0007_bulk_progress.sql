-- Watchable bulk jobs: how many lines have their effects applied, and the list of an account's jobs.
--
-- After each batch the bulk worker records a mark: how many lines of the file
-- it has gone through (stored or refused) and a write number at or above every
-- change that batch queued. Once the language's oldest pending outbox change is
-- above a mark's number, every line up to the mark has its effects applied.
CREATE TABLE bulk_marks (
  job_id     uuid NOT NULL REFERENCES bulk_jobs (id) ON DELETE CASCADE,
  lines_done bigint NOT NULL,
  seq_bound  bigint NOT NULL,
  PRIMARY KEY (job_id, lines_done)
);

-- GET .../bulk lists a language's jobs newest first.
CREATE INDEX bulk_jobs_language ON bulk_jobs (lang_key, created_at DESC, id DESC);
