import { type CommonQueryMethods, sql } from 'slonik';
import { z } from 'zod';
import { appliedThroughOf } from './outbox.repository.js';

/*
 * What `sync-status` counts (interface §7 and §9), defined here only.
 *
 * `pending`: accepted changes whose effects are not applied yet (0 = drained):
 *   - outbox rows not applied and not set aside, and
 *   - the lines of queued or running bulk files not stored yet. A stored
 *     line's effects are an outbox row (or applied with it), so each line
 *     of an accepted file counts once until it is applied; a file still
 *     being received is not accepted yet, and a line refused as invalid
 *     has no effects to wait for.
 * `failed`: work that was really not done and will not be without someone
 * acting on it:
 *   - changes the applier set aside (outbox rows with failed_at), and
 *   - bulk files that ended `failed` in a language that still exists (a file
 *     whose language was deleted has nothing left to do).
 * A failed queue job is not counted: jobs only wake a worker up, the work
 * itself is in Postgres. A wake-up job that used up its attempts while
 * Postgres was away is run again by the sweeper once Postgres is back
 * (worker/sweeper.ts), and one refused for good (a malformed job) stays visible
 * in the queue dashboard.
 */

export async function outboxCounts(db: CommonQueryMethods) {
  return db.one(sql.type(z.object({ pending: z.number(), failed: z.number() }))`
    SELECT
      count(*) FILTER (WHERE failed_at IS NULL)::int8 AS pending,
      count(*) FILTER (WHERE failed_at IS NOT NULL)::int8 AS failed
    FROM outbox
  `);
}

export async function syncStatus(db: CommonQueryMethods): Promise<{ pending: number; failed: number }> {
  const outbox = await outboxCounts(db);
  const failedFiles = await db.oneFirst(sql.type(z.object({ failed: z.number() }))`
    SELECT count(*)::int8 AS failed
    FROM bulk_jobs b
    JOIN languages l ON l.lang_key = b.lang_key
    WHERE b.status = 'failed' AND l.deleted_at IS NULL
  `);
  const unstoredLines = await db.oneFirst(sql.type(z.object({ lines: z.number() }))`
    SELECT coalesce(sum(greatest(lines - saved - failed, 0)), 0)::int8 AS lines
    FROM bulk_jobs
    WHERE status IN ('queued', 'running')
  `);
  return { pending: outbox.pending + unstoredLines, failed: outbox.failed + failedFiles };
}

/**
 * How far behind a language's applier is: the span of write numbers from its
 * oldest change whose effects are not applied to its newest. That is their
 * count when one writer fills the language (a bulk file), and an upper bound
 * otherwise (other languages' changes numbered in between count too). Read
 * from the two ends of an index, the low end from the applier's position
 * (outbox_applied): counting them, or starting from the language's first
 * index entry, would walk the entries of every change applied since the
 * last vacuum, and a bulk file asks before every batch.
 */
export async function languageBacklog(db: CommonQueryMethods, langKey: number): Promise<number> {
  return db.oneFirst(sql.type(z.object({ backlog: z.number() }))`
    SELECT coalesce(max(o.seq) - min(o.seq) + 1, 0)::int8 AS backlog
    FROM outbox o
    WHERE o.lang_key = ${langKey} AND o.failed_at IS NULL
      AND o.seq > ${appliedThroughOf(langKey)}
  `);
}
