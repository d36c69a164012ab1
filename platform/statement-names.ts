import { createHash } from 'node:crypto';

/*
 * Names for the statements a pool prepares (platform/db.ts,
 * `prepareStatements`). A statement sent with a name is parsed and planned
 * by Postgres once per connection, not once per execution; for the
 * statements of a webhook delivery (a dozen CTEs around the feed's page)
 * planning costs more than running them.
 *
 * A name is a hash of the text, so each connection that meets a text
 * prepares it under the same name, and pg's client (which remembers what
 * each connection has prepared) sends only the name after that. Postgres
 * keeps a prepared statement for the connection's life, so a pool names at
 * most `max` distinct texts; any text after those goes unnamed, planned each
 * time as before. A pool given this must send few distinct texts.
 */

/** A statement's name: the same text gets the same name in every pool and process. */
export const statementName = (text: string): string => `s_${createHash('sha1').update(text).digest('base64url')}`;

/** Distinct texts a pool names at most, unless told otherwise. */
export const MAX_STATEMENT_NAMES = 200;

export class StatementNames {
  private readonly names = new Map<string, string>();

  constructor(private readonly max: number = MAX_STATEMENT_NAMES) {}

  /** The text's name, or undefined when `max` other texts have names already. */
  nameOf(text: string): string | undefined {
    let name = this.names.get(text);
    if (name === undefined && this.names.size < this.max) {
      name = statementName(text);
      this.names.set(text, name);
    }
    return name;
  }
}
