import type { FeedRow } from './feed.repository.js';

export type CurrentRecord = Record<string, unknown> | null;

/**
 * The answer's JSON text, `{"data":[entry...],"meta":{...}}` (interface
 * §22.2), from the entries' own text (feed.repository.ts). With
 * `include=record`, each entry gets its `record` appended.
 */
export function feedPageJson(
  rows: readonly FeedRow[],
  records: readonly CurrentRecord[] | undefined,
  meta: { next_cursor: string; has_more: boolean },
): string {
  const entries = records === undefined ? rows.map((row) => row.entry) : rows.map((row, index) => withRecord(row.entry, records[index]!));
  return `{"data":[${entries.join(',')}],"meta":${JSON.stringify(meta)}}`;
}

/** The entry's object text with one more member: it ends with its closing brace. */
const withRecord = (entry: string, record: CurrentRecord): string =>
  `${entry.slice(0, entry.lastIndexOf('}'))}, "record" : ${JSON.stringify(record)}}`;
