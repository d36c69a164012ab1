import type { StoredKind } from '../catalogue/record-kinds.js';
import type { Database } from '../platform/db.js';
import { foldRecordCount, vacuumRecordCounts } from './record-counts.repository.js';

/**
 * An unfiltered total sums this many counter rows at most before the list
 * folds them. Writers fold now and then, but rows pile up where they cannot
 * (a long run of writes in transactions that do not see each other's rows).
 */
export const FOLD_COUNTER_ROWS = 256;
/** Beyond this many folded rows the counter table is also vacuumed, so its scans skip the dead rows again. */
const VACUUM_COUNTER_ROWS = 10_000;
const VACUUM_DELAY_MS = 1_000;

/** The lists' counters being folded in the background: one fold at a time per (language, kind). */
export class CounterFolds {
  private readonly folding = new Set<string>();

  constructor(private readonly db: Database) {}

  /** Folds the counter in the background: the list that noticed it has its total already. */
  foldSoon(langKey: number, kind: StoredKind, rows: number): void {
    const key = `${langKey}:${kind}`;
    if (this.folding.has(key)) return;
    this.folding.add(key);
    const fold = async () => {
      await foldRecordCount(this.db, langKey, kind);
      if (rows < VACUUM_COUNTER_ROWS) return;
      // Statements that overlapped the fold still see its rows, and a vacuum now could not remove them.
      await new Promise((resolve) => setTimeout(resolve, VACUUM_DELAY_MS));
      await vacuumRecordCounts(this.db);
    };
    fold()
      // A failed fold or vacuum leaves the rows summed correctly; the next list tries again.
      .catch(() => undefined)
      .finally(() => this.folding.delete(key));
  }
}
