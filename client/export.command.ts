import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import type { Writable } from 'node:stream';
import { KINDS, type RecordKind } from '../catalogue/record-kinds.js';
import { CARRIED_BY, EXPORT_ORDER, exportLine, parentsFirst } from './export-lines.js';
import { formatCount } from './progress.reporter.js';
import type { Terminal } from './push.command.js';
import type { ServiceClient } from './service.client.js';

/** The largest page v2 lists give. */
const PER_PAGE = 250;
/** Profiles are listed as summaries, so each one is read whole; this many at a time. */
const PROFILE_READS = 8;

type Item = Record<string, unknown>;

interface ListPage {
  data: Item[];
  meta: { current_page?: number; per_page: number; total?: number; next_cursor?: string | null };
}

const listPath = (language: string, kind: RecordKind) => `/api/v2/languages/${encodeURIComponent(language)}/${KINDS[kind].segment}`;

/**
 * Every record of a list, page by page. Keyset pages (`meta.next_cursor`,
 * `?cursor=`) are followed when the service offers them; they stay exact
 * while the catalogue changes. Otherwise `page` is counted up.
 */
export async function* listAll(client: ServiceClient, path: string): AsyncGenerator<Item[]> {
  let query = `per_page=${PER_PAGE}`;
  let page = 1;
  for (;;) {
    const body = await client.getJson<ListPage>(`${path}?${query}`);
    if (body.data.length > 0) yield body.data;
    if ('next_cursor' in body.meta) {
      if (!body.meta.next_cursor) return;
      query = `per_page=${PER_PAGE}&cursor=${encodeURIComponent(body.meta.next_cursor)}`;
      continue;
    }
    if (body.data.length < PER_PAGE || page * PER_PAGE >= (body.meta.total ?? 0)) return;
    page += 1;
    query = `per_page=${PER_PAGE}&page=${page}`;
  }
}

/** Whole records of one page (profiles: each read on its own, in list order). */
async function wholeRecords(client: ServiceClient, language: string, kind: RecordKind, items: Item[]): Promise<Item[]> {
  if (kind !== 'profile') return items;
  const records: Item[] = [];
  for (let start = 0; start < items.length; start += PROFILE_READS) {
    const slice = items.slice(start, start + PROFILE_READS);
    records.push(
      ...(await Promise.all(
        slice.map((item) => client.getJson<Item>(`${listPath(language, kind)}/${encodeURIComponent(String(item['id']))}`)),
      )),
    );
  }
  return records;
}

async function write(out: Writable, text: string): Promise<void> {
  if (!out.write(text)) await once(out, 'drain');
}

export interface ExportOptions {
  language: string;
  kinds: RecordKind[];
  output?: string;
}

/**
 * Writes every record of the kinds as bulk lines, kinds in the order push
 * reads them. A summary per kind goes to stderr, with what could not be carried.
 * @returns 0, or 1 when a record could not be written as a line at all.
 */
export async function exportRecords(client: ServiceClient, options: ExportOptions, terminal: Terminal): Promise<number> {
  const out: Writable = options.output ? createWriteStream(options.output) : terminal.stdout;
  const kinds = EXPORT_ORDER.filter((kind) => options.kinds.includes(kind));
  let code = 0;
  for (const kind of kinds) {
    const carriedBy = Object.entries(CARRIED_BY[kind] ?? {}).filter(([, carrier]) => !kinds.includes(carrier));
    const uncarried = new Map<string, number>();
    let lines = 0;
    let stubs = 0;
    const dropped = new Map<string, number>();
    const problems: string[] = [];
    // Categories are written once all are read, parents first; every other kind streams page by page.
    const held: Array<{ id: string; parent: string | null; line: string }> = [];
    for await (const items of listAll(client, listPath(options.language, kind))) {
      for (const record of await wholeRecords(client, options.language, kind, items)) {
        for (const [field] of carriedBy) {
          const value = record[field];
          if (value !== null && value !== undefined && !(Array.isArray(value) && value.length === 0))
            uncarried.set(field, (uncarried.get(field) ?? 0) + 1);
        }
        const outcome = exportLine(kind, record);
        for (const field of outcome.dropped) dropped.set(field, (dropped.get(field) ?? 0) + 1);
        if ('line' in outcome) {
          if (kind === 'category')
            held.push({ id: String(record['id']), parent: (record['parent_category_id'] as string | null) ?? null, line: outcome.line });
          else await write(out, `${outcome.line}\n`);
          lines += 1;
        } else if (outcome.skipped === 'stub') stubs += 1;
        else problems.push(`${kind} ${String(record['id'])}: ${outcome.problem}`);
      }
    }
    for (const category of parentsFirst(held)) await write(out, `${category.line}\n`);
    const notes = [
      stubs > 0 ? `${formatCount(stubs)} stubs skipped (the lines naming them bring them back)` : '',
      ...[...dropped].map(([field, count]) => `${field} of ${formatCount(count)} not carried (bulk lines cannot hold it)`),
      ...carriedBy
        .filter(([field]) => uncarried.has(field))
        .map(
          ([field, carrier]) =>
            `${field} of ${formatCount(uncarried.get(field)!)} travels with ${carrier} lines: export --kind ${carrier} too`,
        ),
      problems.length > 0 ? `${formatCount(problems.length)} could not be written as lines` : '',
    ].filter(Boolean);
    terminal.stderr.write(`${kind}: ${formatCount(lines)} lines${notes.length ? `; ${notes.join('; ')}` : ''}\n`);
    for (const problem of problems.slice(0, 10)) terminal.stderr.write(`  ${problem}\n`);
    if (problems.length > 0) code = 1;
  }
  if (options.output) {
    out.end();
    await once(out, 'finish');
  }
  return code;
}
