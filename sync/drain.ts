import type { Logger } from 'pino';
import { BackendTerminatedError, BackendTerminatedUnexpectedlyError, ConnectionError, StatementTimeoutError } from 'slonik';
import type { Database } from '../platform/db.js';
import {
  type AuditEntry,
  deleteOutboxEntries,
  markOutboxEntryFailed,
  type OutboxEntry,
  readHorizon,
  readOutboxBatch,
} from './applier.repository.js';
import { insertAuditEntries } from './audit.repository.js';
import { EntryApplier } from './change.applier.js';
import { tryLockApplier } from './locks.js';
import { applyRun, splitIntoSegments } from './run.applier.js';

export interface DrainOptions {
  batchSize?: number;
  /** Stop after this long; whatever is left is picked up by the next job. */
  budgetMs?: number;
  /** An entry that fails this many times is set aside as failed (sync-status `failed`). */
  maxEntryAttempts?: number;
}

export interface DrainResult {
  applied: number;
  busy: boolean;
}

export class EntryFailedError extends Error {}

/**
 * Applies the pending changes of one language in sequence order, in batches,
 * each batch one transaction that also writes the audit entries and removes
 * the applied outbox rows: a crash anywhere leaves either all or none of a
 * batch applied.
 * @throws {EntryFailedError} when an entry fails and has attempts left (the job is retried with backoff).
 */
export async function drainLanguage(db: Database, langKey: number, logger: Logger, options: DrainOptions = {}): Promise<DrainResult> {
  const drain: Drain = {
    db,
    langKey,
    logger,
    batchSize: options.batchSize ?? 2_000,
    maxAttempts: options.maxEntryAttempts ?? 3,
    after: 0,
  };
  const deadline = Date.now() + (options.budgetMs ?? 5_000);
  let applied = 0;
  while (Date.now() < deadline) {
    const horizon = await readHorizon(db, langKey);
    let progressed = false;
    for (;;) {
      const outcome = await applyBatch(drain, horizon);
      if (outcome === 'busy') return { applied, busy: true };
      applied += outcome;
      if (outcome === 0) break;
      progressed = true;
      if (outcome < drain.batchSize || Date.now() >= deadline) break;
    }
    if (!progressed) break;
  }
  return { applied, busy: false };
}

/** One drain of one language. */
interface Drain {
  db: Database;
  langKey: number;
  logger: Logger;
  batchSize: number;
  maxAttempts: number;
  /** Where this drain got to: every change at or before it is applied or set aside. */
  after: number;
}

async function applyBatch(drain: Drain, horizon: number): Promise<number | 'busy'> {
  try {
    return await runBatch(drain, horizon, false);
  } catch (error) {
    if (isConnectionError(error) || error instanceof EntryFailedError) throw error;
    drain.logger.warn({ err: (error as Error).message, lang_key: drain.langKey }, 'batch failed; isolating the failing change');
    return runBatch(drain, horizon, true);
  }
}

type Tx = Parameters<Parameters<Database['transaction']>[0]>[0];

interface Applied {
  audits: AuditEntry[];
  seqs: number[];
  failure?: { entry: OutboxEntry; error: Error };
}

/** Runs of independent upserts set-based (run.applier.ts), everything else one change at a time. */
async function applyAll(tx: Tx, entries: readonly OutboxEntry[]): Promise<Applied> {
  const result: Applied = { audits: [], seqs: [] };
  for (const segment of splitIntoSegments(entries)) {
    if (segment.fast) {
      result.audits.push(...(await applyRun(tx, segment.run)));
      result.seqs.push(...segment.run.map(({ entry }) => entry.seq));
    } else {
      result.audits.push(...(await applyEntry(tx, segment.entry)));
      result.seqs.push(segment.entry.seq);
    }
  }
  return result;
}

/** One change at a time, each in a savepoint, up to the first failure, which is recorded. */
async function applyCarefully(tx: Tx, entries: readonly OutboxEntry[], maxAttempts: number): Promise<Applied> {
  const result: Applied = { audits: [], seqs: [] };
  for (const entry of entries) {
    try {
      result.audits.push(...(await tx.transaction((savepoint) => applyEntry(savepoint, entry))));
      result.seqs.push(entry.seq);
    } catch (error) {
      if (isConnectionError(error)) throw error;
      result.failure = { entry, error: error as Error };
      await markOutboxEntryFailed(tx, entry.seq, (error as Error).message, maxAttempts);
      break;
    }
  }
  return result;
}

/**
 * One batch in one transaction. `careful` applies one change at a time and
 * stops at the first failure, so order is kept and the failure is recorded.
 */
async function runBatch(drain: Drain, horizon: number, careful: boolean): Promise<number | 'busy'> {
  const outcome = await drain.db.transaction(async (tx) => {
    if (!(await tryLockApplier(tx, drain.langKey))) return 'busy' as const;
    const entries = await readOutboxBatch(tx, drain.langKey, drain.after, horizon, drain.batchSize);
    const result = careful ? await applyCarefully(tx, entries, drain.maxAttempts) : await applyAll(tx, entries);
    await insertAuditEntries(tx, result.audits);
    await deleteOutboxEntries(tx, result.seqs);
    return result;
  });
  if (outcome === 'busy') return outcome;
  drain.after = outcome.seqs.at(-1) ?? drain.after;
  const { failure } = outcome;
  if (failure) {
    drain.logger.error({ err: failure.error, seq: failure.entry.seq, kind: failure.entry.kind }, 'change could not be applied');
    if (outcome.seqs.length === 0) throw new EntryFailedError(`change ${failure.entry.seq} failed: ${failure.error.message}`);
  }
  return outcome.seqs.length;
}

async function applyEntry(tx: Tx, entry: OutboxEntry): Promise<AuditEntry[]> {
  const applier = new EntryApplier(tx, entry);
  await applier.apply();
  return applier.audits;
}

/** Failures of the database rather than of a change: the job retries later instead of setting the change aside. */
function isConnectionError(error: unknown): boolean {
  return (
    error instanceof ConnectionError ||
    error instanceof BackendTerminatedError ||
    error instanceof BackendTerminatedUnexpectedlyError ||
    error instanceof StatementTimeoutError
  );
}
