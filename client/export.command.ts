import { once } from 'node:events';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { KINDS, type RecordKind, type StoredKind } from '../catalogue/record-kinds.js';
import { CARRIED_BY, EXPORT_ORDER, exportLine, parentsFirst } from './export-lines.js';
import { exportV2Line, productLinkLines, V2_EXPORT_ORDER } from './export-v2-lines.js';
import { countOf, createExportReporter, formatCount } from './progress.reporter.js';
import type { ServiceClient } from './service.client.js';
import type { Terminal } from './terminal.js';

/** The largest page v2 lists give. */
const PER_PAGE = 250;
/** Profiles are listed as summaries, so each one is read whole; this many at a time. */
const PROFILE_READS = 8;

type Item = Record<string, unknown>;

interface ListPage {
  data: Item[];
  meta: { current_page?: number; per_page: number; total?: number; next_cursor?: string | null };
}

const listPath = (language: string, kind: StoredKind) => `/api/v2/languages/${encodeURIComponent(language)}/${KINDS[kind].segment}`;

/**
 * Every record of a list, page by page. Keyset pages (`meta.next_cursor`,
 * `?cursor=`) are followed when the service offers them; they stay exact
 * while the catalogue changes. Otherwise `page` is counted up.
 */
export async function* listAll(client: ServiceClient, listUrl: string): AsyncGenerator<Item[]> {
  let query = `per_page=${PER_PAGE}`;
  let page = 1;
  for (;;) {
    const body = await client.getJson<ListPage>(`${listUrl}?${query}`);
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

/** `items` mapped `PROFILE_READS` at a time, in order. */
async function inOrder<T>(items: Item[], read: (item: Item) => Promise<T>): Promise<T[]> {
  const out: T[] = [];
  for (let start = 0; start < items.length; start += PROFILE_READS) {
    for (const result of await Promise.all(items.slice(start, start + PROFILE_READS).map(read))) out.push(result);
  }
  return out;
}

/**
 * Whole records of one page. Profiles are listed as summaries, so each is
 * read on its own. For a v2 export an order's lines are read from its lines
 * list, the only place that shows a line's custom attributes.
 */
async function wholeRecords(client: ServiceClient, language: string, kind: StoredKind, items: Item[], api: 'v1' | 'v2'): Promise<Item[]> {
  const one = (item: Item) => `${listPath(language, kind)}/${encodeURIComponent(String(item['id']))}`;
  if (kind === 'profile') return inOrder(items, (item) => client.getJson<Item>(one(item)));
  if (kind === 'order' && api === 'v2') {
    return inOrder(items, async (order) => {
      const lines: Item[] = [];
      for await (const page of listAll(client, `${one(order)}/products`)) for (const line of page) lines.push(line);
      return {
        ...order,
        products: lines.map((line) => ({
          id: line['product_id'],
          quantity: line['quantity'],
          variant_id: line['variant_id'],
          custom_attributes: line['custom_attributes'],
        })),
      };
    });
  }
  return items;
}

async function write(out: Writable, text: string): Promise<void> {
  if (!out.write(text)) await once(out, 'drain');
}

export interface ExportOptions {
  language: string;
  kinds: StoredKind[];
  /** The line format: v1 write bodies (what `push` sends by default), or v2 requests (`push --api v2`). */
  api: 'v1' | 'v2';
  output?: string;
}

/**
 * Writes every record of the kinds as bulk lines, kinds in the order push
 * reads them. A summary per kind goes to stderr, with what could not be carried.
 * @returns 0, or 1 when a record could not be written as a line at all.
 */
export async function exportRecords(client: ServiceClient, options: ExportOptions, terminal: Terminal): Promise<number> {
  const out: Writable = options.output ? createWriteStream(options.output) : terminal.stdout;
  const order: readonly StoredKind[] = options.api === 'v2' ? V2_EXPORT_ORDER : EXPORT_ORDER;
  const kinds = order.filter((kind) => options.kinds.includes(kind));
  // v2 related-product links name products that may come later in the list: they are held on disk and follow all products.
  const spool =
    options.api === 'v2' && kinds.includes('product') ? await mkdtemp(path.join(os.tmpdir(), 'commerce-sync-export-')) : undefined;
  const progress = createExportReporter(terminal.stderr, { tty: Boolean(terminal.stderr.isTTY) });
  let code = 0;
  let finished = false;
  try {
    for (const kind of kinds) {
      const carriedBy =
        options.api === 'v1' ? Object.entries(CARRIED_BY[kind as RecordKind] ?? {}).filter(([, carrier]) => !kinds.includes(carrier)) : [];
      const uncarried = new Map<string, number>();
      let lines = 0;
      let links = 0;
      let stubs = 0;
      const dropped = new Map<string, number>();
      const problems: string[] = [];
      // Categories are written once all are read, parents first; every other kind streams page by page.
      const held: Array<{ id: string; parent: string | null; line: string }> = [];
      const related = spool ? createWriteStream(path.join(spool, 'related.ndjson')) : undefined;
      for await (const items of listAll(client, listPath(options.language, kind))) {
        const records = await wholeRecords(client, options.language, kind, items, options.api);
        progress.add(kind, records.length);
        for (const record of records) {
          for (const [field] of carriedBy) {
            const value = record[field];
            if (value !== null && value !== undefined && !(Array.isArray(value) && value.length === 0))
              uncarried.set(field, (uncarried.get(field) ?? 0) + 1);
          }
          const outcome = options.api === 'v2' ? exportV2Line(kind, record) : exportLine(kind as RecordKind, record);
          for (const field of outcome.dropped) dropped.set(field, (dropped.get(field) ?? 0) + 1);
          if ('line' in outcome) {
            if (kind === 'category')
              held.push({ id: String(record['id']), parent: (record['parent_category_id'] as string | null) ?? null, line: outcome.line });
            else await write(out, `${outcome.line}\n`);
            lines += 1;
          } else if (outcome.skipped === 'stub') stubs += 1;
          else problems.push(`${kind} ${String(record['id'])}: ${outcome.problem}`);
          if (options.api === 'v2' && kind === 'product') {
            const { categories, related: relatedLines } = productLinkLines(record);
            for (const line of categories) await write(out, `${line}\n`);
            for (const line of relatedLines) await write(related!, `${line}\n`);
            links += categories.length + relatedLines.length;
          }
        }
      }
      for (const category of parentsFirst(held)) await write(out, `${category.line}\n`);
      if (related) {
        related.end();
        await once(related, 'finish');
        if (kind === 'product') await pipeline(createReadStream(path.join(spool!, 'related.ndjson')), out, { end: false });
      }
      const notes = [
        links > 0 ? countOf(links, 'link line') : '',
        stubs > 0 ? `${countOf(stubs, 'stub')} skipped (the lines naming them bring them back)` : '',
        ...[...dropped].map(([field, count]) => `${field} of ${formatCount(count)} not carried (bulk lines cannot hold it)`),
        ...carriedBy
          .filter(([field]) => uncarried.has(field))
          .map(
            ([field, carrier]) =>
              `${field} of ${formatCount(uncarried.get(field)!)} travels with ${carrier} lines: export --kind ${carrier} too`,
          ),
        problems.length > 0 ? `${formatCount(problems.length)} could not be written as lines` : '',
      ].filter(Boolean);
      progress.note(`${kind}: ${countOf(lines, 'line')}${notes.length ? `; ${notes.join('; ')}` : ''}`);
      for (const problem of problems.slice(0, 10)) progress.note(`  ${problem}`);
      if (problems.length > 0) code = 1;
    }
    finished = true;
  } finally {
    progress.stop(finished);
    if (spool) await rm(spool, { recursive: true, force: true });
  }
  if (options.output) {
    out.end();
    await once(out, 'finish');
  }
  return code;
}
