-- Proves 0024's bound for the rows already there: a scan under SHARE UPDATE
-- EXCLUSIVE, which lets writes and reads go on. In a transaction of its own,
-- so 0024's brief exclusive lock is not held through it.
ALTER TABLE audit_log VALIDATE CONSTRAINT audit_log_block;
