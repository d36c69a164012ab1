-- Set-aside changes (outbox rows with failed_at) are listed, retried and
-- discarded by operators; they are few among possibly millions of pending rows.
CREATE INDEX outbox_set_aside ON outbox (seq) WHERE failed_at IS NOT NULL;
