import type { Database } from '../platform/db.js';
import {
  completeErasure,
  dependentsOf,
  erasedLanguages,
  revokeDeliveryLeases,
  scrubAuditBatch,
  scrubBulk,
  scrubDeliveries,
  scrubSetAside,
} from './erasure-scrub.repository.js';

/** Audit entries scrubbed per statement: short transactions, whatever the person's history. */
const AUDIT_BATCH = 1_000;

/**
 * Scrubs every stored copy of an erased person's data (interface §24) in
 * each language the erasure reached, then completes it. Idempotent: a run
 * after a crash does what is left. The audit log comes first; then, in one
 * transaction, the delivery jobs of the language lose their hold and the
 * stored deliveries are scrubbed: a delivery made of entries read before
 * their scrub is either stored already (and scrubbed here) or refused.
 * @returns how many rows it changed.
 */
export async function scrubErasure(db: Database, erasureId: string): Promise<number> {
  let changed = 0;
  for (const erased of await erasedLanguages(db, erasureId)) {
    const dependents = await dependentsOf(db, erased);
    for (;;) {
      const count = await scrubAuditBatch(db, erased, dependents, AUDIT_BATCH);
      changed += count;
      if (count < AUDIT_BATCH) break;
    }
    changed += await scrubBulk(db, erased);
    changed += await db.transaction(async (tx) => {
      await revokeDeliveryLeases(tx, erased);
      return scrubDeliveries(tx, erased, dependents);
    });
    changed += await scrubSetAside(db, erased, dependents);
  }
  await completeErasure(db, erasureId);
  return changed;
}
