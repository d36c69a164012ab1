/*
 * The worker's half of a bulk file: applying one batch of its stored lines in
 * one transaction, retried when the failure is transient, in turn with the
 * language's other writers.
 */
import type { DatabaseTransactionConnection } from 'slonik';
import type { Database } from '../platform/db.js';
import type { Logger } from '../platform/logger.js';
import { InTurnWriter } from '../sync/in-turn.applier.js';
import type { BatchAhead, BatchPrefetcher } from './batch.prefetcher.js';
import { BatchOvertakenError, type BulkBatchResult, isTransient } from './batch-result.js';
import { BatchRun } from './batch-run.js';
import { finishBulkJob, lockBulkJob, readBulkLines, recordBulkBatchFailure } from './bulk.repository.js';

export type { BulkBatchResult } from './batch-result.js';

/** How often a batch overtaken by concurrent single writes is numbered again before the failure counts. */
const OVERTAKEN_RETRIES = 5;

/** A batch that fails this many times in a row, for no line's content and with the database up, ends the job as failed. */
const MAX_BATCH_ATTEMPTS = 5;

/** The lines one batch reads at most (as stored; at least one line), so a file of 1 MiB lines does not fill the worker's memory. */
const BATCH_LINE_BYTES = 16 * 1024 * 1024;

export interface BulkBatchOptions {
  /** Lines a batch reads at most. */
  batchSize: number;
  /** Reads and checks the next batch's lines while this one is in Postgres (one per slice of a job). */
  prefetcher?: BatchPrefetcher;
  logger?: Logger;
  /** The applier's slice (APPLIER_SLICE_SIZE), which bounds what a run applied in turn may take (sync/in-turn.applier.ts). */
  sliceSize?: number;
}

/**
 * Applies the next batch of a bulk job's lines in one transaction that also
 * advances `next_line`: a worker that dies resumes exactly where the last
 * committed batch ended, so no line is applied twice and none is lost.
 *
 * Consecutive writes of distinct records are stored together, numbered in
 * line order (write_records); a delete, a profile (its id may depend on the
 * lines before it), a purchase event (its order must exist), a link or line
 * write of a v2 file (each reads the lines before it) or a record already in
 * the run ends the run first, so the meaning is that of the lines sent one by
 * one. A file's lines are read as bodies of the interface it was uploaded to.
 * A run that is its language's next change to apply has its effects applied
 * in the same transaction; otherwise they are queued for the applier
 * (sync/in-turn.applier.ts). The batch that stores the last line ends the job.
 *
 * One line's content never stops the file: a batch that fails for a reason no
 * line reported is taken again line by line, each line alone, and a line that
 * still fails gets the generic error as its own. A batch that fails even so
 * (the database up) is retried a few times, then the job ends `failed` with
 * a reason, instead of being retried for ever.
 */
export async function applyBulkBatch(db: Database, jobId: string, options: BulkBatchOptions): Promise<BulkBatchResult> {
  const { logger } = options;
  try {
    return await applyRetryingOvertaken(db, jobId, options, false);
  } catch (error) {
    if (isTransient(error)) throw error;
    logger?.warn({ err: (error as Error).message, bulk_job: jobId }, 'bulk batch failed; applying it line by line');
  }
  try {
    return { ...(await applyRetryingOvertaken(db, jobId, options, true)), lineByLine: true };
  } catch (error) {
    if (isTransient(error)) throw error;
    const attempt = await recordBulkBatchFailure(db, jobId, MAX_BATCH_ATTEMPTS);
    logger?.error({ err: error, bulk_job: jobId, attempt }, 'bulk batch failed');
    if (attempt === null || attempt >= MAX_BATCH_ATTEMPTS) return { done: true, applied: 0 };
    throw error;
  }
}

async function applyRetryingOvertaken(
  db: Database,
  jobId: string,
  options: BulkBatchOptions,
  lineByLine: boolean,
): Promise<BulkBatchResult> {
  for (let attempt = 1; ; attempt += 1) {
    // Awaited before the transaction, so no batch holds a connection while it waits for the read-ahead's.
    const readAhead = await options.prefetcher?.take(jobId);
    try {
      return await db.transaction((tx) => applyBatchOnce(tx, jobId, options, lineByLine, readAhead));
    } catch (error) {
      // A concurrent single write of a record in the run took a later number first: numbering the run again fixes it.
      if (!(error instanceof BatchOvertakenError) || attempt === OVERTAKEN_RETRIES) throw error;
    }
  }
}

async function applyBatchOnce(
  tx: DatabaseTransactionConnection,
  jobId: string,
  options: BulkBatchOptions,
  lineByLine: boolean,
  readAhead: BatchAhead | undefined,
): Promise<BulkBatchResult> {
  const { batchSize } = options;
  const job = await lockBulkJob(tx, jobId);
  // A job still being received is woken up again once it is stored.
  if (!job || job.status === 'receiving' || job.status === 'completed' || job.status === 'failed') return { done: true, applied: 0 };
  const ahead = readAhead?.after === job.next_line ? readAhead : undefined;
  const lines = ahead?.lines ?? (await readBulkLines(tx, jobId, job.next_line, batchSize, BATCH_LINE_BYTES));
  if (lines.length === 0) {
    await finishBulkJob(tx, jobId, 'completed', null);
    return { done: true, applied: 0, langKey: job.lang_key };
  }
  options.prefetcher?.start(jobId, lines[lines.length - 1]!.line_no, job.api_version, { batchSize, maxBytes: BATCH_LINE_BYTES });
  // Line by line, each line's savepoint would take the applier lock with it when rolled back: its runs are queued.
  const inTurn = lineByLine
    ? undefined
    : await InTurnWriter.open(tx, job.lang_key, { sliceSize: options.sliceSize, logger: options.logger });
  return new BatchRun(tx, job, lines, { lineByLine, ahead, inTurn, logger: options.logger }).apply();
}
