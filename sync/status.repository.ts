import { type CommonQueryMethods, sql } from 'slonik';
import { z } from 'zod';

export async function outboxCounts(db: CommonQueryMethods) {
  return db.one(sql.type(z.object({ pending: z.number(), failed: z.number() }))`
    SELECT
      count(*) FILTER (WHERE failed_at IS NULL)::int8 AS pending,
      count(*) FILTER (WHERE failed_at IS NOT NULL)::int8 AS failed
    FROM outbox
  `);
}
