import type { Database } from '../platform/db.js';
import { CounterFolds } from './counter-folds.js';
import { ListAnchors } from './list-anchors.js';
import type { ListPage } from './list-statement.js';
import { ListStatementCache } from './list-statement-cache.js';

/** What the v2 reads keep in an API process, per server they read from: built once at start-up (api/server.ts) and passed to every read. */
export class ReadCaches {
  /** The list statements built, per structure. */
  readonly statements = new ListStatementCache();
  /** The anchors of deep pages, per list. */
  readonly anchors: ListAnchors;
  /** The counters being folded. */
  readonly folds: CounterFolds;
  /**
   * The response each list page was answered with, for as long as the page is
   * kept (list-page-cache.ts). A kept page's statement and values include
   * the page number, its size and its cursor, so its body never differs.
   */
  readonly answered = new WeakMap<ListPage, Buffer>();

  /**
   * `db`: where the pages these caches serve are read (the primary or one
   * replica: anchors are only valid in that server's snapshots); `primary`:
   * where counters are folded (a write).
   */
  constructor(db: Database, primary: Database = db) {
    this.anchors = new ListAnchors(db);
    this.folds = new CounterFolds(primary);
  }
}
