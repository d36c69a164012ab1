import type { DatabaseTransactionConnection } from 'slonik';
import { KINDS, LINE_PAYLOAD } from '../catalogue/record-kinds.js';
import { AppError, GENERIC_500_BODY } from '../platform/errors.js';
import type { Logger } from '../platform/logger.js';
import { findLiveRecord } from '../records/record.repository.js';
import { type PreparedWrite, prepareProfileWrite, prepareWrite, storePrepared } from '../records/record.service.js';
import type { InTurnWriter } from '../sync/in-turn.applier.js';
import { holdLanguageForWrite } from '../sync/locks.js';
import { pendingChangeKinds } from '../sync/pending-changes.repository.js';
import { type ChangeOrigin, writeRecords } from '../sync/write.repository.js';
import type { BatchAhead } from './batch.prefetcher.js';
import { BatchProfiles, profileCandidates } from './batch-profiles.js';
import { BatchOvertakenError, type BulkBatchResult, isTransient } from './batch-result.js';
import type { BulkJobRow } from './bulk.repository.js';
import { finishBulkJob, recordBulkProgress } from './bulk.repository.js';
import { type BulkLine, parseBulkLine } from './bulk-line.parser.js';
import { EarlierEffects } from './earlier-effects.js';
import { applyRequestLine } from './request-line.js';

type Connection = DatabaseTransactionConnection;
type LineOutcome = 'ok' | 'wait' | 'language-gone';

/** A line that failed for no reason of its own content that the service can name (logged; reported with the generic message). */
class LineFailedError extends Error {}

/**
 * One batch of a bulk job's lines, applied in the batch's transaction (see
 * applyBulkBatch in bulk-batch.service.ts for the rules): the lines in
 * order, consecutive writes of distinct records gathered into a run that is
 * stored (and applied, when in turn) as one, and what the batch did so far.
 */
export class BatchRun {
  private readonly origin: ChangeOrigin;
  private readonly errors: Array<{ line: number; error: unknown }> = [];
  private readonly effects: EarlierEffects;
  /** Lines stored so far (a run's count only once the run is stored). */
  private saved = 0;
  /** The run being gathered, and its records' keys. */
  private run: PreparedWrite[] = [];
  private runKeys = new Set<string>();
  /** Whether the batch wrote outbox rows: a request line, a write stored alone, or a run not in turn. */
  private queued = false;
  /**
   * The language's shared lock (a writer in flight) is held from the batch's
   * first write to its commit, not while its lines are read and parsed:
   * write_records and write_record take it themselves, a request line takes
   * it here. Taken in a savepoint, it would go with a line rolled back, so
   * line by line it is taken first.
   */
  private holding = false;
  /**
   * The profile rule (interface §4.5) over a block of consecutive profile lines: the language's
   * profiles as the block found them, with the block's own writes
   * (bulk/batch-profiles.ts). Any other line ends the block; line by line,
   * each profile line looks itself up, as its single request does.
   */
  private profiles: BatchProfiles | undefined;
  /** Lines parsed by a block's look ahead, so their own turn does not parse them again. */
  private readonly parsedAhead = new Map<number, BulkLine>();

  constructor(
    private readonly tx: Connection,
    private readonly job: BulkJobRow,
    private readonly lines: ReadonlyArray<{ line_no: number; line: string }>,
    private readonly options: { lineByLine: boolean; ahead?: BatchAhead; inTurn?: InTurnWriter; logger?: Logger },
  ) {
    this.origin = {
      accountId: job.account_id,
      languageId: job.language_id,
      actor: job.client_id,
      requestId: job.request_id ?? job.id,
    };
    this.effects = new EarlierEffects(
      () => pendingChangeKinds(tx, job.lang_key, this.origin.requestId),
      async (record) => (await findLiveRecord(tx, job.lang_key, record.kind, record.id)) !== null,
    );
  }

  /** Takes the batch's lines in order, stores what is left of the run and records the job's progress. */
  async apply(): Promise<BulkBatchResult> {
    const { job, lines } = this;
    if (this.options.lineByLine) await this.holdLanguage();
    /** Lines taken (applied or refused); fewer than read when a line must wait for the file's queued effects. */
    let taken = 0;
    let waitForRequest: string | undefined;
    for (const { line_no: line, line: text } of lines) {
      try {
        const outcome = await (this.options.lineByLine ? this.applyLineAlone(line, text) : this.applyLine(this.tx, line, text));
        if (outcome === 'language-gone') return this.languageGone();
        if (outcome === 'wait') {
          waitForRequest = this.origin.requestId;
          break;
        }
      } catch (error) {
        if (error instanceof LineFailedError) this.errors.push({ line, error: GENERIC_500_BODY });
        else if (error instanceof AppError) this.errors.push({ line, error: error.body() });
        else throw error;
      }
      taken += 1;
    }
    if (taken === 0) return { done: false, applied: 0, langKey: job.lang_key, waitForRequest };
    if (!(await this.flush(this.tx))) return this.languageGone();
    const lastLine = lines[taken - 1]!.line_no;
    await recordBulkProgress(this.tx, job.id, { nextLine: lastLine, saved: this.saved, errors: this.errors });
    // The batch that stores the last line ends the job: its lines may be applied with it (in turn), and a file whose every line is applied reads completed.
    const done = job.saved + job.failed + this.saved + this.errors.length >= job.lines;
    if (done) await finishBulkJob(this.tx, job.id, 'completed', null);
    return {
      done,
      applied: taken,
      langKey: job.lang_key,
      lastLine,
      queued: this.queued,
      appliedInTurn: this.options.inTurn?.appliedChanges ?? 0,
      waitForRequest,
    };
  }

  private async holdLanguage(): Promise<void> {
    if (this.holding) return;
    await holdLanguageForWrite(this.tx, this.job.lang_key);
    this.holding = true;
  }

  /** Stores the run, applying it at once when it is in turn; false when the language is gone. */
  private async flush(conn: Connection): Promise<boolean> {
    if (this.run.length === 0) return true;
    const { inTurn } = this.options;
    const status = inTurn
      ? await inTurn.writeRun(this.run, this.origin)
      : (await writeRecords(conn, this.job.lang_key, this.run, this.origin)).status;
    if (status === 'overtaken') throw new BatchOvertakenError(`bulk job ${this.job.id}: a run was overtaken by a concurrent write`);
    if (status === 'language-gone') return false;
    if (status !== 'applied') {
      this.queued = true;
      for (const write of this.run) this.effects.queuedWrite(write.kind, write.payload);
    }
    this.saved += this.run.length;
    this.forgetRun();
    return true;
  }

  private forgetRun(): void {
    this.run = [];
    this.runKeys = new Set();
  }

  private async languageGone(): Promise<BulkBatchResult> {
    await finishBulkJob(this.tx, this.job.id, 'failed', `Language '${this.job.language_id}' was deleted`);
    return { done: true, applied: this.saved, appliedInTurn: this.options.inTurn?.appliedChanges ?? 0 };
  }

  /** The bodies of the profile lines of the block starting at line `first`. */
  private *profileBodies(first: number): Generator<unknown> {
    const { lines, job, parsedAhead } = this;
    for (let index = lines.findIndex((item) => item.line_no === first); index < lines.length; index += 1) {
      const { line_no: line, line: text } = lines[index]!;
      const early = this.options.ahead?.taken.get(line);
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
  }

  /** A profile line's write, matched in the block (started here, after the run before it is stored). */
  private async prepareInBlock(conn: Connection, line: number, body: unknown): Promise<PreparedWrite | 'language-gone'> {
    if (!this.profiles) {
      if (!(await this.flush(conn))) return 'language-gone';
      this.profiles = await BatchProfiles.load(conn, this.job.lang_key, profileCandidates(this.profileBodies(line)));
    }
    const prepared = await prepareProfileWrite(this.profiles, body, this.job.api_version);
    this.profiles.wrote(prepared);
    return prepared;
  }

  /** One line, as its single request would be taken; writes may wait in the run. What was done ahead is not done again. */
  private async applyLine(conn: Connection, line: number, text: string): Promise<LineOutcome> {
    const { job, effects } = this;
    const early = this.options.ahead?.taken.get(line);
    if (early && 'error' in early) throw early.error;
    const parsed = early ? early.line : (this.parsedAhead.get(line) ?? parseBulkLine(text, job.api_version));
    const blockOfProfiles = !this.options.lineByLine && parsed.type === 'write' && parsed.kind === 'profile';
    if (!blockOfProfiles) this.profiles = undefined;
    if (parsed.type !== 'write') {
      if (!(await this.flush(conn))) return 'language-gone';
      if (await effects.mustWait(parsed)) return 'wait';
      await this.holdLanguage();
      this.queued = true;
      if (!(await applyRequestLine(conn, job.lang_key, this.origin, parsed))) return 'language-gone';
      if (parsed.type === 'delete') effects.queuedDelete(parsed.kind);
      // A line write is an upsert of its parent that stubs the line's product (catalogue/liveness.ts).
      if (parsed.type === 'line' && !parsed.remove) effects.queuedWrite(parsed.parent, { [LINE_PAYLOAD.product]: parsed.productId });
      this.saved += 1;
      return 'ok';
    }
    // A profile line alone looks up the profiles stored so far; a required record (a purchase event's order) is checked alone.
    const alone = (parsed.kind === 'profile' && !blockOfProfiles) || Boolean(KINDS[parsed.kind].requires);
    if (alone && !(await this.flush(conn))) return 'language-gone';
    if (alone && (await effects.mustWait(parsed))) return 'wait';
    if (early && 'prepareError' in early) throw early.prepareError;
    let prepared: PreparedWrite;
    if (early?.prepared) prepared = early.prepared;
    else if (blockOfProfiles) {
      const inBlock = await this.prepareInBlock(conn, line, parsed.body);
      if (inBlock === 'language-gone') return inBlock;
      prepared = inBlock;
    } else prepared = await prepareWrite(conn, job.lang_key, parsed.kind, parsed.body, job.api_version);
    if (alone) {
      this.queued = true;
      if (!(await storePrepared(conn, job.lang_key, prepared, this.origin))) return 'language-gone';
      effects.queuedWrite(prepared.kind, prepared.payload);
      this.saved += 1;
      return 'ok';
    }
    const key = `${prepared.kind}\u0000${prepared.id}`;
    const createdGiven = Boolean(prepared.times.created_at);
    const { run } = this;
    if ((this.runKeys.has(key) || (run.length > 0 && Boolean(run[0]!.times.created_at) !== createdGiven)) && !(await this.flush(conn)))
      return 'language-gone';
    this.run.push(prepared);
    this.runKeys.add(key);
    return 'ok';
  }

  /** One line in a savepoint of its own, stored at once: whatever it does wrong stays that line's error. */
  private async applyLineAlone(line: number, text: string): Promise<LineOutcome> {
    const savedBefore = this.saved;
    /** Back to before the line: nothing of a rolled-back savepoint stays in the run or the count. */
    const forgetLine = () => {
      this.saved = savedBefore;
      this.forgetRun();
    };
    try {
      return await this.tx.transaction(async (savepoint) => {
        // slonik runs this again after a deadlock or a serialization failure: each attempt starts from the line alone.
        forgetLine();
        const outcome = await this.applyLine(savepoint, line, text);
        if (outcome === 'ok' && !(await this.flush(savepoint))) return 'language-gone';
        return outcome;
      });
    } catch (error) {
      forgetLine();
      if (isTransient(error) || error instanceof AppError) throw error;
      this.options.logger?.error({ err: error, bulk_job: this.job.id, line }, 'bulk line could not be applied');
      throw new LineFailedError();
    }
  }
}
