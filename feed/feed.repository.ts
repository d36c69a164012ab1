import { type CommonQueryMethods, sql } from 'slonik';
import { z } from 'zod';
import { unparsedRows } from '../platform/db.js';

/*
 * The change feed's reads of audit_log (interface §22). Every statement names
 * the language by its id and its lang_key: the key belongs to one account, so
 * nothing of another account's language can be read, and an old key (a
 * language id deleted and created again) reads nothing.
 */

export const feedRow = z.object({
  seq: z.number(),
  kind: z.string(),
  record_id: z.string(),
  /** The entry as the feed shows it (interface §22.2), as JSON text: built by Postgres, sent as it is. */
  entry: z.string(),
});
export type FeedRow = z.infer<typeof feedRow>;
/** A page has up to 1,001 rows of the service's own table: not parsed row by row (platform/db.ts). */
const feedRows = unparsedRows(feedRow);

export interface FeedRange {
  langKey: number;
  languageId: string;
  /** Entries with a higher seq... */
  after: number;
  /** ...up to and including this one (the language's stable horizon). */
  through: number;
}

/**
 * The language's entries in (after, through], oldest first, at most `limit`
 * (of `kinds` only, when given), each as its JSON text. Postgres writes the
 * text: a page of 1,000 entries costs the API a string to pass on, not 1,000
 * objects to parse, build and serialise again.
 *
 * - `cursor` is feed-cursor.ts's encoding, done in SQL (base64url without
 *   padding; `encode` breaks lines every 76 characters, which are removed).
 * - `bulk_job_id`: the language's bulk job whose upload's request id the
 *   entry carries, or whose id it carries when the upload had none
 *   (bulk/bulk.service.ts), looked up once per distinct request id of the page.
 * - `occurred_at` in the API's timestamp form (UTC, milliseconds).
 * - The rows come from feed/sql/feed_pages.sql, which keeps the plan an
 *   ordered index scan.
 */
export async function selectFeedRows(
  db: CommonQueryMethods,
  range: FeedRange,
  limit: number,
  kinds: readonly string[] | undefined,
): Promise<readonly FeedRow[]> {
  const kindList = kinds === undefined ? null : sql.array(kinds, 'text');
  const cursorPrefix = `${range.langKey}.`;
  const cursorSuffix = `.${range.languageId}`;
  return db.any(sql.type(feedRows)`
    WITH page AS MATERIALIZED (
      SELECT seq, at, kind, record_id, action, actor, request_id, changes
      FROM feed_audit_page(${range.languageId}, ${range.langKey}, ${range.after}, ${range.through}, ${limit}, ${kindList})
    ),
    requests AS (SELECT DISTINCT request_id FROM page WHERE request_id IS NOT NULL),
    jobs AS (
      SELECT DISTINCT ON (request_id) request_id, id
      FROM (
        SELECT r.request_id, b.id::text AS id, b.created_at
        FROM requests r JOIN bulk_jobs b ON b.request_id = r.request_id AND b.lang_key = ${range.langKey}
        UNION ALL
        SELECT r.request_id, b.id::text, b.created_at
        FROM requests r JOIN bulk_jobs b ON b.lang_key = ${range.langKey} AND b.id = (
          CASE WHEN r.request_id ~ '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$' THEN r.request_id::uuid END
        )
      ) found
      ORDER BY request_id, created_at
    )
    SELECT p.seq, p.kind, p.record_id, (
      -- row_to_json writes compact JSON in column order, as the service's other answers are written.
      SELECT row_to_json(e)::text FROM (SELECT
        p.seq::text AS id,
        translate(encode(convert_to(${cursorPrefix} || p.seq || ${cursorSuffix}, 'UTF8'), 'base64'), E'+/=\n', '-_') AS cursor,
        p.kind,
        p.record_id,
        p.action,
        p.changes,
        p.actor,
        p.request_id,
        j.id AS bulk_job_id,
        to_char(p.at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS occurred_at
      ) e
    ) AS entry
    FROM page p
    LEFT JOIN jobs j ON j.request_id = p.request_id
    ORDER BY p.seq
  `);
}

/** The seq of the language's last entry in (after, through], of any kind, or null: how far a filtered read examined. */
export async function lastFeedSeq(db: CommonQueryMethods, range: FeedRange): Promise<number | null> {
  return db.oneFirst(sql.type(z.object({ seq: z.number().nullable() }))`
    SELECT feed_last_seq(${range.languageId}, ${range.langKey}, ${range.after}, ${range.through}) AS seq
  `);
}

/** The audit seq at or below which retention has removed entries (0: nothing removed). */
export async function removedThrough(db: CommonQueryMethods): Promise<number> {
  const value = await db.maybeOneFirst(sql.type(z.object({ removed_through: z.number() }))`
    SELECT removed_through FROM audit_retention
  `);
  return value ?? 0;
}
