import { parseOrThrow } from '../catalogue/validation.js';
import type { Database } from '../platform/db.js';
import { ValidationError } from '../platform/errors.js';
import type { LanguageRow } from '../records/language.repository.js';
import { requireLanguage } from '../records/language.service.js';
import { CursorExpiredError } from './feed.errors.js';
import { type FeedRead, feedHead, readEntriesAfter } from './feed.reader.js';
import { removedThrough } from './feed.repository.js';
import { type FeedQuery, feedQuerySchema } from './feed.schema.js';
import type { FeedWaiter } from './feed.waiter.js';
import { encodeFeedCursor } from './feed-cursor.js';
import { feedPageJson } from './feed-page.js';
import { currentRecords } from './feed-records.js';

export interface FeedContext {
  db: Database;
  waiter: FeedWaiter;
  accountId: number;
}

/**
 * GET /api/v2/languages/{language_id}/changes (interface §22): a page of the
 * language's audit entries after the cursor, held up to `wait` seconds while
 * there are none. Answers the page's JSON text.
 * @throws {ValidationError} @throws {LanguageNotFoundError} @throws {CursorExpiredError}
 */
export async function readChanges(context: FeedContext, languageId: string, rawQuery: Record<string, unknown>): Promise<string> {
  const query = parseOrThrow(feedQuerySchema, rawQuery);
  const language = await requireLanguage(context.db, context.accountId, languageId);
  const position = { langKey: language.lang_key, languageId: language.id };
  if (query.from === 'now') {
    const head = await feedHead(context.db, language.lang_key);
    return feedPageJson([], undefined, { next_cursor: encodeFeedCursor({ ...position, seq: head }), has_more: false });
  }
  const after = await startOf(context.db, language, query);
  const read = await readWaiting(context, { ...position, after }, query);
  const records = query.include === 'record' ? await currentRecords(context.db, language, read.rows) : undefined;
  return feedPageJson(read.rows, records, { next_cursor: encodeFeedCursor({ ...position, seq: read.next }), has_more: read.hasMore });
}

/** The seq to read after: the cursor's, checked against the language and the retained history, or the start of it. */
async function startOf(db: Database, language: LanguageRow, query: FeedQuery): Promise<number> {
  const floor = await removedThrough(db);
  const cursor = query.after;
  if (cursor === undefined) return floor;
  if (cursor.languageId !== language.id)
    throw new ValidationError('invalid_parameters', ['after'], 'Invalid parameters: after (a cursor of another language)');
  // The same language id with another key: it was deleted and created again since the cursor was taken.
  if (cursor.langKey !== language.lang_key || cursor.seq < floor) throw new CursorExpiredError();
  return cursor.seq;
}

/**
 * Reads after `after`; while nothing is there and `wait` lasts, waits for the
 * language's next audit commit without a connection (feed.waiter.ts) and
 * reads again. Entries filtered out by `kinds` move the position on.
 */
async function readWaiting(
  context: FeedContext,
  span: { langKey: number; languageId: string; after: number },
  query: FeedQuery,
): Promise<FeedRead> {
  const options = { limit: query.limit, kinds: query.kinds };
  if (query.wait === 0) return readEntriesAfter(context.db, span, options);
  const deadline = Date.now() + query.wait * 1_000;
  // Watching starts before the first read, so an entry committed in between still wakes this reader.
  const watch = context.waiter.watch(span.langKey);
  try {
    let after = span.after;
    for (;;) {
      const read = await readEntriesAfter(context.db, { ...span, after }, options);
      after = read.next;
      const left = deadline - Date.now();
      if (read.rows.length > 0 || read.hasMore || left <= 0 || context.waiter.closed) return { ...read, next: after };
      await watch.next(left);
    }
  } finally {
    watch.cancel();
  }
}
