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
  at: z.string(),
  kind: z.string(),
  record_id: z.string(),
  action: z.string(),
  actor: z.string(),
  request_id: z.string().nullable(),
  changes: z.record(z.unknown()),
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

/** The language's entries in (after, through], oldest first, at most `limit` (of `kinds` only, when given). */
export async function selectFeedRows(
  db: CommonQueryMethods,
  range: FeedRange,
  limit: number,
  kinds: readonly string[] | undefined,
): Promise<readonly FeedRow[]> {
  const kindFilter = kinds === undefined ? sql.fragment`TRUE` : sql.fragment`kind = ANY(${sql.array(kinds, 'text')})`;
  return db.any(sql.type(feedRows)`
    SELECT seq, at, kind, record_id, action, actor, request_id, changes
    FROM audit_log
    WHERE language_id = ${range.languageId} AND lang_key = ${range.langKey}
      AND seq > ${range.after} AND seq <= ${range.through} AND ${kindFilter}
    ORDER BY seq
    LIMIT ${limit}
  `);
}

/** The seq of the language's last entry in (after, through], of any kind, or null: how far a filtered read examined. */
export async function lastFeedSeq(db: CommonQueryMethods, range: FeedRange): Promise<number | null> {
  return db.maybeOneFirst(sql.type(z.object({ seq: z.number() }))`
    SELECT seq FROM audit_log
    WHERE language_id = ${range.languageId} AND lang_key = ${range.langKey}
      AND seq > ${range.after} AND seq <= ${range.through}
    ORDER BY seq DESC
    LIMIT 1
  `);
}

/** The audit seq at or below which retention has removed entries (0: nothing removed). */
export async function removedThrough(db: CommonQueryMethods): Promise<number> {
  const value = await db.maybeOneFirst(sql.type(z.object({ removed_through: z.number() }))`
    SELECT removed_through FROM audit_retention
  `);
  return value ?? 0;
}

/**
 * The bulk jobs of the language that the given request ids belong to. A bulk
 * job's changes carry its upload's request id, or the job id when the upload
 * had none (bulk/bulk.service.ts).
 */
export async function bulkJobsByRequest(
  db: CommonQueryMethods,
  langKey: number,
  requestIds: readonly string[],
): Promise<Map<string, string>> {
  const found = new Map<string, string>();
  if (requestIds.length === 0) return found;
  const rows = await db.any(sql.type(z.object({ id: z.string(), request_id: z.string().nullable() }))`
    SELECT id::text AS id, request_id FROM bulk_jobs
    WHERE lang_key = ${langKey}
      AND (request_id = ANY(${sql.array(requestIds, 'text')}) OR id::text = ANY(${sql.array(requestIds, 'text')}))
  `);
  for (const row of rows) {
    found.set(row.id, row.id);
    if (row.request_id !== null) found.set(row.request_id, row.id);
  }
  return found;
}
