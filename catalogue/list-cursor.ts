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
const KEY_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

export function encodeCursor(cursor: ListCursor): string {
  return Buffer.from(JSON.stringify([cursor.page, cursor.after.created_at, cursor.after.id]), 'utf8').toString('base64url');
}

/** The cursor, or null when `text` is not one this service made. */
export function decodeCursor(text: string): ListCursor | null {
  if (text.length === 0 || text.length > 2_048 || !/^[A-Za-z0-9_-]+$/.test(text)) return null;
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
  } catch {
    return null;
  }
  if (!Array.isArray(value) || value.length !== 3) return null;
  const [page, createdAt, id] = value as unknown[];
  if (!Number.isSafeInteger(page) || (page as number) < 2) return null;
  if (typeof createdAt !== 'string' || !KEY_TIME.test(createdAt) || Number.isNaN(Date.parse(createdAt))) return null;
  if (typeof id !== 'string' || id.length === 0 || id.length > 255) return null;
  return { page: page as number, after: { created_at: createdAt, id } };
}
