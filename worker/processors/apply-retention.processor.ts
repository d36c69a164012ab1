import { removeOldBulkLines } from '../../bulk/bulk-retention.repository.js';
import { maintainAuditBlocks } from '../../sync/audit-blocks.js';
import { removeDeliveredDeliveries } from '../../webhooks/delivery-retention.repository.js';
import type { Processor } from './processor.js';

/** How long retention's DDL waits for a lock on the audit log before leaving the step to the next run. */
const LOCK_TIMEOUT_MS = 2_000;

/**
 * Retention (docs/decisions.md, "Retention"): opens the audit log's next
 * block when due and removes blocks past AUDIT_RETENTION_DAYS whole; removes
 * old finished bulk jobs' stored lines and errors, and old delivered
 * deliveries, in batches. Takes no language's applier lock; every step can
 * run again after a crash, so the job is safe to repeat.
 */
export const applyRetentionProcessor: Processor<'apply-retention'> = async (_job, { db, retention, logger }) => {
  const blocks = await maintainAuditBlocks(db, { retentionDays: retention.auditDays, lockTimeoutMs: LOCK_TIMEOUT_MS });
  retention.metrics.removed.inc({ kind: 'audit_blocks' }, blocks.dropped.length);
  const bulk = await removeOldBulkLines(db, retention.bulkDays);
  retention.metrics.removed.inc({ kind: 'bulk_lines' }, bulk.lines);
  retention.metrics.removed.inc({ kind: 'bulk_errors' }, bulk.errors);
  const deliveries = await removeDeliveredDeliveries(db, retention.deliveryDays);
  retention.metrics.removed.inc({ kind: 'webhook_deliveries' }, deliveries);
  const result = {
    opened_block: blocks.opened,
    dropped_blocks: blocks.dropped,
    bulk_lines: bulk.lines,
    bulk_errors: bulk.errors,
    deliveries,
  };
  if (blocks.opened !== null || blocks.dropped.length > 0 || bulk.lines + bulk.errors + deliveries > 0)
    logger.info(result, 'retention applied');
  return result;
};
