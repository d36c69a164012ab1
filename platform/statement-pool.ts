import pg from 'pg';

/*
 * Plain `pg` pools for the few statements that bypass slonik on a hot path
 * (the single write, sync/prepared-write.ts; a v2 list page,
 * reads/prepared-read.ts; each file says why). Rows come back as the rest of
 * the service sees them through slonik (platform/db.ts): timestamps as ISO
 * 8601 strings in UTC, int8 as numbers.
 */

const TIMESTAMPTZ = 1184;
const INT8 = 20;

const types = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === TIMESTAMPTZ) return (value: string) => new Date(Date.parse(value)).toISOString();
    if (oid === INT8) return (value: string) => Number.parseInt(value, 10);
    return pg.types.getTypeParser(oid, format ?? 'text');
  },
};

export interface StatementPoolOptions {
  connectionString: string;
  /** Connections of this pool. */
  max: number;
  /** Per statement, like the slonik pool's statement timeout. */
  statementTimeoutMs: number;
  /** How long a caller waits for a connection (5 s unless given). */
  connectionTimeoutMs?: number;
  applicationName?: string;
  /** Session settings (`-c name=value ...`). */
  options?: string;
}

export function createStatementPool(options: StatementPoolOptions): pg.Pool {
  return new pg.Pool({
    connectionString: options.connectionString,
    max: options.max,
    idleTimeoutMillis: 10_000,
    connectionTimeoutMillis: options.connectionTimeoutMs ?? 5_000,
    statement_timeout: options.statementTimeoutMs,
    application_name: options.applicationName,
    options: options.options,
    types,
  });
}
