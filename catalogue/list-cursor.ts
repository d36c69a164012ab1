import { isUtf8 } from 'node:buffer';
import { isCalendarDay, isStorableText } from './primitives.schema.js';

/**
 * Keyset cursors of the v2 lists. Lists are ordered by (created_at, id); a
 * cursor names the last item of a page by that key, so the next page starts
 * right after it with an index seek, however deep the walk is. It also
 * carries the number of the page it leads to, so `meta.current_page` stays
 * meaningful. Cursors are opaque to clients: base64url of a small JSON array.
 */

/** A list position: the (created_at, id) of an item, created_at at full (microsecond) precision. */
export interface ListKey {
  created_at: string;
  id: string;
}

export interface ListCursor {
  /** The page the cursor leads to (2 or more). */
  page: number;
  after: ListKey;
}

/** created_at as Postgres renders it for keys: UTC, microseconds. */
const KEY_TIME = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})\.\d{6}Z$/;

/** A key time the service could have made: a day of the calendar, a time of the day (no 24:00, no leap second). */
function isKeyTime(text: string): boolean {
  const match = KEY_TIME.exec(text);
  if (!match) return false;
  const [year, month, day, hour, minute, second] = match.slice(1).map(Number) as [number, number, number, number, number, number];
  return isCalendarDay(year, month, day) && hour <= 23 && minute <= 59 && second <= 59;
}

export function encodeCursor(cursor: ListCursor): string {
  return Buffer.from(JSON.stringify([cursor.page, cursor.after.created_at, cursor.after.id]), 'utf8').toString('base64url');
}

/**
 * The cursor, or null when `text` is not one this service made. Checked
 * whole before any statement sees it: a cursor is text a client can forge,
 * and a key Postgres cannot take (a day that does not exist, a NUL in an id)
 * would otherwise fail the list's statement.
 */
export function decodeCursor(text: string): ListCursor | null {
  if (text.length === 0 || text.length > 2_048 || !/^[A-Za-z0-9_-]+$/.test(text)) return null;
  const bytes = Buffer.from(text, 'base64url');
  if (!isUtf8(bytes)) return null;
  let value: unknown;
  try {
    value = JSON.parse(bytes.toString('utf8'));
  } catch {
    return null;
  }
  if (!Array.isArray(value) || value.length !== 3) return null;
  const [page, createdAt, id] = value as unknown[];
  if (!Number.isSafeInteger(page) || (page as number) < 2) return null;
  if (typeof createdAt !== 'string' || !isKeyTime(createdAt)) return null;
  if (typeof id !== 'string' || id.length === 0 || id.length > 255 || !isStorableText(id)) return null;
  return { page: page as number, after: { created_at: createdAt, id } };
}
