import { isDatabaseUnavailable } from '../platform/db.js';

export interface BulkBatchResult {
  done: boolean;
  applied: number;
  langKey?: number;
  /** The last line applied, when the batch applied any. */
  lastLine?: number;
  /** The batch left changes for the applier (a batch in turn applies its own: sync/in-turn.applier.ts). */
  queued?: boolean;
  /** Changes whose effects the batch applied itself, in turn. */
  appliedInTurn?: number;
  /** The batch failed as a whole and was taken again line by line. */
  lineByLine?: boolean;
  /**
   * The batch stopped before a line that looks up a record while changes of
   * the file that may stub it or cascade to it are queued: the file goes on
   * once the writer with this request id has none pending (bulk/earlier-effects.ts).
   */
  waitForRequest?: string;
}

/** A run of the batch was overtaken by a concurrent single write of one of its records: the batch is numbered again. */
export class BatchOvertakenError extends Error {}

/** Errors that another try will probably not see: the database away, or a concurrent write that took a number first. */
export const isTransient = (error: unknown) => isDatabaseUnavailable(error) || error instanceof BatchOvertakenError;
