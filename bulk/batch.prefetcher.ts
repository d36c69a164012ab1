import { AsyncResource } from 'node:async_hooks';
import { setImmediate as yieldToEvents } from 'node:timers/promises';
import type { CommonQueryMethods } from 'slonik';
import { AppError } from '../platform/errors.js';
import { type Generation, type PreparedWrite, prepareWriteAlone } from '../records/record.service.js';
import { readBulkLines } from './bulk.repository.js';
import { type BulkLine, parseBulkLine } from './bulk-line.parser.js';

/** A line as far as it can be taken without the database: its request, or its client error, and a record write's checked body. */
export type LineAhead = { error: AppError } | { line: BulkLine; prepared?: PreparedWrite } | { line: BulkLine; prepareError: AppError };

export interface BatchAhead {
  /** The line the batch starts after: used only by a batch that starts there (the job's `next_line`). */
  after: number;
  lines: ReadonlyArray<{ line_no: number; line: string }>;
  /** By line number; a line missing here is taken in the batch as usual. */
  taken: ReadonlyMap<number, LineAhead>;
}

/** How much a batch reads: the read-ahead reads the next batch with the limits the current one had. */
export interface BatchLimits {
  batchSize: number;
  maxBytes: number;
}

/** Lines checked between two looks at the event loop, so the batch in flight is never held up by more than a few of them. */
const LINES_PER_TURN = 64;

/**
 * Reads and checks a bulk file's next batch while the batch before it is in
 * Postgres. A batch is one chain: Node reads, parses and validates its lines,
 * then waits for Postgres to store them and apply their effects. Without
 * this, the worker's share of a line (a third of it) and Postgres' share
 * were paid one after the other; with it, the next batch's parsing and
 * validation are done while the worker waits for the current one's
 * statements (docs/decisions.md, "A bulk file's next batch is read and
 * checked while the current one is in Postgres").
 *
 * Only what needs no database state is done ahead: reading the lines (a
 * stored file's lines never change until the job ends), parsing them, and
 * checking the bodies of record writes whose id is in the body. A batch
 * uses what was read ahead only if it starts exactly where the read-ahead
 * did (the job's `next_line` under the job's lock), and otherwise, or for a
 * line not taken ahead, does what it always did. Each outcome, error
 * included, is the one the batch would have got by itself, and the batch
 * raises it at the same point in the line's handling, so what a file does
 * and reports is unchanged.
 *
 * One per slice of a job; holds at most one batch ahead.
 */
export class BatchPrefetcher {
  private ahead?: { jobId: string; batch: Promise<BatchAhead | undefined> };
  /**
   * `read`, run in the async context the prefetcher was made in. start() is
   * called from inside a batch's transaction, and slonik refuses a pool
   * query begun in a transaction's context (a guard against a transaction
   * waiting for a second connection). The read-ahead is meant to be outside
   * the transaction, on a connection of its own, and no batch waits for it
   * while holding one: take() comes before the next transaction.
   */
  private readonly launch: (jobId: string, after: number, generation: Generation, limits: BatchLimits) => Promise<BatchAhead>;

  constructor(
    private readonly db: CommonQueryMethods,
    /** No read-ahead is started after this time (ms since the epoch): its batch would not run in this slice. */
    private readonly until: number = Number.POSITIVE_INFINITY,
  ) {
    this.launch = AsyncResource.bind((jobId: string, after: number, generation: Generation, limits: BatchLimits) =>
      this.read(jobId, after, generation, limits),
    );
  }

  /** Starts reading and checking the job's lines after line `after`, as many as a batch reads. */
  start(jobId: string, after: number, generation: Generation, limits: BatchLimits): void {
    if (Date.now() >= this.until) {
      this.ahead = undefined;
      return;
    }
    const batch = this.launch(jobId, after, generation, limits).catch(() => undefined);
    this.ahead = { jobId, batch };
  }

  /**
   * The job's batch read ahead, if any (a failed read-ahead leaves it to the
   * batch). Called outside a transaction. Taken once: a batch tried again
   * reads its lines itself, so no outcome is shared by two tries.
   */
  async take(jobId: string): Promise<BatchAhead | undefined> {
    const ahead = this.ahead;
    this.ahead = undefined;
    if (!ahead || ahead.jobId !== jobId) return undefined;
    const batch = await ahead.batch;
    return batch && batch.lines.length > 0 ? batch : undefined;
  }

  private async read(jobId: string, after: number, generation: Generation, limits: BatchLimits): Promise<BatchAhead> {
    const lines = await readBulkLines(this.db, jobId, after, limits.batchSize, limits.maxBytes);
    const taken = new Map<number, LineAhead>();
    for (let index = 0; index < lines.length; index += 1) {
      if (index > 0 && index % LINES_PER_TURN === 0) await yieldToEvents();
      const { line_no: lineNo, line: text } = lines[index]!;
      const outcome = takeLine(text, generation);
      if (outcome) taken.set(lineNo, outcome);
    }
    return { after, lines, taken };
  }
}

/** undefined when the line's handling threw something other than a client error: the batch meets it again itself. */
function takeLine(text: string, generation: Generation): LineAhead | undefined {
  let line: BulkLine;
  try {
    line = parseBulkLine(text, generation);
  } catch (error) {
    return error instanceof AppError ? { error } : undefined;
  }
  if (line.type !== 'write' || line.kind === 'profile') return { line };
  try {
    return { line, prepared: prepareWriteAlone(line.kind, line.body, generation) };
  } catch (error) {
    return error instanceof AppError ? { line, prepareError: error } : undefined;
  }
}
