import type pg from 'pg';
import type { Logger } from '../platform/logger.js';
import { parseWalPosition } from '../platform/wal-position.js';
import type { ReadTarget } from './read-context.js';

/** A replica's pools and what this process last learnt of it. */
export interface Replica {
  /** Its host and port, for metrics and logs (never its credentials). */
  name: string;
  /** Its pools and caches, once opened (a replica down at start-up is opened when it first answers). */
  target?: ReadTarget;
  open(): Promise<ReadTarget>;
  /** How far it had replayed when last asked (a lower bound from then on); undefined until asked. */
  replayed?: bigint;
  /** Until when (epoch ms) it is left out after a failure. */
  unhealthyUntil: number;
  /** Reads begun on it that failed and were read again from the primary. */
  failures: number;
  polling: boolean;
  /** Failed since it last answered a poll: logged once when it goes, once when it is back. */
  down: boolean;
}

const REPLAYED = `SELECT (CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() ELSE pg_current_wal_lsn() END)::text AS position`;
const CURRENT = 'SELECT pg_current_wal_lsn()::text AS position';

/** How long a replica that failed is left out before reads try it again. */
export const REPLICA_RETRY_MS = 1_000;

/**
 * The replicas of this API process: how far each has replayed, read every
 * `pollMs` on a timer that does not hold the process open, and which failed
 * lately. The primary's own position is read with them, for the lag in /metrics.
 */
export class ReadReplicas {
  /** The primary's WAL position when last asked. */
  primaryPosition: bigint | undefined;
  private timer: NodeJS.Timeout | undefined;
  private next = 0;

  constructor(
    /** The primary's read pool, for its position. */
    private readonly primary: pg.Pool,
    readonly replicas: Replica[],
    private readonly options: { pollMs: number; logger: Logger },
  ) {}

  start(): void {
    void this.poll();
    this.timer = setInterval(() => void this.poll(), this.options.pollMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** Asks each replica (and the primary) for its position; one question at a time per replica. */
  async poll(): Promise<void> {
    await Promise.all([
      this.primary.query<{ position: string }>(CURRENT).then(
        (result) => {
          this.primaryPosition = parseWalPosition(result.rows[0]!.position);
        },
        () => undefined,
      ),
      ...this.replicas.map(async (replica) => {
        if (replica.polling) return;
        replica.polling = true;
        try {
          replica.target ??= await replica.open();
          const result = await replica.target.reader.pool.query<{ position: string | null }>(REPLAYED);
          const position = result.rows[0]?.position;
          if (position) replica.replayed = parseWalPosition(position);
          if (replica.down) this.options.logger.info({ replica: replica.name }, 'read replica answers again');
          replica.down = false;
        } catch (error) {
          this.failed(replica, error);
        } finally {
          replica.polling = false;
        }
      }),
    ]);
  }

  /**
   * A healthy replica that has replayed at least to `position` (any healthy
   * one when null), taking them in turn; undefined when none has.
   */
  pick(position: bigint | null): Replica | undefined {
    const now = Date.now();
    const count = this.replicas.length;
    for (let step = 0; step < count; step += 1) {
      const index = (this.next + step) % count;
      const replica = this.replicas[index]!;
      const { target, replayed } = replica;
      if (replica.unhealthyUntil > now || replayed === undefined || !target) continue;
      if (position !== null && replayed < position) continue;
      this.next = index + 1;
      return replica;
    }
    return undefined;
  }

  /** Leaves `replica` out for REPLICA_RETRY_MS. */
  failed(replica: Replica, error: unknown): void {
    if (!replica.down) {
      this.options.logger.warn({ replica: replica.name, err: (error as Error).message }, 'read replica failed: reads go elsewhere');
      replica.down = true;
    }
    replica.unhealthyUntil = Date.now() + REPLICA_RETRY_MS;
  }

  /** Bytes of WAL the replica had still to replay when last asked; undefined while either position is unknown. */
  lagBytes(replica: Replica): number | undefined {
    if (replica.replayed === undefined || this.primaryPosition === undefined) return undefined;
    const lag = this.primaryPosition - replica.replayed;
    return lag > 0n ? Number(lag) : 0;
  }

  healthy(replica: Replica): boolean {
    return replica.unhealthyUntil <= Date.now();
  }
}
