import type { StoredKind } from '../catalogue/record-kinds.js';
import { RecordNotFoundError } from '../platform/errors.js';
import { getLanguage, getRecord, type ReadContext } from '../reads/read.service.js';
import type { FeedRow } from './feed.repository.js';
import type { CurrentRecord } from './feed-page.js';

/**
 * `include=record` (interface §22.5): each entry's record as GET one answers
 * it now, or null when the record no longer exists (a language's own entries
 * get the language). A record named by several entries of the page is read
 * once.
 */
export async function currentRecords(context: ReadContext, languageId: string, rows: readonly FeedRow[]): Promise<CurrentRecord[]> {
  const records = new Map<string, Promise<CurrentRecord>>();
  const recordOf = (row: FeedRow) => {
    const key = `${row.kind}\n${row.record_id}`;
    let record = records.get(key);
    if (!record) {
      const reading =
        row.kind === 'language' ? getLanguage(context, languageId) : getRecord(context, languageId, row.kind as StoredKind, row.record_id);
      record = reading.catch((error: unknown) => {
        if (error instanceof RecordNotFoundError) return null;
        throw error;
      });
      records.set(key, record);
    }
    return record;
  };
  // One at a time: a page of 1,000 entries must not take the whole pool.
  const out: CurrentRecord[] = [];
  for (const row of rows) out.push(await recordOf(row));
  return out;
}
