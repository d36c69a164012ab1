import type { StoredKind } from '../catalogue/record-kinds.js';
import { RecordNotFoundError } from '../platform/errors.js';
import { getLanguage, getRecord, type ReadContext } from '../reads/read.service.js';
import type { FeedEntry } from './feed.schema.js';

/**
 * `include=record` (interface §22.5): each entry gets its record as GET one
 * answers it now, or null when the record no longer exists (a language's
 * own entries get the language). A record named
 * by several entries of the page is read once.
 */
export async function withRecords(context: ReadContext, languageId: string, entries: readonly FeedEntry[]): Promise<FeedEntry[]> {
  const records = new Map<string, Promise<Record<string, unknown> | null>>();
  const recordOf = (entry: FeedEntry) => {
    const key = `${entry.kind}\n${entry.record_id}`;
    let record = records.get(key);
    if (!record) {
      const reading =
        entry.kind === 'language'
          ? getLanguage(context, languageId)
          : getRecord(context, languageId, entry.kind as StoredKind, entry.record_id);
      record = reading.catch((error: unknown) => {
        if (error instanceof RecordNotFoundError) return null;
        throw error;
      });
      records.set(key, record);
    }
    return record;
  };
  // One at a time: a page of 1,000 entries must not take the whole pool.
  const out: FeedEntry[] = [];
  for (const entry of entries) out.push({ ...entry, record: await recordOf(entry) });
  return out;
}
