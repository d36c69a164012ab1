import { type DatabasePool, type DatabasePoolConnection, sql } from 'slonik';
import { z } from 'zod';

/*
 * The audit log's blocks (docs/decisions.md, "Audit retention"): audit_log is
 * partitioned by RANGE (seq); block k holds seq in [k * 2^36, (k + 1) * 2^36)
 * and is one partition, audit_log_p<k>; audit_partitions says when each was
 * opened. A new block is opened once a day by moving the sequence into it;
 * an old one is removed whole once the block after it was opened longer ago
 * than the retention. Every step can be repeated: a run cut short anywhere is
 * finished by the next one.
 */

/** seq values per block: 2^36 keeps seq below 2^53 (exact as a JavaScript number) for centuries of daily blocks. */
export const AUDIT_BLOCK_SIZE = 2 ** 36;
/** A block stays the newest for this long before the next is opened. */
const BLOCK_SPAN = sql.fragment`interval '1 day'`;

const partitionOf = (k: number) => `audit_log_p${k}`;

export interface BlockOptions {
  /** Entries are kept for this many days after the block after theirs was opened. */
  retentionDays: number;
  /** How long a DDL statement waits for a lock before this run gives up and leaves it to the next. */
  lockTimeoutMs: number;
}

export interface BlockRun {
  /** The block opened by this run, if any. */
  opened: number | null;
  /** The blocks removed by this run. */
  dropped: number[];
}

/** Lock timeouts end a run's DDL quietly: the next run tries again. */
function isLockTimeout(error: unknown): boolean {
  for (let current = error; current; current = (current as { cause?: unknown }).cause) {
    if ((current as { code?: unknown }).code === '55P03') return true;
  }
  return false;
}

/**
 * Opens the next block when it is due and removes the blocks past retention,
 * on one connection (DETACH ... CONCURRENTLY cannot run in a transaction), one
 * run at a time across workers (a session advisory lock; a run that finds it
 * taken does nothing). Never takes a language's applier lock: writers go on,
 * their COPY into audit_log and the feed's reads never wait behind an
 * exclusive lock on the parent table.
 */
export async function maintainAuditBlocks(db: DatabasePool, options: BlockOptions): Promise<BlockRun> {
  return db.connect(async (connection) => {
    const mine = await connection.oneFirst(sql.type(z.object({ mine: z.boolean() }))`
      SELECT pg_try_advisory_lock(hashtext('commerce-sync:audit-blocks')) AS mine
    `);
    if (!mine) return { opened: null, dropped: [] };
    try {
      await connection.query(sql.unsafe`SELECT set_config('lock_timeout', ${`${options.lockTimeoutMs}ms`}, false)`);
      const opened = await openDueBlock(connection);
      const dropped: number[] = [];
      for (const k of await expiredBlocks(connection, options.retentionDays)) {
        if (!(await dropBlock(connection, k))) break;
        dropped.push(k);
      }
      return { opened, dropped };
    } finally {
      await connection.query(sql.unsafe`RESET lock_timeout`);
      await connection.query(sql.unsafe`SELECT pg_advisory_unlock(hashtext('commerce-sync:audit-blocks'))`);
    }
  });
}

/** Opens block newest + 1 when the newest was opened a day ago or more (Postgres' clock); then makes sure the sequence is in the newest block. */
async function openDueBlock(connection: DatabasePoolConnection): Promise<number | null> {
  const newest = await connection.one(sql.type(z.object({ k: z.number(), due: z.boolean() }))`
    SELECT k, opened_at <= now() - ${BLOCK_SPAN} AS due FROM audit_partitions ORDER BY k DESC LIMIT 1
  `);
  let opened: number | null = null;
  if (newest.due) {
    opened = newest.k + 1;
    if (!(await openBlock(connection, opened))) opened = null;
  }
  await moveSequenceInto(connection, opened ?? newest.k);
  return opened;
}

/**
 * Opens block k: a table of the parent's shape with its own indexes, attached
 * (ATTACH takes SHARE UPDATE EXCLUSIVE on the parent, which writers and
 * readers do not wait for, where CREATE TABLE ... PARTITION OF would take
 * ACCESS EXCLUSIVE), and recorded in audit_partitions, in one transaction.
 * @returns false when a lock was not had in time (the next run tries again).
 */
export async function openBlock(connection: DatabasePoolConnection, k: number): Promise<boolean> {
  const name = sql.identifier([partitionOf(k)]);
  const low = k * AUDIT_BLOCK_SIZE;
  const high = (k + 1) * AUDIT_BLOCK_SIZE;
  try {
    await connection.transaction(async (tx) => {
      await tx.query(sql.unsafe`CREATE TABLE ${name} (LIKE audit_log)`);
      await tx.query(sql.unsafe`ALTER TABLE ${name} ADD CONSTRAINT ${sql.identifier([`audit_log_pkey_p${k}`])} PRIMARY KEY (seq)`);
      await tx.query(sql.unsafe`CREATE INDEX ${sql.identifier([`audit_log_record_id_p${k}`])} ON ${name} (record_id, seq)`);
      await tx.query(sql.unsafe`CREATE INDEX ${sql.identifier([`audit_log_language_p${k}`])} ON ${name} (language_id, seq)`);
      await tx.query(
        sql.unsafe`ALTER TABLE audit_log ATTACH PARTITION ${name} FOR VALUES FROM (${sql.literalValue(String(low))}) TO (${sql.literalValue(String(high))})`,
      );
      await tx.query(sql.unsafe`INSERT INTO audit_partitions (k, opened_at) VALUES (${k}, now())`);
    });
    return true;
  } catch (error) {
    if (isLockTimeout(error)) return false;
    throw error;
  }
}

/**
 * Moves the sequence to the start of block k when it is still below it, so
 * the next seq is in the new block. Entries numbered before commit later and
 * still land in their own block: the partition key is the seq itself.
 */
async function moveSequenceInto(connection: DatabasePoolConnection, k: number): Promise<void> {
  await connection.query(sql.unsafe`
    SELECT setval('audit_log_seq_seq', ${k * AUDIT_BLOCK_SIZE}::bigint, true)
    FROM audit_log_seq_seq WHERE last_value < ${k * AUDIT_BLOCK_SIZE}::bigint
  `);
}

/** Blocks whose next block was opened longer ago than the retention: all their entries are older than it. */
async function expiredBlocks(connection: DatabasePoolConnection, retentionDays: number): Promise<readonly number[]> {
  return connection.anyFirst(sql.type(z.object({ k: z.number() }))`
    SELECT b.k FROM audit_partitions b
    WHERE EXISTS (
      SELECT 1 FROM audit_partitions n WHERE n.k > b.k AND n.opened_at < now() - make_interval(days => ${retentionDays})
    )
    ORDER BY b.k
  `);
}

/**
 * Removes block k: first the feed learns that entries up to its end are gone
 * (audit_retention.removed_through, so a cursor inside it is answered 410
 * rather than silently skipping), then the partition is detached
 * concurrently (or its interrupted detach finished) and dropped, then its
 * record goes. Each step is skipped when a run before did it.
 * @returns false when a lock was not had in time.
 */
async function dropBlock(connection: DatabasePoolConnection, k: number): Promise<boolean> {
  const table = partitionOf(k);
  const name = sql.identifier([table]);
  await connection.query(sql.unsafe`
    UPDATE audit_retention SET removed_through = greatest(removed_through, ${(k + 1) * AUDIT_BLOCK_SIZE - 1}::bigint)
  `);
  const state = await connection.maybeOne(sql.type(z.object({ pending: z.boolean() }))`
    SELECT i.inhdetachpending AS pending FROM pg_inherits i
    WHERE i.inhrelid = to_regclass(${table}) AND i.inhparent = 'audit_log'::regclass
  `);
  try {
    if (state?.pending) await connection.query(sql.unsafe`ALTER TABLE audit_log DETACH PARTITION ${name} FINALIZE`);
    else if (state) await connection.query(sql.unsafe`ALTER TABLE audit_log DETACH PARTITION ${name} CONCURRENTLY`);
    await connection.query(sql.unsafe`DROP TABLE IF EXISTS ${name}`);
  } catch (error) {
    if (isLockTimeout(error)) return false;
    throw error;
  }
  await connection.query(sql.unsafe`DELETE FROM audit_partitions WHERE k = ${k}`);
  return true;
}

/** The retained blocks and where the retained history starts, for /metrics. */
export async function auditBlockStats(db: DatabasePool): Promise<{ blocks: number; removedThrough: number }> {
  return db.one(sql.type(z.object({ blocks: z.number(), removedThrough: z.number() }))`
    SELECT (SELECT count(*) FROM audit_partitions)::int AS blocks,
           (SELECT removed_through FROM audit_retention) AS "removedThrough"
  `);
}
