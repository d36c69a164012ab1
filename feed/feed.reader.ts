import type { CommonQueryMethods } from 'slonik';
import { type FeedRow, lastFeedSeq, selectFeedRows } from './feed.repository.js';
import { languageHorizon } from './feed-horizon.js';

export interface FeedSpan {
  langKey: number;
  languageId: string;
  /** The seq to read after (a cursor's position). */
  after: number;
}

export interface FeedRead {
  rows: readonly FeedRow[];
  /** Where the next read resumes: after the last entry examined, or `after` when there was none. */
  next: number;
  /** More entries (of the kinds asked) are there now. */
  hasMore: boolean;
  /** The horizon read up to: it stays one (entries at or below it are final), so a later read may be given it. */
  through: number;
}

/**
 * The language's entries after a position, in serial order and only below
 * its horizon, so that a reader resuming at `next` never misses one that
 * commits late nor sees one twice (interface §22.3). The feed's pages use
 * it; anything else that walks a language's changes in order (a delivery
 * of them elsewhere) can too: it takes a pool or a transaction and knows
 * nothing of HTTP.
 */
export async function readEntriesAfter(
  db: CommonQueryMethods,
  span: FeedSpan,
  options: {
    limit: number;
    kinds?: readonly string[] | undefined;
    /** A horizon an earlier read returned, to read up to instead of asking again (it may have moved on since). */
    through?: number | undefined;
  },
): Promise<FeedRead> {
  const through = options.through ?? (await languageHorizon(db, span.langKey));
  const range = { ...span, through };
  const rows = await selectFeedRows(db, range, options.limit + 1, options.kinds);
  if (rows.length > options.limit) {
    const page = rows.slice(0, options.limit);
    return { rows: page, next: page[page.length - 1]!.seq, hasMore: true, through };
  }
  // Everything up to the horizon was examined: filtered out entries are passed too.
  const last = options.kinds === undefined ? rows.at(-1)?.seq : await lastFeedSeq(db, range);
  return { rows, next: last ?? span.after, hasMore: false, through };
}

/** The position of the language's head: every entry at or below it is final, every later one will be above it. */
export function feedHead(db: CommonQueryMethods, langKey: number): Promise<number> {
  return languageHorizon(db, langKey);
}
