import type { Logger } from 'pino';
import type { Database } from '../../shared/db.js';
import { EntryApplier } from './applier.js';
import { applyRun, splitIntoSegments } from './batch-applier.js';
import {
  deleteOutboxEntries,
  insertAuditEntries,
  markOutboxEntryFailed,
  readHorizon,
  readOutboxBatch,
  tryLockApplier,
  type AuditEntry,
  type OutboxEntry,
} from './effects.repository.js';

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
  const batchSize = options.batchSize ?? 2_000;
  const deadline = Date.now() + (options.budgetMs ?? 5_000);
  const maxAttempts = options.maxEntryAttempts ?? 3;
  let applied = 0;
  const cursor = { after: 0 };
  while (Date.now() < deadline) {
    const horizon = await readHorizon(db, langKey);
    let progressed = false;
    for (;;) {
      const outcome = await applyBatch(db, langKey, cursor, horizon, batchSize, maxAttempts, logger);
      if (outcome === 'busy') return { applied, busy: true };
      applied += outcome;
      if (outcome === 0) break;
      progressed = true;
      if (outcome < batchSize || Date.now() >= deadline) break;
    }
    if (!progressed) break;
  }
  return { applied, busy: false };
}

/** Where this drain got to: every change at or before `after` is applied or set aside. */
interface Cursor {
  after: number;
}

async function applyBatch(
  db: Database,
  langKey: number,
  cursor: Cursor,
  horizon: number,
  batchSize: number,
  maxAttempts: number,
  logger: Logger,
): Promise<number | 'busy'> {
  try {
    return await runBatch(db, langKey, cursor, horizon, batchSize, maxAttempts, false);
  } catch (error) {
    if (isConnectionError(error) || error instanceof EntryFailedError) throw error;
    logger.warn({ err: (error as Error).message, lang_key: langKey }, 'batch failed; isolating the failing change');
    return runBatch(db, langKey, cursor, horizon, batchSize, maxAttempts, true, logger);
  }
}

/**
 * One batch in one transaction, runs of independent upserts set-based
 * (batch-applier.ts). `careful` applies one change at a time, each in a
 * savepoint, and stops at the first failure, so order is kept and the failure
 * is recorded.
 */
async function runBatch(
  db: Database,
  langKey: number,
  cursor: Cursor,
  horizon: number,
  batchSize: number,
  maxAttempts: number,
  careful: boolean,
  logger?: Logger,
): Promise<number | 'busy'> {
  let failure: { entry: OutboxEntry; error: Error } | undefined;
  const outcome = await db.transaction(async (tx) => {
    if (!(await tryLockApplier(tx, langKey))) return 'busy' as const;
    const entries = await readOutboxBatch(tx, langKey, cursor.after, horizon, batchSize);
    const audits: AuditEntry[] = [];
    const applied: number[] = [];
    if (!careful) {
      for (const segment of splitIntoSegments(entries)) {
        if (segment.fast) audits.push(...(await applyRun(tx, segment.entries)));
        else for (const entry of segment.entries) audits.push(...(await applyEntry(tx, entry)));
        applied.push(...segment.entries.map((entry) => entry.seq));
      }
    }
    for (const entry of careful ? entries : []) {
      try {
        audits.push(...(await tx.transaction((savepoint) => applyEntry(savepoint, entry))));
        applied.push(entry.seq);
      } catch (error) {
        if (isConnectionError(error)) throw error;
        failure = { entry, error: error as Error };
        await markOutboxEntryFailed(tx, entry.seq, (error as Error).message, maxAttempts);
        break;
      }
    }
    await insertAuditEntries(tx, audits);
    await deleteOutboxEntries(tx, applied);
    return { count: applied.length, last: applied.at(-1) };
  });
  if (outcome === 'busy') return outcome;
  if (outcome.last !== undefined) cursor.after = outcome.last;
  const done = outcome.count;
  if (failure) {
    logger?.error({ err: failure.error, seq: failure.entry.seq, kind: failure.entry.kind }, 'change could not be applied');
    if (done === 0) throw new EntryFailedError(`change ${failure.entry.seq} failed: ${failure.error.message}`);
  }
  return done;
}

async function applyEntry(tx: Parameters<Parameters<Database['transaction']>[0]>[0], entry: OutboxEntry): Promise<AuditEntry[]> {
  const applier = new EntryApplier(tx, entry);
  await applier.apply();
  return applier.audits;
}

function isConnectionError(error: unknown): boolean {
  const name = (error as { name?: string }).name ?? '';
  return ['ConnectionError', 'BackendTerminatedError', 'BackendTerminatedUnexpectedlyError', 'StatementTimeoutError'].includes(name);
}
