import type pg from 'pg';
import { compareKeys } from '../catalogue/key-order.js';
import { createStatementPool, type StatementPoolOptions } from '../platform/statement-pool.js';
import type { SingleWrite, WrittenRecord } from './write.repository.js';

/*
 * The single write's statement (write_record, sync/sql/write_record.sql)
 * sent through `pg` directly, as a named prepared statement, instead of
 * through slonik like every other query. It is the hottest statement of the
 * service, and slonik can give it none of the three things this file is for:
 *
 * - a prepared statement: Postgres parses and plans the call once per
 *   connection instead of once per write;
 * - no per-query layers: slonik wraps each query in a query id, a child
 *   logger, tracing spans, interceptors and a zod parse of the row, which
 *   together cost the API more CPU than the rest of a write
 *   (docs/decisions.md, "Hot paths");
 * - writes that arrive together go together: the writes of one language the
 *   API reaches in one turn of its event loop (the requests of one socket
 *   read, those a Redis reply to their limit checks let go on), and those
 *   that come while every connection of the pool is busy, go in one
 *   statement (write_record_many): one round trip, one transaction and one
 *   commit for many writes. A lone write goes after the turn it came in;
 *   nothing waits for a batch to fill. Why the result is the same as sending
 *   each alone: docs/consistency.md, "Single writes sent together".
 *
 * Inside a transaction (bulk files) writes go through slonik
 * (write.repository.ts `writeRecord`): all of them call the same SQL function.
 */

const RESULT_COLUMNS = 'status, id, data, created_at, updated_at, seq';

const WRITE_RECORD = {
  name: 'write_record',
  text: `SELECT ${RESULT_COLUMNS}
         FROM write_record($1, $2, $3, $4::jsonb, $5::timestamptz, $6::timestamptz, $7, $8, $9::jsonb, $10, $11)`,
};

const WRITE_RECORD_MANY = {
  name: 'write_record_many',
  text: `SELECT ord, ${RESULT_COLUMNS} FROM write_record_many($1::jsonb)`,
};

interface WriteRow {
  status: 'written' | 'language-gone';
  id: string;
  data: Record<string, unknown>;
  created_at: string | null;
  updated_at: string | null;
  seq: number;
}

interface PendingWrite extends SingleWrite {
  resolve(record: WrittenRecord | null): void;
  reject(error: unknown): void;
}

/** The single writes' own pool (their connections only). */
export type PreparedWriterOptions = Omit<StatementPoolOptions, 'options'>;

/** Writes in one statement at most. */
const MAX_BATCH = 64;

/** Counts since the process started, for /metrics. */
export interface WriterStats {
  writes: number;
  statements: number;
}

/** Single writes of records on a pool of their own: one prepared statement per write, or per writes that meet. */
export class PreparedWriter {
  readonly pool: pg.Pool;
  readonly stats: WriterStats = { writes: 0, statements: 0 };
  /** Statements out at once: the pool's connections. Writes that come while all are busy wait here, and go together. */
  private readonly maxInFlight: number;
  private waiting: PendingWrite[] = [];
  private inFlight = 0;
  private sendScheduled = false;

  constructor(options: PreparedWriterOptions) {
    this.pool = createStatementPool(options);
    this.maxInFlight = options.max;
  }

  /**
   * writeRecord (write.repository.ts) for one write outside any transaction.
   * @returns null when the language is gone.
   */
  writeRecord(write: SingleWrite): Promise<WrittenRecord | null> {
    this.stats.writes += 1;
    return new Promise((resolve, reject) => {
      this.waiting.push({ ...write, resolve, reject });
      this.scheduleSend();
    });
  }

  end(): Promise<void> {
    return this.pool.end();
  }

  /**
   * Sends after the current turn of the event loop: the requests one turn
   * handles (a socket read, a Redis reply to many limit checks) reach here one
   * after the other, and go together.
   */
  private scheduleSend(): void {
    if (this.sendScheduled || this.inFlight >= this.maxInFlight || this.waiting.length === 0) return;
    this.sendScheduled = true;
    setImmediate(() => {
      this.sendScheduled = false;
      this.sendWaiting();
    });
  }

  private sendWaiting(): void {
    while (this.waiting.length > 0 && this.inFlight < this.maxInFlight) {
      const batch = this.takeBatch();
      this.inFlight += 1;
      void this.send(batch).finally(() => {
        this.inFlight -= 1;
        this.scheduleSend();
      });
    }
  }

  /**
   * The oldest waiting write and the writes of its language that wait with it. A statement carries one language's
   * writes only: a write waits for its own language's locks (a writer holding a record, the horizon's exclusive
   * request), which another shop's writes must not wait for with it.
   */
  private takeBatch(): PendingWrite[] {
    const langKey = this.waiting[0]!.langKey;
    const batch: PendingWrite[] = [];
    const rest: PendingWrite[] = [];
    for (const write of this.waiting) {
      if (write.langKey === langKey && batch.length < MAX_BATCH) batch.push(write);
      else rest.push(write);
    }
    this.waiting = rest;
    return batch;
  }

  /** Settles every write of `batch`; never rejects. */
  private async send(batch: PendingWrite[]): Promise<void> {
    if (batch.length === 1) {
      await this.sendAlone(batch[0]!);
      return;
    }
    // One order for every batch (the records index's own, byte order), so that two batches writing the same records
    // lock their rows in the same order and cannot deadlock on them. The sort is stable: one record's writes keep
    // the order they came in.
    batch.sort(byLockOrder);
    let rows: (WriteRow & { ord: number })[];
    try {
      this.stats.statements += 1;
      rows = (await queryRetryingRollbacks(this.pool, { ...WRITE_RECORD_MANY, values: [batchJson(batch)] })).rows;
    } catch {
      // One write refused refuses the statement: each goes alone, so that only the writes at fault fail.
      await Promise.all(batch.map((write) => this.sendAlone(write)));
      return;
    }
    const byPosition = new Map(rows.map((row) => [row.ord, row]));
    batch.forEach((write, index) => {
      const row = byPosition.get(index + 1);
      if (row) write.resolve(writtenOf(row));
      else write.reject(new Error(`write_record_many returned no row for write ${index + 1} of ${batch.length}`));
    });
  }

  private async sendAlone(write: PendingWrite): Promise<void> {
    try {
      this.stats.statements += 1;
      const result = await queryRetryingRollbacks(this.pool, { ...WRITE_RECORD, values: argumentsOf(write) });
      write.resolve(writtenOf(result.rows[0] as WriteRow | undefined));
    } catch (error) {
      write.reject(error);
    }
  }
}

const byLockOrder = (a: SingleWrite, b: SingleWrite): number => compareKeys(a.kind, b.kind) || compareKeys(a.id, b.id);

const writtenOf = (row: WriteRow | undefined): WrittenRecord | null =>
  row?.status === 'written' ? { id: row.id, data: row.data, created_at: row.created_at, updated_at: row.updated_at, seq: row.seq } : null;

const argumentsOf = ({ langKey, kind, id, fields, times, origin, payload }: SingleWrite): unknown[] => [
  langKey,
  kind,
  id,
  JSON.stringify(fields),
  times.created_at ?? null,
  times.updated_at ?? null,
  origin.accountId,
  origin.languageId,
  JSON.stringify(payload),
  origin.actor,
  origin.requestId,
];

/** write_record_many's argument: the writes as one JSON text (one native stringify, no array-literal escaping). */
const batchJson = (batch: readonly SingleWrite[]): string =>
  JSON.stringify(
    batch.map(({ langKey, kind, id, fields, times, origin, payload }) => ({
      lang_key: langKey,
      kind,
      record_id: id,
      fields,
      created_at: times.created_at ?? null,
      updated_at: times.updated_at ?? null,
      account_id: origin.accountId,
      language_id: origin.languageId,
      payload,
      actor: origin.actor,
      request_id: origin.requestId,
    })),
  );

/**
 * As slonik does for every query outside a transaction (its queryRetryLimit,
 * 5): a statement rolled back by Postgres (SQLSTATE class 40: a deadlock
 * with the applier or a link writer, a serialization failure) is run again.
 * It is one statement in its own transaction, so nothing of it was kept; the
 * retry takes new write numbers. Without this, the deadlock Postgres broke
 * reached the client as a 500.
 */
async function queryRetryingRollbacks(pool: pg.Pool, query: pg.QueryConfig): Promise<pg.QueryResult> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await pool.query(query);
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      if (attempt >= ROLLBACK_RETRY_LIMIT || typeof code !== 'string' || !code.startsWith('40')) throw error;
    }
  }
}

const ROLLBACK_RETRY_LIMIT = 5;
