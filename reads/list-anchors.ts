import type { ListKey } from '../catalogue/list-cursor.js';
import type { StoredKind } from '../catalogue/record-kinds.js';
import type { Database } from '../platform/db.js';
import { readListAnchors } from './list-anchors.repository.js';
import type { ListPosition } from './list-request.js';

/*
 * Deep pages of the big unfiltered lists without walking the index from the
 * start. Each API process keeps, per (language, kind), the keys of every
 * ANCHOR_STEP-th item and the snapshot they were read in. A page then starts
 * at the nearest anchor before it and skips fewer than ANCHOR_STEP items. The
 * list statement uses an anchor only while the list has not changed since
 * that snapshot (no live-record counter row written since: see
 * reads/sql/record_counts.sql), so pages stay exact; otherwise it walks
 * from the nearer end and the anchors are read again in the background, at most once per
 * REFRESH_INTERVAL_MS per list (a list written all the time is walked).
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

interface ListAnchors {
  snapshot?: string;
  keys: ListKey[];
  refreshedAt: number;
  /** The read under way, which pages of a list without anchors wait for. */
  reading?: Promise<void>;
  /** A read some page waited MAX_WAIT_MS for in vain: later pages walk rather than wait for it too. */
  slow?: Promise<void>;
}

/** Per pool, for /metrics: anchor reads started and failed, and deep pages read from an anchor or walked. */
export interface AnchorStats {
  read: number;
  failed: number;
  fromAnchor: number;
  walked: number;
}

const perPool = new WeakMap<Database, Map<string, ListAnchors>>();
const statsPerPool = new WeakMap<Database, AnchorStats>();

/** This pool's anchor reads and deep pages so far. */
export function anchorStats(db: Database): AnchorStats {
  let stats = statsPerPool.get(db);
  if (!stats) {
    stats = { read: 0, failed: 0, fromAnchor: 0, walked: 0 };
    statsPerPool.set(db, stats);
  }
  return stats;
}

function entry(db: Database, langKey: number, kind: StoredKind): ListAnchors {
  const lists = perPool.get(db) ?? new Map<string, ListAnchors>();
  perPool.set(db, lists);
  const key = `${langKey}:${kind}`;
  let anchors = lists.get(key);
  if (!anchors) {
    if (lists.size >= MAX_LISTS) lists.clear();
    anchors = { keys: [], refreshedAt: 0 };
    lists.set(key, anchors);
  }
  return anchors;
}

/** Reads the list's anchors, unless a read is under way (then that one) or one started less than REFRESH_INTERVAL_MS ago. */
function refresh(db: Database, langKey: number, kind: StoredKind, anchors: ListAnchors): Promise<void> | undefined {
  if (anchors.reading) return anchors.reading;
  if (Date.now() - anchors.refreshedAt < REFRESH_INTERVAL_MS) return undefined;
  anchors.refreshedAt = Date.now();
  const reads = anchorStats(db);
  reads.read += 1;
  const reading = readListAnchors(db, langKey, kind, ANCHOR_STEP)
    .then(({ snapshot, keys }) => {
      anchors.snapshot = snapshot;
      anchors.keys = [...keys];
    })
    // Without anchors pages are walked from the nearer end: slower, never wrong.
    .catch(() => {
      reads.failed += 1;
    })
    .finally(() => {
      anchors.reading = undefined;
    });
  anchors.reading = reading;
  return reading;
}

/** The anchor position for a page starting `start` items in, when an anchor lies before it. */
function anchorPosition(db: Database, langKey: number, kind: StoredKind, start: number): ListPosition | undefined {
  const anchors = perPool.get(db)?.get(`${langKey}:${kind}`);
  if (!anchors?.snapshot) return undefined;
  const index = Math.min(Math.floor(start / ANCHOR_STEP), anchors.keys.length) - 1;
  const key = anchors.keys[index];
  if (index < 0 || !key) return undefined;
  return { type: 'anchor', anchor: { offset: (index + 1) * ANCHOR_STEP - 1, key }, snapshot: anchors.snapshot };
}

/**
 * As anchorPosition, but a page starting WAIT_FROM or more items into a list
 * that has no anchors yet first waits (at most MAX_WAIT_MS) for its anchors
 * to be read, starting the read if none is under way. Once a page has waited
 * that long for a read, the pages after it walk while that read goes on.
 */
export async function deepPosition(db: Database, langKey: number, kind: StoredKind, start: number): Promise<ListPosition | undefined> {
  if (start >= WAIT_FROM) {
    const anchors = entry(db, langKey, kind);
    const reading = anchors.snapshot === undefined ? refresh(db, langKey, kind, anchors) : undefined;
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
  return anchorPosition(db, langKey, kind, start);
}

/**
 * After a page was read: if it started deep in a big list and no valid anchor
 * served it, read the anchors again in the background.
 */
export function noteDeepRead(db: Database, langKey: number, kind: StoredKind, start: number, total: number, usedAnchor: boolean): void {
  if (start < ANCHOR_STEP) return;
  const stats = anchorStats(db);
  if (usedAnchor) stats.fromAnchor += 1;
  else stats.walked += 1;
  if (usedAnchor || total < 2 * ANCHOR_STEP) return;
  void refresh(db, langKey, kind, entry(db, langKey, kind));
}
