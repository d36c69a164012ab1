import type { DriverTypeParser } from 'slonik';
import {
  BackendTerminatedError,
  BackendTerminatedUnexpectedlyError,
  ConnectionError,
  createPool,
  type DatabasePool,
  type Interceptor,
  type QueryResultRow,
  SchemaValidationError,
  sql,
} from 'slonik';
import type { ZodTypeAny } from 'zod';
import { createCopyingDriverFactory } from './copy-in.js';
import { StatementNames } from './statement-names.js';

const unparsedSchemas = new WeakSet<ZodTypeAny>();

/** A list of strings as one text[] parameter (`= ANY(...)`, `unnest(...)`). */
export const textArray = (values: readonly string[]) => sql.array([...values], 'text');

/**
 * The row type of a hot statement, for `sql.type(...)`, whose rows are not
 * parsed at run time: the applier's and bulk files' statements read thousands
 * of rows of the service's own tables per batch, and parsing each with zod
 * (a copy of every row) would be a large share of the worker's CPU and
 * garbage. Everything else is validated.
 */
export function unparsedRows<T extends ZodTypeAny>(schema: T): T {
  const copy = schema.describe(schema.description ?? 'unparsed rows') as T;
  unparsedSchemas.add(copy);
  return copy;
}

/**
 * Validates rows against the zod schema given with `sql.type(...)`, so a
 * repository's declared row type is what it really gets back (except the
 * hot statements' `unparsedRows`).
 */
const resultParserInterceptor: Interceptor = {
  name: 'result-parser',
  transformRow: (context, query, row) => {
    const parser = context.resultParser;
    if (!parser || unparsedSchemas.has(parser)) return row;
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
  /** How long a query waits for a connection (5 s unless given). */
  connectionTimeoutMs?: number;
  /**
   * Send each statement as a named prepared statement, planned once per
   * connection (platform/statement-names.ts): for a pool whose statements
   * are few and run often, whose planning costs more than their running.
   */
  prepareStatements?: boolean;
}

export async function createDatabase(connectionUri: string, options: PoolOptions = {}): Promise<Database> {
  return createPool(connectionUri, {
    // COPY FROM STDIN in transactions (platform/copy-in.ts).
    driverFactory: createCopyingDriverFactory(options.prepareStatements ? new StatementNames() : undefined),
    interceptors: [resultParserInterceptor],
    typeParsers,
    maximumPoolSize: options.maximumPoolSize ?? 10,
    statementTimeout: options.statementTimeoutMs ?? 30_000,
    idleTimeout: 10_000,
    connectionTimeout: options.connectionTimeoutMs ?? 5_000,
    captureStackTrace: false,
    // slonik's default sends DISCARD ALL after every release: a second round trip per query, and it throws away
    // the plans of write_record and the other cached statements. Nothing here keeps session state on a pooled
    // connection (transactions use SET TRANSACTION / xact locks; LISTEN has its own client), so there is nothing to reset.
    resetConnection: async () => {},
  });
}

/** Postgres error codes (and socket errors) that mean the database cannot be reached or used right now. */
const UNAVAILABLE_CODES = new Set([
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now (starting up, shutting down, recovering)
  '53300', // too_many_connections
  '3D000', // invalid_catalog_name: the database itself is gone
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENOTFOUND',
  'EPIPE',
]);

const UNAVAILABLE_MESSAGES = [/connection terminated/i, /timeout exceeded when trying to connect/i, /connection is closed/i];

/**
 * Whether an error says that Postgres is unreachable or refusing connections,
 * rather than that one request or change was wrong: the work is to be tried
 * again later (a 503 with Retry-After for a request, a retry for a job).
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  for (let current: unknown = error, depth = 0; current && depth < 5; depth += 1) {
    if (
      current instanceof ConnectionError ||
      current instanceof BackendTerminatedError ||
      current instanceof BackendTerminatedUnexpectedlyError
    )
      return true;
    const { code, message, cause } = current as { code?: unknown; message?: unknown; cause?: unknown };
    if (typeof code === 'string' && (code.startsWith('08') || UNAVAILABLE_CODES.has(code))) return true;
    if (typeof message === 'string' && UNAVAILABLE_MESSAGES.some((pattern) => pattern.test(message))) return true;
    current = cause;
  }
  return false;
}
