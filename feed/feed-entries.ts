import type { CommonQueryMethods } from 'slonik';
import { bulkJobsByRequest, type FeedRow } from './feed.repository.js';
import type { FeedEntry } from './feed.schema.js';
import { encodeFeedCursor } from './feed-cursor.js';

/**
 * Audit rows in the feed's entry shape (interface §22.2): `id` is the audit
 * seq (unique across the service, never reused), `cursor` the position just
 * after it, `bulk_job_id` the bulk job whose upload's request the change
 * carries.
 */
export async function toFeedEntries(
  db: CommonQueryMethods,
  language: { langKey: number; languageId: string },
  rows: readonly FeedRow[],
): Promise<FeedEntry[]> {
  const requestIds = [...new Set(rows.flatMap((row) => (row.request_id === null ? [] : [row.request_id])))];
  const bulkJobs = await bulkJobsByRequest(db, language.langKey, requestIds);
  return rows.map((row) => ({
    id: String(row.seq),
    cursor: encodeFeedCursor({ ...language, seq: row.seq }),
    kind: row.kind,
    record_id: row.record_id,
    action: row.action,
    changes: row.changes,
    actor: row.actor,
    request_id: row.request_id,
    bulk_job_id: row.request_id === null ? null : (bulkJobs.get(row.request_id) ?? null),
    occurred_at: row.at,
  }));
}
