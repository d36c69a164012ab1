import { type CommonQueryMethods, sql } from 'slonik';

/**
 * Makes the caller's transaction one read-only snapshot, so that a list's
 * `total`, its page and the page's links agree. Must be its first statement.
 */
export async function beginReadSnapshot(tx: CommonQueryMethods): Promise<void> {
  await tx.query(sql.unsafe`SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY`);
}
