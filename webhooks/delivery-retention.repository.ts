import { type CommonQueryMethods, sql } from 'slonik';

/** Rows one statement removes at most. */
const BATCH = 10_000;

/**
 * Removes deliveries delivered more than `retentionDays` ago, in batches
 * of primary keys found through the delivered-deliveries index. Deliveries
 * not yet delivered stay whatever their age: they are still to be sent.
 * A bulk job's end is announced only within the same days
 * (bulk-finished.announcer.ts), so removing its delivery does not announce
 * it again.
 */
export async function removeDeliveredDeliveries(db: CommonQueryMethods, retentionDays: number): Promise<number> {
  let removed = 0;
  for (;;) {
    const result = await db.query(sql.unsafe`
      DELETE FROM webhook_deliveries WHERE id IN (
        SELECT id FROM webhook_deliveries
        WHERE status = 'delivered' AND delivered_at < now() - make_interval(days => ${retentionDays})
        ORDER BY delivered_at
        LIMIT ${BATCH}
      )
    `);
    removed += result.rowCount;
    if (result.rowCount < BATCH) return removed;
  }
}
