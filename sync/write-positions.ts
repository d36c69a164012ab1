import { sql } from 'slonik';
import { z } from 'zod';
import type { Database } from '../platform/db.js';
import { type RedisClient, withinMs } from '../platform/redis.js';
import { fromSortableWalPosition, parseWalPosition, sortableWalPosition } from '../platform/wal-position.js';

/*
 * Where each account's last write is in the primary's WAL, so that its reads
 * go to a replica only once that replica has replayed past it (read your
 * writes: reads/read-router.ts; docs/consistency.md, "Reads on replicas").
 *
 * The position is read after the write committed, as a statement of its own:
 * one read inside the write's transaction would come before its commit
 * record. It is `pg_current_wal_insert_lsn()`, not `pg_current_wal_lsn()`:
 * with synchronous_commit off a commit returns before its record is written,
 * and only the insert position is sure to be past it. It is kept in Redis, so
 * that every API process sees it, under `<QUEUE_PREFIX>:rw:<account id>`,
 * only ever raised, for READ_POSITION_TTL_S after the account's last write.
 *
 * The writes that commit in one turn of the event loop share one position
 * query and one Redis call (a script raising every key): nothing waits for
 * a batch, and a busy API pays one round trip of each per turn, not per
 * write. Reads ask for their accounts' positions the same way, one MGET a turn.
 */

/** A position no replica reaches: the account's reads go to the primary. */
export const PRIMARY_ONLY = 1n << 64n;

/** Raises each key (KEYS) to the position ARGV[1] (sortable text) and keeps it ARGV[2] seconds from now. */
const RAISE_LUA = `
for i = 1, #KEYS do
  local current = redis.call('get', KEYS[i])
  if not current or current < ARGV[1] then
    redis.call('set', KEYS[i], ARGV[1], 'EX', ARGV[2])
  else
    redis.call('expire', KEYS[i], ARGV[2])
  end
end
return #KEYS
`;

type RaisingRedis = RedisClient & { raiseWritePositions(...keysAndArgs: Array<string | number>): Promise<number> };

/** How long a read waits for Redis before it goes to the primary, and a write for its position to be kept. */
const REDIS_TIMEOUT_MS = 500;
/** Accounts remembered in this process as unrecorded at most (each for the TTL); beyond, the oldest are forgotten. */
const MAX_UNRECORDED = 10_000;

const POSITION = (langKeys: readonly number[]) =>
  sql.type(z.object({ position: z.string(), accounts: z.array(z.string()) }))`
    SELECT pg_current_wal_insert_lsn()::text AS position,
           ARRAY(SELECT DISTINCT account_id::text FROM languages WHERE lang_key = ANY(${sql.array([...langKeys], 'int8')})) AS accounts
  `;

interface WriteBatch {
  accounts: Set<number>;
  langKeys: Set<number>;
  done: Promise<void>;
}

interface ReadBatch {
  waiting: Map<number, Array<(position: bigint | null | Error) => void>>;
}

/** For /metrics: positions kept, and writes whose position could not be kept. */
export interface WritePositionStats {
  recorded: number;
  failed: number;
}

export class WritePositions {
  readonly stats: WritePositionStats = { recorded: 0, failed: 0 };
  private readonly redis: RaisingRedis;
  private writes: WriteBatch | undefined;
  private reads: ReadBatch | undefined;
  /**
   * Accounts whose position this process could not keep, and until when: their
   * reads here go to the primary meanwhile (other processes cannot know).
   */
  private readonly unrecorded = new Map<number, number>();

  /** Whether Redis is a cluster: each account's key tagged with it, and a call per key (a script or MGET touches one slot). */
  private readonly clustered: boolean;

  constructor(
    private readonly db: Database,
    redis: RedisClient,
    private readonly options: { prefix: string; ttlS: number; onFailure: (error: Error) => void },
  ) {
    redis.defineCommand('raiseWritePositions', { lua: RAISE_LUA });
    this.redis = redis as RaisingRedis;
    this.clustered = redis.isCluster;
  }

  private keyOf(accountId: number): string {
    return `${this.options.prefix}:rw:${this.clustered ? `{${accountId}}` : accountId}`;
  }

  private raise(keys: string[], position: string): Promise<unknown> {
    const ttl = this.options.ttlS;
    if (!this.clustered) return this.redis.raiseWritePositions(keys.length, ...keys, position, ttl);
    return Promise.all(keys.map((key) => this.redis.raiseWritePositions(1, key, position, ttl)));
  }

  private positionsOf(keys: string[]): Promise<Array<string | null>> {
    if (!this.clustered) return this.redis.mget(...keys);
    return Promise.all(keys.map((key) => this.redis.get(key)));
  }

  /** After `accountId`'s write committed: raises its position. Never rejects (a failure is counted and logged). */
  wrote(accountId: number): Promise<void> {
    const batch = this.writeBatch();
    batch.accounts.add(accountId);
    return batch.done;
  }

  /** After a run of work applied in `langKey` committed (the worker's): raises its account's position. */
  wroteIn(langKey: number): Promise<void> {
    const batch = this.writeBatch();
    batch.langKeys.add(langKey);
    return batch.done;
  }

  private writeBatch(): WriteBatch {
    if (this.writes) return this.writes;
    const batch: WriteBatch = { accounts: new Set(), langKeys: new Set(), done: Promise.resolve() };
    batch.done = new Promise<void>((resolve) =>
      setImmediate(() => {
        // Writes from now on committed after this batch's position may be read: they go in the next one.
        this.writes = undefined;
        this.record(batch).then(resolve, resolve);
      }),
    );
    this.writes = batch;
    return batch;
  }

  private async record(batch: WriteBatch): Promise<void> {
    const accounts = new Set(batch.accounts);
    try {
      const row = await this.db.one(POSITION([...batch.langKeys]));
      for (const account of row.accounts) accounts.add(Number(account));
      if (accounts.size === 0) return;
      const keys = [...accounts].map((account) => this.keyOf(account));
      const position = sortableWalPosition(parseWalPosition(row.position));
      await withinMs(this.raise(keys, position), REDIS_TIMEOUT_MS);
      this.stats.recorded += accounts.size;
    } catch (error) {
      this.stats.failed += Math.max(accounts.size, 1);
      const until = Date.now() + this.options.ttlS * 1000;
      for (const account of accounts) {
        if (this.unrecorded.size >= MAX_UNRECORDED) this.unrecorded.delete(this.unrecorded.keys().next().value as number);
        this.unrecorded.delete(account);
        this.unrecorded.set(account, until);
      }
      this.options.onFailure(error as Error);
    }
  }

  /**
   * The position a replica must have replayed for `accountId`'s reads: null
   * when none is kept (no write within the TTL), PRIMARY_ONLY when this
   * process could not keep its last one. Rejects when Redis cannot be asked.
   */
  of(accountId: number): Promise<bigint | null> {
    const until = this.unrecorded.get(accountId);
    if (until !== undefined) {
      if (until > Date.now()) return Promise.resolve(PRIMARY_ONLY);
      this.unrecorded.delete(accountId);
    }
    return new Promise((resolve, reject) => {
      const settle = (position: bigint | null | Error) => (position instanceof Error ? reject(position) : resolve(position));
      let batch = this.reads;
      if (!batch) {
        const started: ReadBatch = { waiting: new Map() };
        batch = started;
        this.reads = started;
        setImmediate(() => {
          this.reads = undefined;
          void this.read(started);
        });
      }
      const waiting = batch.waiting.get(accountId);
      if (waiting) waiting.push(settle);
      else batch.waiting.set(accountId, [settle]);
    });
  }

  private async read(batch: ReadBatch): Promise<void> {
    const accounts = [...batch.waiting.keys()];
    try {
      const values = await withinMs(this.positionsOf(accounts.map((account) => this.keyOf(account))), REDIS_TIMEOUT_MS);
      accounts.forEach((account, index) => {
        const value = values[index];
        const position = value ? fromSortableWalPosition(value) : null;
        for (const settle of batch.waiting.get(account)!) settle(position);
      });
    } catch (error) {
      for (const waiting of batch.waiting.values()) for (const settle of waiting) settle(error as Error);
    }
  }
}
