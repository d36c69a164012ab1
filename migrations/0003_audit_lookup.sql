-- /admin/api/audit filters by record_id alone (an admin following one id across
-- kinds and languages); the existing indexes lead with kind or language_id.
CREATE INDEX audit_log_record_id ON audit_log (record_id, seq);
