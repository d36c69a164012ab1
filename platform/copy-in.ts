import { createPgDriverFactory } from '@slonik/pg-driver';
import { from as copyFrom } from 'pg-copy-streams';
import { type CommonQueryMethods, type DriverFactory, sql } from 'slonik';

/*
 * COPY FROM STDIN on slonik's connections, inside their transactions.
 *
 * The applier writes a bulk batch's audit entries (about four a line, each
 * with its changes) in the batch's transaction. As one INSERT of a JSON
 * text they were the largest statement of a bulk file, a third of its time
 * in Postgres (pg_stat_activity sampled through a 200k-line file), and
 * Postgres spent about 8 µs an entry on them against 5 for COPY of the same
 * rows (docs/decisions.md, "Hot paths"). slonik 47 offers no COPY FROM, and
 * its pg driver only `query` and `stream`; the pg client under it takes any
 * "submittable" query object, which is how pg-copy-streams runs COPY.
 *
 * So the pools are made with the pg driver wrapped here: a query of the form
 * `COPY ... FROM STDIN $1`, with one text value, is sent as COPY with that
 * value as its data. Everything else goes to the pg driver untouched, and a
 * COPY goes through slonik like any query: its transaction, interceptors,
 * error classes and statement timeout. `copyInto` builds such queries; it is
 * the only way the service sends one.
 */

/** A query copyInto made: the COPY statement, then its data as the only value. */
const COPY_WITH_DATA = /^(COPY [^;]+ FROM STDIN) \$1$/;

/** What the pg driver reads of the pg client's result (createPgDriverFactory's `query`). */
interface CopyResult {
  command: 'COPY';
  fields: [];
  rowCount: number;
  rows: [];
}

/**
 * A COPY FROM STDIN that pg's client runs as any submittable query, and that
 * the pg driver can await as it awaits a query's result.
 */
function copyQuery(statement: string, data: string) {
  const stream = copyFrom(statement);
  const done = new Promise<CopyResult>((resolve, reject) => {
    stream.on('finish', () => resolve({ command: 'COPY', fields: [], rowCount: stream.rowCount, rows: [] }));
    stream.on('error', reject);
  });
  // Held (the stream is corked) until Postgres asks for the data.
  stream.end(data);
  // biome-ignore lint/suspicious/noThenProperty: the pg driver awaits what pg's client.query returns; for this query, the stream.
  return Object.assign(stream, { then: done.then.bind(done) });
}

/** slonik's pg driver, with COPY FROM STDIN for the queries copyInto makes. */
export function createCopyingDriverFactory(): DriverFactory {
  const pgDriverFactory = createPgDriverFactory();
  return async (configuration) => {
    const driver = await pgDriverFactory(configuration);
    return {
      createClient: async () => {
        const client = await driver.createClient();
        return {
          ...client,
          query: (text, values) => {
            const copy = COPY_WITH_DATA.exec(text);
            const data = values?.[0];
            if (!copy || values?.length !== 1 || typeof data !== 'string') return client.query(text, values);
            // The pg driver hands its first argument to pg's client.query, which runs a submittable as it is.
            return client.query(copyQuery(copy[1]!, data) as unknown as string);
          },
        };
      },
    };
  };
}

const NEEDS_ESCAPE = /[\\\t\n\r]/;

/** COPY text format: backslash, tab, newline and carriage return are escaped. */
export function copyEscape(value: string): string {
  // Most values (ids, kinds) have none of them: a test costs a quarter to a half of a replace that finds nothing (15-29 against 66 ns).
  if (!NEEDS_ESCAPE.test(value)) return value;
  return value.replace(/[\\\t\n\r]/g, (character) =>
    character === '\\' ? '\\\\' : character === '\t' ? '\\t' : character === '\n' ? '\\n' : '\\r',
  );
}

/** A text or NULL column of a COPY row. */
export const copyText = (value: string | null): string => (value === null ? '\\N' : copyEscape(value));

/**
 * A JSON value as a COPY column: JSON.stringify leaves no tab, newline or
 * carriage return in its text (they are escaped), so only its backslashes
 * need doubling.
 */
export function copyJson(value: unknown): string {
  const text = JSON.stringify(value);
  return text.includes('\\') ? text.replaceAll('\\', '\\\\') : text;
}

/**
 * Copies `rows` (COPY text format, each ending in a newline) into `table`,
 * in the connection's transaction. The connection must come from a pool made
 * with createCopyingDriverFactory (platform/db.ts makes every pool so).
 */
export async function copyInto(connection: CommonQueryMethods, table: string, columns: readonly string[], rows: string): Promise<void> {
  if (rows.length === 0) return;
  const list = sql.join(
    columns.map((column) => sql.identifier([column])),
    sql.fragment`, `,
  );
  await connection.query(sql.unsafe`COPY ${sql.identifier([table])} (${list}) FROM STDIN ${rows}`);
}
