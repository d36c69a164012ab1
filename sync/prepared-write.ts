import type pg from 'pg';
import type { StoredKind } from '../catalogue/record-kinds.js';
import { createStatementPool, type StatementPoolOptions } from '../platform/statement-pool.js';
import type { ChangeOrigin, RecordTimes, WrittenRecord } from './write.repository.js';

/*
 * The single write's one statement (write_record, sync/sql/write_record.sql)
 * sent through `pg` directly, as a named prepared statement, instead of
 * through slonik like every other query. It is the hottest statement of the
 * service, and slonik can give it neither of the two things this file is for:
 *
 * - a prepared statement: Postgres parses and plans the call once per
 *   connection instead of once per write;
 * - no per-query layers: slonik wraps each query in a query id, a child
 *   logger, tracing spans, interceptors and a zod parse of the row, which
 *   together cost the API more CPU than the rest of a write (measured with
 *   `npm run bench`: see docs/decisions.md, "Hot paths").
 *
 * Inside a transaction (bulk files) writes go through slonik
 * (write.repository.ts `writeRecord`): both call the same SQL function.
 */

const WRITE_RECORD = {
  name: 'write_record',
  text: `SELECT status, id, data, created_at, updated_at, seq
         FROM write_record($1, $2, $3, $4::jsonb, $5::timestamptz, $6::timestamptz, $7, $8, $9::jsonb, $10, $11)`,
};

interface WriteRow {
  status: 'written' | 'language-gone';
  id: string;
  data: Record<string, unknown>;
  created_at: string | null;
  updated_at: string | null;
  seq: number;
}

/** The single writes' own pool (their connections only). */
export type PreparedWriterOptions = Omit<StatementPoolOptions, 'options'>;

/** Single writes of records, one prepared statement per write, on a pool of their own. */
export class PreparedWriter {
  readonly pool: pg.Pool;

  constructor(options: PreparedWriterOptions) {
    this.pool = createStatementPool(options);
  }

  /**
   * writeRecord (write.repository.ts) for one write outside any transaction.
   * @returns null when the language is gone.
   */
  async writeRecord(
    langKey: number,
    kind: StoredKind,
    id: string,
    fields: Record<string, unknown>,
    times: RecordTimes,
    origin: ChangeOrigin,
    payload: Record<string, unknown>,
  ): Promise<WrittenRecord | null> {
    const result = await queryRetryingRollbacks(this.pool, {
      ...WRITE_RECORD,
      values: [
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
      ],
    });
    const row = result.rows[0] as WriteRow | undefined;
    if (row?.status !== 'written') return null;
    return { id: row.id, data: row.data, created_at: row.created_at, updated_at: row.updated_at, seq: row.seq };
  }

  end(): Promise<void> {
    return this.pool.end();
  }
}

/**
 * As slonik does for every query outside a transaction (its queryRetryLimit,
 * 5): a statement rolled back by Postgres (SQLSTATE class 40: a deadlock
 * with the applier or a link writer, a serialization failure) is run again.
 * It is one statement in its own transaction, so nothing of it was kept; the
 * retry takes a new write number. Without this, the deadlock Postgres broke
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
