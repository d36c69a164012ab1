import { setTimeout as sleep } from 'node:timers/promises';
import type { DatabaseTransactionConnection } from 'slonik';
import type { Logger } from '../platform/logger.js';
import { sentReference } from './change-plan.js';
import { type Applied, applyAndAudit, DEFAULT_SLICE_SIZE, isConnectionError } from './drain.js';
import { tryLockApplier } from './locks.js';
import { advanceAppliedThrough, type OutboxEntry, saveChangeProgress } from './outbox.repository.js';
import { lookUpNamedAhead, splitIntoSegments } from './run.applier.js';
import { type ChangeOrigin, queueWrittenRecords, type RecordWrite, type RunWritten, writeRecords } from './write.repository.js';

type Tx = DatabaseTransactionConnection;

/*
 * A bulk file's runs of upserts, written and applied in one transaction when
 * they are the language's next changes (docs/consistency.md, "Bulk runs
 * applied in turn"). Queued, each change of a run was written to the outbox,
 * read back by the drain, applied, marked and deleted in a transaction of its
 * own: about a third of a bulk line's cost in Postgres, and a second chain of
 * work that the file waited for (its backpressure). In turn, the run's effects
 * are applied exactly as the drain would apply them next (the same
 * applyAndAudit, on the same changes, with nothing of the language pending
 * before them), and no outbox row is written at all.
 *
 * A run is in turn when this transaction holds the language's applier lock,
 * no other transaction is writing the language, and no change of it numbered
 * up to the run's last is pending (sync/sql/in_turn.sql says why those looks,
 * in that order, suffice); write_records looks as soon as it has numbered the
 * run. Otherwise, or for what a budget leaves over, the changes get their
 * outbox rows as write_records would have written them, and the drain applies
 * them in number order. A run that is one set-based run has the serial view
 * of the records it creates written with them; if it is not applied after
 * all, its savepoint takes its write with it and it is written again, queued.
 */

/** How many of the drain's slices (units, change.applier.ts) a run applied in turn may take: a bulk batch of 1,000 products with a few lists each. */
const IN_TURN_SLICES = 4;

/**
 * How long a batch tries for the applier lock before it queues its runs: a
 * drain batch holds it a few milliseconds for a few single writes' changes,
 * and up to its slice's time when it applies a backlog.
 */
const APPLIER_LOCK_WAIT_MS = 200;
const APPLIER_LOCK_POLL_MS = 5;

export class InTurnWriter {
  /** Changes whose effects this transaction applied in turn (counted once it commits: the worker's metrics). */
  appliedChanges = 0;

  private constructor(
    private readonly tx: Tx,
    private readonly langKey: number,
    private readonly holdsApplier: boolean,
    private readonly options: { sliceSize?: number; logger?: Logger },
  ) {}

  /**
   * Takes the language's applier lock for the rest of the transaction, if it
   * is free or freed soon; without it every run is queued. Never waited for
   * in Postgres: the caller may hold rows a drain batch is waiting for.
   */
  static async open(tx: Tx, langKey: number, options: { sliceSize?: number; logger?: Logger } = {}): Promise<InTurnWriter> {
    const deadline = Date.now() + APPLIER_LOCK_WAIT_MS;
    let locked = await tryLockApplier(tx, langKey);
    while (!locked && Date.now() < deadline) {
      await sleep(APPLIER_LOCK_POLL_MS);
      locked = await tryLockApplier(tx, langKey);
    }
    return new InTurnWriter(tx, langKey, locked, options);
  }

  /**
   * Writes a run of distinct records (writeRecords) and applies its effects
   * if it is in turn, or queues them.
   * @returns 'applied' when every effect of the run is applied, 'queued' when some are left to the applier.
   */
  async writeRun(writes: readonly RecordWrite[], origin: ChangeOrigin): Promise<'applied' | 'queued' | 'language-gone' | 'overtaken'> {
    const { tx, langKey } = this;
    if (!this.holdsApplier) {
      const { status } = await writeRecords(tx, langKey, writes, origin);
      return status === 'written' ? 'queued' : status;
    }
    const budget = IN_TURN_SLICES * (this.options.sliceSize ?? DEFAULT_SLICE_SIZE);
    // Numbered by the write; nothing else of the run's plan depends on the numbers.
    const entries: OutboxEntry[] = writes.map((write) => ({
      seq: 0,
      lang_key: langKey,
      account_id: origin.accountId,
      language_id: origin.languageId,
      kind: write.kind,
      action: 'upsert',
      record_id: write.id,
      payload: write.payload,
      actor: origin.actor,
      request_id: origin.requestId,
      accepted_at: '',
      progress: null,
    }));
    const segments = splitIntoSegments(entries, budget);
    // One set-based run is written with the serial view of the records it creates (docs/consistency.md, "Bulk runs applied in turn").
    const whole = segments.length === 1 && segments[0]!.fast;
    const refs = whole ? writes.map((write) => sentReference(write.kind, write.payload)?.value ?? null) : undefined;
    let written: RunWritten | undefined;
    let applied: Applied | undefined;
    try {
      applied = await tx.transaction(async (savepoint) => {
        const writing = writeRecords(savepoint, langKey, writes, origin, { queue: false, refs });
        // What the run names is looked up right behind its write: Postgres runs the lookup as soon as the write is done.
        const first = segments[0];
        const ahead = whole && first?.fast ? lookUpNamedAhead(savepoint, first.run) : undefined;
        try {
          written = await writing;
          if (written.status !== 'written') return undefined;
          for (const [index, entry] of entries.entries()) {
            entry.seq = written.seqs[index]!;
            entry.accepted_at = written.acceptedAt;
          }
          if (!written.inTurn) return undefined;
          const { fresh } = written;
          const created = new Set(entries.filter((entry) => fresh.has(entry.seq)).map((entry) => entry.record_id));
          return await applyAndAudit(savepoint, entries, budget, { segments, fresh: created, ahead });
        } finally {
          // No statement of the savepoint is left running when it ends, whatever became of the lookup.
          await ahead?.live.catch(() => undefined);
        }
      });
    } catch (error) {
      if (isConnectionError(error) || written?.status !== 'written' || !written.inTurn) throw error;
      // The savepoint took the run's write with it. Written again with its outbox rows, it is the drain's to apply,
      // one by one where it must, setting aside the change that fails.
      this.options.logger?.warn({ err: (error as Error).message, lang_key: langKey }, 'a run could not be applied in turn; queueing it');
      const again = await writeRecords(tx, langKey, writes, origin);
      return again.status === 'written' ? 'queued' : again.status;
    }
    if (written?.status !== 'written') return written?.status ?? 'overtaken';
    const { acceptedAt } = written;
    const queue = (rest: readonly OutboxEntry[]) =>
      queueWrittenRecords(
        tx,
        langKey,
        origin,
        rest.map((entry) => ({ seq: entry.seq, kind: entry.kind, id: entry.record_id, payload: entry.payload })),
        acceptedAt,
      );
    if (!applied) {
      await queue(entries);
      return 'queued';
    }
    this.appliedChanges += applied.seqs.length;
    const rest = entries.slice(applied.seqs.length);
    await queue(rest);
    if (applied.partial) await saveChangeProgress(tx, applied.partial.seq, applied.partial.progress);
    const last = applied.seqs.at(-1);
    if (last !== undefined) await advanceAppliedThrough(tx, langKey, last);
    return rest.length === 0 ? 'applied' : 'queued';
  }
}
