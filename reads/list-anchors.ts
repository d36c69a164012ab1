import type { ListKey } from '../catalogue/list-cursor.js';
import type { StoredKind } from '../catalogue/record-kinds.js';
import type { Database } from '../platform/db.js';
import { readListAnchors } from './list-anchors.repository.js';
import type { ListPosition } from './list-request.js';

/*
 * Deep pages of the big unfiltered lists without walking the index from the
 * start. Each API process keeps (a ListAnchors built at start-up), per (language, kind), the keys of every
 * ANCHOR_STEP-th item and the snapshot they were read in. A page then starts
 * at the nearest anchor before it and skips fewer than ANCHOR_STEP items. The
 * list statement uses an anchor only while nothing at or before it in the
 * list has changed since that snapshot (no live-record counter row written
 * since that touched the list there: see reads/sql/record_counts.sql), so
 * pages stay exact; records added after it, as a growing list's new records
 * are, leave it where it was. Otherwise the page walks from the nearer end
 * and the anchors are read again in the background, at most once per
 * REFRESH_INTERVAL_MS per list (a list changed near its start all the time is walked).
 *
 * A list with no anchors yet (the process's first deep page of it) is read
 * once, and deep pages wait for that read instead of walking: on a large
 * list each deep page would walk hundreds of thousands of index entries until
 * the read finished, and slow the read down. One read at a time per list
 * (single flight); a page waits at most MAX_WAIT_MS and then walks, and so do
 * the pages after it until that read ends.
 */

export const ANCHOR_STEP = 1_000;
/**
 * Pages starting this far in wait for a cold list's first anchors; nearer
 * ones walk (at most this many entries) and start the read in the background.
 */
export const WAIT_FROM = 2 * ANCHOR_STEP;
const MAX_WAIT_MS = 5_000;
const REFRESH_INTERVAL_MS = 5_000;
const MAX_LISTS = 1_000;

/** One list's anchors, and its read under way. */
interface AnchoredList {
  snapshot?: string;
  keys: ListKey[];
  refreshedAt: number;
  /** The read under way, which pages of a list without anchors wait for. */
  reading?: Promise<void>;
  /** A read some page waited MAX_WAIT_MS for in vain: later pages walk rather than wait for it too. */
  slow?: Promise<void>;
}

/** For /metrics: anchor reads started and failed, and deep pages read from an anchor or walked. */
export interface AnchorStats {
  read: number;
  failed: number;
  fromAnchor: number;
  walked: number;
}

/** The anchors of the lists this process has read deep pages of, and how deep pages started. */
export class ListAnchors {
  /** Anchor reads started and failed, and deep pages read from an anchor or walked, so far. */
  readonly stats: AnchorStats = { read: 0, failed: 0, fromAnchor: 0, walked: 0 };
  private readonly lists = new Map<string, AnchoredList>();

  constructor(private readonly db: Database) {}

  /**
   * The anchor position for a page starting `start` items in, when an anchor
   * lies before it. A page starting WAIT_FROM or more items into a list that
   * has no anchors yet first waits (at most MAX_WAIT_MS) for its anchors to
   * be read, starting the read if none is under way. Once a page has waited
   * that long for a read, the pages after it walk while that read goes on.
   */
  async deepPosition(langKey: number, kind: StoredKind, start: number): Promise<ListPosition | undefined> {
    if (start >= WAIT_FROM) {
      const anchors = this.entry(langKey, kind);
      const reading = anchors.snapshot === undefined ? this.refresh(langKey, kind, anchors) : undefined;
      if (reading && reading !== anchors.slow) {
        let timer: NodeJS.Timeout | undefined;
        const waited = await Promise.race([
          reading.then(() => true),
          new Promise<boolean>((resolve) => {
            timer = setTimeout(() => resolve(false), MAX_WAIT_MS);
          }),
        ]);
        clearTimeout(timer);
        if (!waited) anchors.slow = reading;
      }
    }
    return this.anchorPosition(langKey, kind, start);
  }

  /**
   * After a page was read: if it started deep in a big list and no valid anchor
   * served it, or the list has grown a step past its last anchor, read the
   * anchors again in the background.
   */
  noteDeepRead(langKey: number, kind: StoredKind, start: number, total: number, usedAnchor: boolean): void {
    if (start < ANCHOR_STEP) return;
    if (usedAnchor) this.stats.fromAnchor += 1;
    else this.stats.walked += 1;
    if (total < 2 * ANCHOR_STEP) return;
    const anchors = this.entry(langKey, kind);
    // Anchors stay valid while a list grows at its end (list-statement.ts): one that grew a step past them gets anchors there too.
    if (usedAnchor && total < (anchors.keys.length + 2) * ANCHOR_STEP) return;
    void this.refresh(langKey, kind, anchors);
  }

  private entry(langKey: number, kind: StoredKind): AnchoredList {
    const key = `${langKey}:${kind}`;
    let anchors = this.lists.get(key);
    if (!anchors) {
      if (this.lists.size >= MAX_LISTS) this.lists.clear();
      anchors = { keys: [], refreshedAt: 0 };
      this.lists.set(key, anchors);
    }
    return anchors;
  }

  /** Reads the list's anchors, unless a read is under way (then that one) or one started less than REFRESH_INTERVAL_MS ago. */
  private refresh(langKey: number, kind: StoredKind, anchors: AnchoredList): Promise<void> | undefined {
    if (anchors.reading) return anchors.reading;
    if (Date.now() - anchors.refreshedAt < REFRESH_INTERVAL_MS) return undefined;
    anchors.refreshedAt = Date.now();
    this.stats.read += 1;
    const reading = readListAnchors(this.db, langKey, kind, ANCHOR_STEP)
      .then(({ snapshot, keys }) => {
        anchors.snapshot = snapshot;
        anchors.keys = [...keys];
      })
      // Without anchors pages are walked from the nearer end: slower, never wrong.
      .catch(() => {
        this.stats.failed += 1;
      })
      .finally(() => {
        anchors.reading = undefined;
      });
    anchors.reading = reading;
    return reading;
  }

  /** The anchor position for a page starting `start` items in, when an anchor lies before it. */
  private anchorPosition(langKey: number, kind: StoredKind, start: number): ListPosition | undefined {
    const anchors = this.lists.get(`${langKey}:${kind}`);
    if (!anchors?.snapshot) return undefined;
    const index = Math.min(Math.floor(start / ANCHOR_STEP), anchors.keys.length) - 1;
    const key = anchors.keys[index];
    if (index < 0 || !key) return undefined;
    return { type: 'anchor', anchor: { offset: (index + 1) * ANCHOR_STEP - 1, key }, snapshot: anchors.snapshot };
  }
}
