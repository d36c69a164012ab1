import { AppError } from '../platform/errors.js';
import type { WritePositions } from '../sync/write-positions.js';
import type { ReadTarget } from './read-context.js';
import type { ReadReplicas } from './read-replicas.js';

/**
 * Which Postgres a read runs on: the primary, or a streaming replica
 * (DATABASE_REPLICA_URLS) that has replayed past the account's last write.
 *
 * Routed here: the v2 GETs of records and languages (lists, one record,
 * sub-listings, order and cart lines, custom attribute definitions) and the
 * v1 profile lookup. Each asks for its account's last write position
 * (sync/write-positions.ts) and goes to a healthy replica at or past it, in
 * turn; to any healthy replica when the account wrote nothing lately; to
 * the primary when none qualifies or Redis cannot say. A replica that fails
 * (unreachable, an error, slower than REPLICA_STATEMENT_TIMEOUT_MS) is left
 * out for a moment and the read runs again on the primary, as does one that
 * finds a language the replica does not show yet: the client sees no error.
 * A client's mistake (a 4xx) is answered as it is: the primary would answer
 * the same.
 *
 * Stays on the primary, by not coming here: everything that reads state a
 * replica cannot have or a write position does not cover. The change feed
 * (it reads the audit horizon and waits on LISTEN, and its cursors are
 * positions in the primary's history), anything reading advisory locks
 * (a replica has none of the primary's), admin pages and sync-status, bulk
 * job status, erasures and webhooks (their state is written by the worker
 * and the delivery queue, not by the account's own writes), and every read
 * a write makes for itself (the record a PUT answers with).
 */
export class ReadRouter {
  /** Reads answered, by where: for /metrics (each replica counts its own failures). */
  readonly stats = { primary: 0, replica: 0 };

  constructor(
    readonly primary: ReadTarget,
    private readonly replicas?: { set: ReadReplicas; positions: WritePositions },
  ) {}

  /** The replicas, when there are some (for /metrics and closing). */
  get replicaSet(): ReadReplicas | undefined {
    return this.replicas?.set;
  }

  /** The servers reads run on, as far as opened: the primary, then each replica opened so far. */
  targets(): ReadTarget[] {
    const replicas = this.replicas?.set.replicas ?? [];
    return [this.primary, ...replicas.flatMap((replica) => (replica.target ? [replica.target] : []))];
  }

  /** Runs `read` for `accountId` on a replica that has its writes, or on the primary. */
  async read<T>(accountId: number, read: (target: ReadTarget) => Promise<T>): Promise<T> {
    if (!this.replicas) {
      this.stats.primary += 1;
      return read(this.primary);
    }
    const { set, positions } = this.replicas;
    const position = await positions.of(accountId).catch(() => undefined);
    const replica = position === undefined ? undefined : set.pick(position);
    const target = replica?.target;
    if (replica && target) {
      try {
        const result = await read(target);
        this.stats.replica += 1;
        return result;
      } catch (error) {
        if (error instanceof AppError && error.status < 500) {
          this.stats.replica += 1;
          throw error;
        }
        replica.failures += 1;
        // Behind is not broken: the replica stays in for the reads it can answer.
        if (!(error instanceof ReplicaBehindError)) set.failed(replica, error);
      }
    }
    this.stats.primary += 1;
    return read(this.primary);
  }
}

/** A replica does not show yet what the primary says exists (a language looked up there): read on the primary. */
export class ReplicaBehindError extends Error {
  constructor(what: string) {
    super(`the replica does not show ${what} yet`);
    this.name = 'ReplicaBehindError';
  }
}
