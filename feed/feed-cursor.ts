/**
 * A change feed cursor (interface §22.2): the audit seq the feed resumes
 * after, with the language it belongs to. The audit seq is one sequence for
 * every language, so a position is a seq; the lang_key tells a language id
 * deleted and created again (a new key: its old cursors are expired, §22.6)
 * from the one the cursor was taken in, and the language id tells a cursor of
 * another language (400). Opaque to consumers: base64url of
 * `<lang_key>.<seq>.<language_id>`.
 */
export interface FeedPosition {
  langKey: number;
  seq: number;
  languageId: string;
}

export function encodeFeedCursor(position: FeedPosition): string {
  return Buffer.from(`${position.langKey}.${position.seq}.${position.languageId}`, 'utf8').toString('base64url');
}

const DECODED = /^(\d{1,16})\.(\d{1,16})\.([\s\S]+)$/;

/** The position a cursor names, or null when it is not one this service wrote. */
export function decodeFeedCursor(cursor: string): FeedPosition | null {
  if (cursor.length === 0 || cursor.length > 1_500 || !/^[A-Za-z0-9_-]+$/.test(cursor)) return null;
  const match = DECODED.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
  if (!match) return null;
  const langKey = Number(match[1]);
  const seq = Number(match[2]);
  if (!Number.isSafeInteger(langKey) || !Number.isSafeInteger(seq)) return null;
  return { langKey, seq, languageId: match[3]! };
}
