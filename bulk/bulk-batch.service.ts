/*
 * The worker's half of a bulk file: applying one batch of its stored lines in
 * one transaction, retried when the failure is transient, in turn with the
 * language's other writers.
 */
import type { DatabaseTransactionConnection } from 'slonik';
import { isStorableText } from '../catalogue/primitives.schema.js';
import { KINDS, LINE_PAYLOAD } from '../catalogue/record-kinds.js';
import { type Database, isDatabaseUnavailable } from '../platform/db.js';
import { AppError, GENERIC_500_BODY, LanguageNotFoundError, RecordNotFoundError } from '../platform/errors.js';
import type { Logger } from '../platform/logger.js';
import { deleteLineIn, putLineIn } from '../records/order-lines.service.js';
import { findLiveRecord } from '../records/record.repository.js';
import { changeLinkIn, type PreparedWrite, prepareProfileWrite, prepareWrite, storePrepared } from '../records/record.service.js';
import { InTurnWriter } from '../sync/in-turn.applier.js';
import { holdLanguageForWrite } from '../sync/locks.js';
import { pendingChangeKinds } from '../sync/pending-changes.repository.js';
import { type ChangeOrigin, deleteRecord, writeRecords } from '../sync/write.repository.js';
import type { BatchAhead, BatchPrefetcher } from './batch.prefetcher.js';
import { BatchProfiles, profileCandidates } from './batch-profiles.js';
import { finishBulkJob, lockBulkJob, readBulkLines, recordBulkBatchFailure, recordBulkProgress } from './bulk.repository.js';
import { type BulkLine, parseBulkLine } from './bulk-line.parser.js';
import { EarlierEffects } from './earlier-effects.js';

/**
 * A delete, link or line write of a bulk line, as its single request makes
 * it, in the batch's transaction (which holds the language).
 * @returns false when the language is gone.
 * @throws {AppError} the line's client error, as the single request answers it.
 */
export async function applyRequestLine(
  tx: DatabaseTransactionConnection,
  langKey: number,
  origin: ChangeOrigin,
  line: Exclude<BulkLine, { type: 'write' }>,
): Promise<boolean> {
  try {
    switch (line.type) {
      case 'delete': {
        const resource = KINDS[line.kind].resource;
        if (!isStorableText(line.id)) throw new RecordNotFoundError(resource);
        if (!(await deleteRecord(tx, langKey, line.kind, line.id, origin))) throw new RecordNotFoundError(resource);
        return true;
      }
      case 'link':
        await changeLinkIn(tx, langKey, origin, line.link, line.productId, line.otherId, line.action);
        return true;
      case 'line':
        if (line.remove) await deleteLineIn(tx, langKey, origin, line.parent, line.parentId, line.productId);
        else await putLineIn(tx, langKey, origin, line.parent, line.parentId, line.productId, line.body);
        return true;
    }
  } catch (error) {
    if (error instanceof LanguageNotFoundError) return false;
    throw error;
  }
}

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

export class BatchOvertakenError extends Error {}

export const OVERTAKEN_RETRIES = 5;

/** A batch that fails this many times in a row, for no line's content and with the database up, ends the job as failed. */
export const MAX_BATCH_ATTEMPTS = 5;

/** The lines one batch reads at most (as stored; at least one line), so a file of 1 MiB lines does not fill the worker's memory. */
export const BATCH_LINE_BYTES = 16 * 1024 * 1024;

/** Errors that another try will probably not see: the database away, or a concurrent write that took a number first. */
export const isTransient = (error: unknown) => isDatabaseUnavailable(error) || error instanceof BatchOvertakenError;

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

export async function applyRetryingOvertaken(
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

export type Connection = DatabaseTransactionConnection;

/** A line that failed for no reason of its own content that the service can name (logged; reported with the generic message). */
export class LineFailedError extends Error {}

export async function applyBatchOnce(
  tx: Connection,
  jobId: string,
  options: BulkBatchOptions,
  lineByLine: boolean,
  readAhead: BatchAhead | undefined,
): Promise<BulkBatchResult> {
  const { batchSize, logger } = options;
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
  const inTurn = lineByLine ? undefined : await InTurnWriter.open(tx, job.lang_key, { sliceSize: options.sliceSize, logger });
  /*
   * The language's shared lock (a writer in flight) is held from the batch's
   * first write to its commit, not while its lines are read and parsed:
   * write_records and write_record take it themselves, a request line takes
   * it here. Taken in a savepoint, it would go with a line rolled back, so
   * line by line it is taken first.
   */
  let holding = false;
  const holdLanguage = async () => {
    if (holding) return;
    await holdLanguageForWrite(tx, job.lang_key);
    holding = true;
  };
  if (lineByLine) await holdLanguage();
  const origin: ChangeOrigin = {
    accountId: job.account_id,
    languageId: job.language_id,
    actor: job.client_id,
    requestId: job.request_id ?? jobId,
  };
  const errors: Array<{ line: number; error: unknown }> = [];
  const effects = new EarlierEffects(
    () => pendingChangeKinds(tx, job.lang_key, origin.requestId),
    async (record) => (await findLiveRecord(tx, job.lang_key, record.kind, record.id)) !== null,
  );
  let saved = 0;
  let run: PreparedWrite[] = [];
  let runKeys = new Set<string>();
  /** Whether the batch wrote outbox rows: a request line, a write stored alone, or a run not in turn. */
  let queued = false;
  /** Stores the run, applying it at once when it is in turn; false when the language is gone. */
  const flush = async (conn: Connection): Promise<boolean> => {
    if (run.length === 0) return true;
    const status = inTurn ? await inTurn.writeRun(run, origin) : (await writeRecords(conn, job.lang_key, run, origin)).status;
    if (status === 'overtaken') throw new BatchOvertakenError(`bulk job ${jobId}: a run was overtaken by a concurrent write`);
    if (status === 'language-gone') return false;
    if (status !== 'applied') {
      queued = true;
      for (const write of run) effects.queuedWrite(write.kind, write.payload);
    }
    saved += run.length;
    run = [];
    runKeys = new Set();
    return true;
  };
  /**
   * The profile rule (interface §4.5) over a block of consecutive profile lines: the language's
   * profiles as the block found them, with the block's own writes
   * (bulk/batch-profiles.ts). Any other line ends the block; line by line,
   * each profile line looks itself up, as its single request does.
   */
  let profiles: BatchProfiles | undefined;
  /** Lines parsed by a block's look ahead, so their own turn does not parse them again. */
  const parsedAhead = new Map<number, BulkLine>();
  /** The bodies of the profile lines of the block starting at line `first`. */
  const profileBodies = function* (first: number): Generator<unknown> {
    for (let index = lines.findIndex((item) => item.line_no === first); index < lines.length; index += 1) {
      const { line_no: line, line: text } = lines[index]!;
      const early = ahead?.taken.get(line);
      let parsed: BulkLine | undefined = early && 'line' in early ? early.line : parsedAhead.get(line);
      if (!parsed && !early) {
        try {
          parsed = parseBulkLine(text, job.api_version);
          parsedAhead.set(line, parsed);
        } catch (error) {
          // A line refused as it is read touches no profile; anything else is the line's own turn's to meet.
          if (error instanceof AppError) continue;
          break;
        }
      }
      if (!parsed) continue;
      if (parsed.type !== 'write' || parsed.kind !== 'profile') return;
      yield parsed.body;
    }
  };
  /** A profile line's write, matched in the block (started here, after the run before it is stored). */
  const prepareInBlock = async (conn: Connection, line: number, body: unknown): Promise<PreparedWrite | 'language-gone'> => {
    if (!profiles) {
      if (!(await flush(conn))) return 'language-gone';
      profiles = await BatchProfiles.load(conn, job.lang_key, profileCandidates(profileBodies(line)));
    }
    const prepared = await prepareProfileWrite(profiles, body, job.api_version);
    profiles.wrote(prepared);
    return prepared;
  };
  const languageGone = async () => {
    await finishBulkJob(tx, jobId, 'failed', `Language '${job.language_id}' was deleted`);
    return { done: true, applied: saved, appliedInTurn: inTurn?.appliedChanges ?? 0 };
  };
  /** One line, as its single request would be taken; writes may wait in the run. What was done ahead is not done again. */
  const applyLine = async (conn: Connection, line: number, text: string): Promise<'ok' | 'wait' | 'language-gone'> => {
    const early = ahead?.taken.get(line);
    if (early && 'error' in early) throw early.error;
    const parsed = early ? early.line : (parsedAhead.get(line) ?? parseBulkLine(text, job.api_version));
    const blockOfProfiles = !lineByLine && parsed.type === 'write' && parsed.kind === 'profile';
    if (!blockOfProfiles) profiles = undefined;
    if (parsed.type !== 'write') {
      if (!(await flush(conn))) return 'language-gone';
      if (await effects.mustWait(parsed)) return 'wait';
      await holdLanguage();
      queued = true;
      if (!(await applyRequestLine(conn, job.lang_key, origin, parsed))) return 'language-gone';
      if (parsed.type === 'delete') effects.queuedDelete(parsed.kind);
      // A line write is an upsert of its parent that stubs the line's product (catalogue/liveness.ts).
      if (parsed.type === 'line' && !parsed.remove) effects.queuedWrite(parsed.parent, { [LINE_PAYLOAD.product]: parsed.productId });
      saved += 1;
      return 'ok';
    }
    // A profile line alone looks up the profiles stored so far; a required record (a purchase event's order) is checked alone.
    const alone = (parsed.kind === 'profile' && !blockOfProfiles) || Boolean(KINDS[parsed.kind].requires);
    if (alone && !(await flush(conn))) return 'language-gone';
    if (alone && (await effects.mustWait(parsed))) return 'wait';
    if (early && 'prepareError' in early) throw early.prepareError;
    let prepared: PreparedWrite;
    if (early?.prepared) prepared = early.prepared;
    else if (blockOfProfiles) {
      const inBlock = await prepareInBlock(conn, line, parsed.body);
      if (inBlock === 'language-gone') return inBlock;
      prepared = inBlock;
    } else prepared = await prepareWrite(conn, job.lang_key, parsed.kind, parsed.body, job.api_version);
    if (alone) {
      queued = true;
      if (!(await storePrepared(conn, job.lang_key, prepared, origin))) return 'language-gone';
      effects.queuedWrite(prepared.kind, prepared.payload);
      saved += 1;
      return 'ok';
    }
    const key = `${prepared.kind}\u0000${prepared.id}`;
    const createdGiven = Boolean(prepared.times.created_at);
    if ((runKeys.has(key) || (run.length > 0 && Boolean(run[0]!.times.created_at) !== createdGiven)) && !(await flush(conn)))
      return 'language-gone';
    run.push(prepared);
    runKeys.add(key);
    return 'ok';
  };
  /** One line in a savepoint of its own, stored at once: whatever it does wrong stays that line's error. */
  const applyLineAlone = async (line: number, text: string): Promise<'ok' | 'wait' | 'language-gone'> => {
    const savedBefore = saved;
    /** Back to before the line: nothing of a rolled-back savepoint stays in the run or the count. */
    const forgetLine = () => {
      saved = savedBefore;
      run = [];
      runKeys = new Set();
    };
    try {
      return await tx.transaction(async (savepoint) => {
        // slonik runs this again after a deadlock or a serialization failure: each attempt starts from the line alone.
        forgetLine();
        const outcome = await applyLine(savepoint, line, text);
        if (outcome === 'ok' && !(await flush(savepoint))) return 'language-gone';
        return outcome;
      });
    } catch (error) {
      forgetLine();
      if (isTransient(error) || error instanceof AppError) throw error;
      logger?.error({ err: error, bulk_job: jobId, line }, 'bulk line could not be applied');
      throw new LineFailedError();
    }
  };
  /** Lines taken (applied or refused); fewer than read when a line must wait for the file's queued effects. */
  let taken = 0;
  let waitForRequest: string | undefined;
  for (const { line_no: line, line: text } of lines) {
    try {
      const outcome = await (lineByLine ? applyLineAlone(line, text) : applyLine(tx, line, text));
      if (outcome === 'language-gone') return languageGone();
      if (outcome === 'wait') {
        waitForRequest = origin.requestId;
        break;
      }
    } catch (error) {
      if (error instanceof LineFailedError) errors.push({ line, error: GENERIC_500_BODY });
      else if (error instanceof AppError) errors.push({ line, error: error.body() });
      else throw error;
    }
    taken += 1;
  }
  if (taken === 0) return { done: false, applied: 0, langKey: job.lang_key, waitForRequest };
  if (!(await flush(tx))) return languageGone();
  const lastLine = lines[taken - 1]!.line_no;
  await recordBulkProgress(tx, jobId, { nextLine: lastLine, saved, errors });
  // The batch that stores the last line ends the job: its lines may be applied with it (in turn), and a file whose every line is applied reads completed.
  const done = job.saved + job.failed + saved + errors.length >= job.lines;
  if (done) await finishBulkJob(tx, jobId, 'completed', null);
  return {
    done,
    applied: taken,
    langKey: job.lang_key,
    lastLine,
    queued,
    appliedInTurn: inTurn?.appliedChanges ?? 0,
    waitForRequest,
  };
}
