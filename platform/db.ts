import type { DriverTypeParser } from 'slonik';
import { createPool, type DatabasePool, type Interceptor, type QueryResultRow, SchemaValidationError } from 'slonik';

/**
 * Validates rows against the zod schema given with `sql.type(...)`, so a
 * repository's declared row type is what it really gets back.
 */
const resultParserInterceptor: Interceptor = {
  name: 'result-parser',
  transformRow: (context, query, row) => {
    const parser = context.resultParser;
    if (!parser) return row;
    const result = parser.safeParse(row);
    if (!result.success) {
      throw new SchemaValidationError(query, row, result.error.issues);
    }
    return result.data as QueryResultRow;
  },
};

/** Timestamps travel as ISO 8601 strings in UTC, exactly as the API shows them. */
const timestampParser = (name: string): DriverTypeParser => ({
  name,
  parse: (value: string) => new Date(Date.parse(value)).toISOString(),
});

const typeParsers: DriverTypeParser[] = [
  { name: 'int8', parse: (value: string) => Number.parseInt(value, 10) },
  { name: 'numeric', parse: (value: string) => Number.parseFloat(value) },
  { name: 'float8', parse: (value: string) => Number.parseFloat(value) },
  timestampParser('timestamptz'),
  { name: 'timestamp', parse: (value: string) => new Date(`${value.replace(' ', 'T')}Z`).toISOString() },
  { name: 'date', parse: (value: string) => value },
];

export type Database = DatabasePool;

export interface PoolOptions {
  maximumPoolSize?: number;
  statementTimeoutMs?: number;
}

export async function createDatabase(connectionUri: string, options: PoolOptions = {}): Promise<Database> {
  return createPool(connectionUri, {
    interceptors: [resultParserInterceptor],
    typeParsers,
    maximumPoolSize: options.maximumPoolSize ?? 10,
    statementTimeout: options.statementTimeoutMs ?? 30_000,
    idleTimeout: 10_000,
    connectionTimeout: 5_000,
    captureStackTrace: false,
    // slonik's default sends DISCARD ALL after every release: a second round trip per query, and it throws away
    // the plans of write_record and the other cached statements. Nothing here keeps session state on a pooled
    // connection (transactions use SET TRANSACTION / xact locks; LISTEN has its own client), so there is nothing to reset.
    resetConnection: async () => {},
  });
}
