-- A bulk file is stored as it arrives, a batch of lines per COPY, each on a
-- pooled connection taken only for that batch: an upload that stalls holds
-- no Postgres connection. Until its last batch is stored the job is
-- `receiving`, which no read shows and no worker runs. An upload that breaks
-- is deleted by the API at once; one whose API process died is deleted by a
-- worker's sweeper once its lease (`receiving_until`, renewed while the
-- upload is alive) has run out.
ALTER TABLE bulk_jobs DROP CONSTRAINT bulk_jobs_status_check;
ALTER TABLE bulk_jobs
  ADD CONSTRAINT bulk_jobs_status_check CHECK (status IN ('receiving', 'queued', 'running', 'completed', 'failed'));
ALTER TABLE bulk_jobs ADD COLUMN receiving_until timestamptz;
CREATE INDEX bulk_jobs_receiving ON bulk_jobs (receiving_until) WHERE status = 'receiving';
