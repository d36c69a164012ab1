import type pg from 'pg';
import type { QuerySqlToken } from 'slonik';
import type { z } from 'zod';
import { statementName } from '../platform/statement-names.js';
import { createStatementPool, type StatementPoolOptions } from '../platform/statement-pool.js';
import { ListPageCache } from './list-page-cache.js';

/*
 * The v2 list statement (list-statement.ts `listStatement`) sent through
 * `pg` directly, as a named prepared statement with a generic plan, on a
 * pool of its own. Like the single write (sync/prepared-write.ts), it is a
 * statement every request of its route runs, and slonik can give it neither:
 *
 * - Planning the list statement (a dozen CTEs and subqueries) is a large
 *   part of a page's Postgres CPU and most of a sub-listing's. Prepared, it
 *   is planned once per connection.
 * - Postgres picks a custom plan per execution unless told otherwise (the
 *   generic plan's guessed LIMITs made it look dearer), so this pool's
 *   sessions force generic plans. The statement is written for that: every
 *   value that shapes the plan (the kind's shape, the scope, which branches
 *   exist, the page's row bound) is in its text, and only values that do
 *   not change the plan's shape are parameters.
 * - JIT is off on these sessions: a generic plan's cost is computed once
 *   from guessed row counts, and a plan over the JIT threshold would compile
 *   on every execution, costing more than the page itself.
 * - slonik's per-query layers (query id, logger, spans, interceptors) cost
 *   the API more per page than the rest of the list's own work.
 *
 * Only statements without timestamp filters are prepared: a filter's
 * selectivity decides the plan (index range or not), so filtered lists are
 * sent unnamed and planned with their values.
 */

/** Distinct statement texts are few (kind × scope × position); the names of the last this many are kept. */
const MAX_NAMES = 1_000;

/** The list pages' own pool (their connections only); its sessions' settings are this file's. */
export type PreparedReaderOptions = Omit<StatementPoolOptions, 'options' | 'applicationName'> & {
  /** Room for pages served again while unchanged (list-page-cache.ts); 0 or absent keeps none. */
  pageCacheBytes?: number;
};

/** v2 list pages, one prepared statement per statement shape, on a pool of their own. */
export class PreparedReader {
  readonly pool: pg.Pool;
  /** List pages kept, keyed by their statement's name and values. */
  readonly pages: ListPageCache;
  private readonly names = new Map<string, string>();

  constructor({ pageCacheBytes = 0, ...options }: PreparedReaderOptions) {
    this.pool = createStatementPool({
      ...options,
      options: '-c plan_cache_mode=force_generic_plan -c jit=off',
    });
    this.pages = new ListPageCache(this.pool, pageCacheBytes);
  }

  /** The statement's name: the same text always gets the same name, so each connection prepares it once. */
  nameOf(text: string): string {
    let name = this.names.get(text);
    if (!name) {
      if (this.names.size >= MAX_NAMES) this.names.clear();
      name = statementName(text);
      this.names.set(text, name);
    }
    return name;
  }

  /**
   * The one row of a slonik statement, validated by its zod type. `prepare`:
   * as a named statement with a generic plan; otherwise unnamed, planned with its values.
   */
  async one<T extends z.ZodTypeAny>(query: QuerySqlToken<T>, prepare: boolean): Promise<z.infer<T>> {
    // slonik numbers its placeholders $slonik_1, $slonik_2, ... ; Postgres wants $1, $2, ...
    return this.oneOf(query.sql.replace(/\$slonik_(\d+)/g, '$$$1'), query.values as unknown[], query.parser, prepare);
  }

  /** As `one`, for a statement already in Postgres' form (list-statement-cache.ts keeps the list statements built). */
  async oneOf<T extends z.ZodTypeAny>(text: string, values: unknown[], parser: T, prepare: boolean): Promise<z.infer<T>> {
    const result = await this.pool.query({ ...(prepare ? { name: this.nameOf(text) } : {}), text, values });
    if (result.rows.length !== 1) throw new Error(`expected one row, got ${result.rows.length}`);
    return parser.parse(result.rows[0]);
  }

  end(): Promise<void> {
    return this.pool.end();
  }
}
