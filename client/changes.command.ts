import { type Command, InvalidArgumentError, Option } from 'commander';
import { FEED_KINDS } from '../feed/feed.schema.js';
import { ClientError, errorText, type ServiceClient } from './service.client.js';
import type { Terminal } from './terminal.js';

/*
 * `commerce-sync changes` (interface §22.7): the language's change feed as
 * NDJSON on stdout, one entry a line, and the cursor to resume from on stderr
 * when it stops. --follow keeps reading with `wait`, until interrupted.
 */

/** The most entries a page can have: a catch-up reads as few pages as it can. */
const PAGE_LIMIT = 1_000;
/** How long each read of --follow is held by the service while nothing is new. */
const FOLLOW_WAIT_S = 30;

interface FeedPage {
  data: Array<Record<string, unknown>>;
  meta: { next_cursor: string; has_more: boolean };
}

export interface ChangesOptions {
  language: string;
  after?: string;
  follow: boolean;
  kinds?: string[];
}

const kindList = (value: string, previous: string[] = []) => {
  const kinds = value.split(',').map((kind) => kind.trim());
  for (const kind of kinds)
    if (!(FEED_KINDS as readonly string[]).includes(kind)) throw new InvalidArgumentError(`kinds must be among ${FEED_KINDS.join(', ')}`);
  return [...previous, ...kinds];
};

/** Adds the command to the program; `client` and `run` are the program's own. */
export function addChangesCommand(program: Command, client: () => ServiceClient, run: (code: number) => void, terminal: Terminal): void {
  program
    .command('changes')
    .description("print the language's changes (every audit entry, in order) as NDJSON, from the start or after a cursor")
    .addOption(new Option('-l, --language <id>', 'the language (its id, e.g. nl)').makeOptionMandatory())
    .option('--after <cursor>', 'start after this cursor (the one a previous run printed on stderr)')
    .option('--follow', 'keep reading new changes as they come, until interrupted')
    .addOption(
      new Option('-k, --kinds <kinds>', `only these body keys, comma-separated or repeated: ${FEED_KINDS.join(', ')}`).argParser(kindList),
    )
    .addHelpText('after', '\nThe cursor to resume from goes to stderr when the command stops: pass it to --after next time.')
    .action(async (options: { language: string; after?: string; follow?: boolean; kinds?: string[] }) =>
      run(await printChanges(client(), { ...options, follow: Boolean(options.follow) }, terminal)),
    );
}

/** Reads pages until the feed is read (or, with --follow, until SIGINT/SIGTERM); answers the exit code. */
export async function printChanges(client: ServiceClient, options: ChangesOptions, terminal: Terminal): Promise<number> {
  const stop = new AbortController();
  const onSignal = () => stop.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  let cursor = options.after;
  try {
    for (;;) {
      let page: FeedPage;
      try {
        page = await readPage(client, options, cursor, stop.signal);
      } catch (error) {
        if (!stop.signal.aborted) throw error;
        return stopped(terminal, cursor, 130);
      }
      for (const entry of page.data) await write(terminal.stdout, `${JSON.stringify(entry)}\n`);
      cursor = page.meta.next_cursor;
      if (stop.signal.aborted) return stopped(terminal, cursor, 130);
      if (!page.meta.has_more && !options.follow) return stopped(terminal, cursor, 0);
    }
  } catch (error) {
    if (cursor !== undefined) terminal.stderr.write(`${cursor}\n`);
    throw error;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

async function readPage(
  client: ServiceClient,
  options: ChangesOptions,
  cursor: string | undefined,
  signal: AbortSignal,
): Promise<FeedPage> {
  const query = new URLSearchParams({ limit: String(PAGE_LIMIT) });
  if (cursor !== undefined) query.set('after', cursor);
  if (options.kinds?.length) query.set('kinds', [...new Set(options.kinds)].join(','));
  if (options.follow) query.set('wait', String(FOLLOW_WAIT_S));
  const response = await client.request('GET', `/api/v2/languages/${encodeURIComponent(options.language)}/changes?${query}`, { signal });
  const text = await response.text();
  const body = text ? (JSON.parse(text) as unknown) : undefined;
  if (response.status === 410)
    throw new ClientError(
      'the cursor is older than the changes kept: re-read the lists, then follow from now (GET .../changes?from=now)',
      410,
    );
  if (!response.ok) throw new ClientError(errorText(body, response.status), response.status);
  return body as FeedPage;
}

/** The cursor to resume from, alone on its line, so that `2>cursor` keeps it. */
function stopped(terminal: Terminal, cursor: string | undefined, code: number): number {
  if (cursor !== undefined) terminal.stderr.write(`${cursor}\n`);
  return code;
}

/** Writes, waiting while the reader of stdout is behind (a pipe into a slow consumer). */
function write(stream: NodeJS.WritableStream, text: string): Promise<void> {
  return new Promise((resolve) => {
    if (stream.write(text)) resolve();
    else stream.once('drain', resolve);
  });
}
