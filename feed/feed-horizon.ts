import { setTimeout as sleep } from 'node:timers/promises';
import { type CommonQueryMethods, sql } from 'slonik';
import { z } from 'zod';
import { FeedHorizonBusyError } from './feed.errors.js';

/** How long a read waits for the language's open audit batch before answering 503. */
const HORIZON_TIMEOUT_MS = 5_000;

/**
 * The language's audit horizon: a seq at or below which none of its entries
 * can still appear (interface §22.3; docs/consistency.md, "The change feed").
 *
 * audit_log.seq is taken before commit, so a batch holding seq 41 can commit
 * after one holding 42; a reader past 42 would never see 41. A language's
 * audit entries are only written inside a transaction holding its applier
 * lock from its start (sync/locks.ts). So: read the sequence, then which
 * transactions hold this language's applier lock, and wait until those have
 * ended. Every entry of the language numbered at or below the value read
 * belongs to one of them or is committed already.
 *
 * Unlike /admin/api/audit, which waits for every language's batches, this
 * waits for the one language's batch: a bulk file running in another
 * language does not hold its feed back. Between looks, no connection is held.
 * @throws {FeedHorizonBusyError} when the language's batch stays open too long.
 */
export async function languageHorizon(db: CommonQueryMethods, langKey: number, timeoutMs = HORIZON_TIMEOUT_MS): Promise<number> {
  // One statement, the sequence read before the locks are: the lock list is a subquery of the sequence's row.
  const { horizon, writers } = await db.one(sql.type(z.object({ horizon: z.number(), writers: z.array(z.string()) }))`
    WITH seq AS MATERIALIZED (
      SELECT CASE WHEN is_called THEN last_value ELSE 0 END AS horizon FROM audit_log_seq_seq
    )
    SELECT seq.horizon, ARRAY(${holdersOf(langKey)} AND seq.horizon IS NOT NULL) AS writers FROM seq
  `);
  if (writers.length === 0) return horizon;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    await sleep(5);
    const running = new Set(await applierHolders(db, langKey));
    if (!writers.some((writer) => running.has(writer))) return horizon;
    if (Date.now() > deadline) throw new FeedHorizonBusyError();
  }
}

/**
 * The transactions holding the language's applier lock now (virtual
 * transaction ids). The lock class and key come from sync/sql/locks.sql's
 * functions, where they are defined once; a two-key advisory lock shows its
 * keys as classid and objid.
 */
const applierHolders = (db: CommonQueryMethods, langKey: number): Promise<readonly string[]> =>
  db.anyFirst(sql.type(z.object({ vxid: z.string() }))`${holdersOf(langKey)}`);

const holdersOf = (langKey: number) => sql.fragment`
  SELECT virtualtransaction AS vxid FROM pg_locks
  WHERE locktype = 'advisory' AND granted
    AND classid = sync_lock_class('applier')::oid AND objid = sync_lock_key(${langKey})::oid AND objsubid = 2
    AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
`;
