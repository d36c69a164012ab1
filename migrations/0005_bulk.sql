-- supersedes: 0004_bulk.sql sha256:656ec42c3bfe6f26b4b71fbefb352417d0455b95d0d54850ef56e54c454aa505
-- (renumbered: two migrations shared the number 0003)

-- Bulk catalogue sync: an uploaded NDJSON file is stored line by line in the
-- same transaction that creates its job, then applied by the worker in line
-- order, `next_line` advancing in the same transaction as each batch's writes.

CREATE TABLE bulk_jobs (
  id          uuid PRIMARY KEY,
  account_id  bigint NOT NULL REFERENCES accounts (id),
  lang_key    bigint NOT NULL REFERENCES languages (lang_key),
  language_id text NOT NULL,
  client_id   text NOT NULL,
  request_id  text,
  status      text NOT NULL CHECK (status IN ('queued', 'running', 'completed', 'failed')),
  lines       bigint NOT NULL DEFAULT 0,
  next_line   bigint NOT NULL DEFAULT 0,
  saved       bigint NOT NULL DEFAULT 0,
  failed      bigint NOT NULL DEFAULT 0,
  error       text,
  created_at  timestamptz NOT NULL DEFAULT now(),
  started_at  timestamptz,
  finished_at timestamptz
);

CREATE INDEX bulk_jobs_unfinished ON bulk_jobs (created_at) WHERE status IN ('queued', 'running');

CREATE TABLE bulk_lines (
  job_id  uuid NOT NULL REFERENCES bulk_jobs (id) ON DELETE CASCADE,
  line_no bigint NOT NULL,
  line    text NOT NULL,
  PRIMARY KEY (job_id, line_no)
);

CREATE TABLE bulk_errors (
  job_id  uuid NOT NULL REFERENCES bulk_jobs (id) ON DELETE CASCADE,
  line_no bigint NOT NULL,
  error   jsonb NOT NULL,
  PRIMARY KEY (job_id, line_no)
);
