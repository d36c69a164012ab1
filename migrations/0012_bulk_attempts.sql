-- Failed attempts at a bulk job's next batch that no line's content explains
-- (the database being up): after a few the job ends `failed` with a reason
-- instead of being retried for ever. A batch that commits resets it.
ALTER TABLE bulk_jobs ADD COLUMN attempts integer NOT NULL DEFAULT 0;
