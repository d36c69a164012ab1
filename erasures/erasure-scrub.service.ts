import type { Database } from '../platform/db.js';
import {
  completeErasure,
  dependentsOf,
  erasedLanguages,
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
 * after a crash does what is left. The audit log comes first, so a webhook
 * delivery built from entries read before that is caught by the delivery
 * scrub that follows it.
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
    changed += await scrubDeliveries(db, erased, dependents);
    changed += await scrubSetAside(db, erased, dependents);
  }
  await completeErasure(db, erasureId);
  return changed;
}
