import { createPgDriverFactory } from '@slonik/pg-driver';
import { type CommonQueryMethods, type DriverFactory, sql } from 'slonik';
import type { StatementNames } from './statement-names.js';

/*
 * COPY FROM STDIN on slonik's connections, inside their transactions.
 *
 * The applier writes a bulk batch's audit entries (about four a line, each
 * with its changes) in the batch's transaction: the largest statement of a
 * bulk file, which Postgres takes most cheaply as COPY (docs/decisions.md,
 * "Hot paths"). slonik 47 offers no COPY FROM, and
 * its pg driver only `query` and `stream`; the pg client under it takes any
 * "submittable" query object, which is how COPY is run (CopyIn, below).
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

/** The part of pg's connection a COPY writes to (pg/lib/connection.js). */
interface CopyConnection {
  query(text: string): void;
  sendCopyFromChunk(chunk: Buffer): void;
  endCopyFrom(): void;
}

/**
 * A COPY FROM STDIN that pg's client runs as any submittable query (the
 * methods it calls are the message handlers), and that the pg driver awaits
 * as it awaits a query's result.
 *
 * The data goes right behind the statement, not after Postgres' answer to it
 * (CopyInResponse) as pg-copy-streams sends it: Postgres reads the messages
 * in order, so it takes the data as soon as it is in copy-in mode, and when
 * the statement fails it ignores the data that follows ("Accept but ignore
 * these messages, per protocol spec", PostgresMain). Waiting for the answer
 * would cost a round trip, and more: a batch builds its audit entries' text
 * while its links are copied, and data waiting for the event loop would wait
 * for that text.
 */
class CopyIn implements PromiseLike<CopyResult> {
  private rowCount = 0;
  private readonly done: Promise<CopyResult>;
  private settle!: { resolve: (result: CopyResult) => void; reject: (error: Error) => void };

  constructor(
    private readonly statement: string,
    private readonly data: Buffer,
  ) {
    this.done = new Promise((resolve, reject) => {
      this.settle = { resolve, reject };
    });
  }

  submit(connection: CopyConnection): void {
    connection.query(this.statement);
    connection.sendCopyFromChunk(this.data);
    connection.endCopyFrom();
  }

  /** The data is on its way already. */
  handleCopyInResponse(): void {}

  handleCommandComplete(message: { text?: string }): void {
    const copied = /^COPY (\d+)/.exec(message.text ?? '');
    if (copied) this.rowCount = Number(copied[1]);
  }

  handleReadyForQuery(): void {
    this.settle.resolve({ command: 'COPY', fields: [], rowCount: this.rowCount, rows: [] });
  }

  /** pg's client calls this for an ErrorResponse (then no handleReadyForQuery), and for a connection it cannot use. */
  handleError(error: Error): void {
    this.settle.reject(error);
  }

  // biome-ignore lint/suspicious/noThenProperty: the pg driver awaits what pg's client.query returns; for this query, this object.
  then<T = CopyResult, E = never>(
    onFulfilled?: ((result: CopyResult) => T | PromiseLike<T>) | null,
    onRejected?: ((reason: unknown) => E | PromiseLike<E>) | null,
  ): PromiseLike<T | E> {
    return this.done.then(onFulfilled, onRejected);
  }
}

/**
 * slonik's pg driver, with COPY FROM STDIN for the queries copyInto makes.
 * With `names`, every other statement the text has a name for is sent as a
 * named prepared statement (platform/statement-names.ts).
 */
export function createCopyingDriverFactory(names?: StatementNames): DriverFactory {
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
            if (!copy || values?.length !== 1 || typeof data !== 'string') {
              const name = names?.nameOf(text);
              if (name === undefined) return client.query(text, values);
              // As with a COPY, pg's client.query takes the query config the pg driver hands on.
              return client.query({ name, text } as unknown as string, values);
            }
            // The pg driver hands its first argument to pg's client.query, which runs a submittable as it is.
            return client.query(new CopyIn(copy[1]!, Buffer.from(data)) as unknown as string);
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
