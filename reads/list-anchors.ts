import type { ListKey } from '../catalogue/list-cursor.js';
import type { StoredKind } from '../catalogue/record-kinds.js';
import type { Database } from '../platform/db.js';
import { type ListPosition, readListAnchors } from './read.repository.js';

/*
 * Deep pages of the big unfiltered lists without walking the index from the
 * start. Each API process keeps, per (language, kind), the keys of every
 * ANCHOR_STEP-th item and the snapshot they were read in. A page then starts
 * at the nearest anchor before it and skips fewer than ANCHOR_STEP items. The
 * list statement uses an anchor only while the list has not changed since
 * that snapshot (no live-record counter row written since: see
 * reads/sql/record_counts.sql), so pages stay exact; otherwise it walks as
 * before and the anchors are read again in the background, at most once per
 * REFRESH_INTERVAL_MS per list (a list written all the time is walked).
 */

export const ANCHOR_STEP = 1_000;
const REFRESH_INTERVAL_MS = 5_000;
const MAX_LISTS = 1_000;

interface ListAnchors {
  snapshot?: string;
  keys: ListKey[];
  refreshedAt: number;
  refreshing: boolean;
}

const perPool = new WeakMap<Database, Map<string, ListAnchors>>();

function entry(db: Database, langKey: number, kind: StoredKind): ListAnchors {
  const lists = perPool.get(db) ?? new Map<string, ListAnchors>();
  perPool.set(db, lists);
  const key = `${langKey}:${kind}`;
  let anchors = lists.get(key);
  if (!anchors) {
    if (lists.size >= MAX_LISTS) lists.clear();
    anchors = { keys: [], refreshedAt: 0, refreshing: false };
    lists.set(key, anchors);
  }
  return anchors;
}

/** The anchor position for a page starting `start` items in, when an anchor lies before it. */
export function anchorPosition(db: Database, langKey: number, kind: StoredKind, start: number): ListPosition | undefined {
  const anchors = perPool.get(db)?.get(`${langKey}:${kind}`);
  if (!anchors?.snapshot) return undefined;
  const index = Math.min(Math.floor(start / ANCHOR_STEP), anchors.keys.length) - 1;
  const key = anchors.keys[index];
  if (index < 0 || !key) return undefined;
  return { type: 'anchor', anchor: { offset: (index + 1) * ANCHOR_STEP - 1, key }, snapshot: anchors.snapshot };
}

/**
 * After a page was read: if it started deep in a big list and no valid anchor
 * served it, read the anchors again in the background.
 */
export function noteDeepRead(db: Database, langKey: number, kind: StoredKind, start: number, total: number, usedAnchor: boolean): void {
  if (usedAnchor || start < ANCHOR_STEP || total < 2 * ANCHOR_STEP) return;
  const anchors = entry(db, langKey, kind);
  if (anchors.refreshing || Date.now() - anchors.refreshedAt < REFRESH_INTERVAL_MS) return;
  anchors.refreshing = true;
  anchors.refreshedAt = Date.now();
  readListAnchors(db, langKey, kind, ANCHOR_STEP)
    .then(({ snapshot, keys }) => {
      anchors.snapshot = snapshot;
      anchors.keys = [...keys];
    })
    // Without anchors pages are walked from the nearer end, as before: slower, never wrong.
    .catch(() => undefined)
    .finally(() => {
      anchors.refreshing = false;
    });
}
