-- A bulk file is read as the bodies of the interface it was uploaded to:
-- v1 write bodies (POST /api/v1/.../bulk) or v2 PUT bodies and requests
-- (POST /api/v2/.../bulk). Jobs uploaded before this are v1 files.
ALTER TABLE bulk_jobs
  ADD COLUMN api_version text NOT NULL DEFAULT 'v1' CHECK (api_version IN ('v1', 'v2'));
