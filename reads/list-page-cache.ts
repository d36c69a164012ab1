import type pg from 'pg';

/*
 * v2 list pages served again while their language has not changed.
 *
 * A page costs Postgres milliseconds of CPU (its rows, every product's
 * category links, the items' JSON) and the same
 * page is read again and again: a shop's catalogue changes a few times a
 * minute, while marketing automation and storefront syncs poll its first
 * pages. Each page is kept with the snapshot its statement ran in; a request
 * for the same statement and values asks Postgres, in one small statement,
 * whether anything its language's lists show was written since that snapshot
 * (reads/sql/list_unchanged.sql), and if not answers with the kept page. So a
 * reused page is exactly what the statement would read now: the question is
 * asked in a snapshot taken after the request came, as the page's own
 * statement would be. Why the answer is exact: docs/consistency.md, "Pages
 * served again".
 *
 * Per API process, least recently used first out, bounded in bytes. A page
 * is kept the second time it is read, not the first: a client walking a
 * whole catalogue with `cursor` reads each page once, and keeping those
 * would push the pages read again and again out of the room.
 *
 * Requests that must read the same page share a read, but only one that
 * started after they arrived (its snapshot then sees every write answered
 * before them): a request that finds a read of its page under way that
 * started earlier waits for the next one, which starts when that one ends
 * and serves every request that came meanwhile. So a page made stale by a
 * write is read again about once, not once for each reader that polls it.
 */

/** What a list statement's row must carry to be kept: the snapshot it was read in, and its page. */
export interface CacheablePage {
  snapshot: string;
  data: string;
}

interface Entry {
  page: CacheablePage;
  bytes: number;
}

/** A read of a page, shared by the requests that arrived before it started. */
interface SharedRead {
  /** The arrival count when it started; undefined while it waits for the read before it. */
  startedAt: number | undefined;
  result: Promise<CacheablePage>;
}

export interface ListPageCacheStats {
  /** Pages read with nothing kept for them. */
  read: number;
  /** Pages kept but written since: read again. */
  stale: number;
  /** Pages answered from what was kept. */
  reused: number;
}

/**
 * A page's size as kept: its JSON at two bytes a character (V8's widest), the
 * body it was answered with (read-caches.ts keeps it beside the page), and
 * the rest of the row.
 */
const bytesOf = (page: CacheablePage) => page.data.length * 3 + 512;

const UNCHANGED = 'SELECT list_unchanged_since($1::int8, $2::pg_snapshot) AS unchanged';

/** Keys of pages read once and not kept, remembered so that a second read keeps the page; forgotten all at once beyond this. */
const MAX_SEEN = 10_000;

export class ListPageCache {
  private readonly entries = new Map<string, Entry>();
  private readonly seen = new Set<string>();
  /** The latest read of each page under way or waiting to start. */
  private readonly reads = new Map<string, SharedRead>();
  /** Requests counted as they arrive: a read serves those counted before it started. */
  private arrivals = 0;
  private bytes = 0;
  readonly stats: ListPageCacheStats = { read: 0, stale: 0, reused: 0 };

  /** `maxBytes` 0 keeps nothing: every page is read, by its own request. */
  constructor(
    private readonly pool: pg.Pool,
    private readonly maxBytes: number,
  ) {}

  /**
   * The page `key` names (the statement and its values; it must determine
   * the page given the language's state), reused when kept and unchanged
   * since, otherwise read (and kept).
   */
  async page<Page extends CacheablePage>(
    langKey: number,
    key: string,
    read: () => Promise<Page>,
  ): Promise<{ page: Page; reused: boolean }> {
    if (this.maxBytes === 0) {
      this.stats.read += 1;
      return { page: await read(), reused: false };
    }
    const arrival = ++this.arrivals;
    const kept = this.entries.get(key);
    if (kept) {
      const result = await this.pool.query<{ unchanged: boolean }>({
        name: 'list_unchanged_since',
        text: UNCHANGED,
        values: [langKey, kept.page.snapshot],
      });
      if (result.rows[0]?.unchanged) {
        // Most recently used last: the first entries are the first out.
        this.entries.delete(key);
        this.entries.set(key, kept);
        this.stats.reused += 1;
        // Kept under this key by a read of the same statement, so of the caller's type.
        return { page: kept.page as Page, reused: true };
      }
      this.stats.stale += 1;
    } else {
      this.stats.read += 1;
      if (!this.seen.delete(key)) {
        if (this.seen.size >= MAX_SEEN) this.seen.clear();
        this.seen.add(key);
        return { page: await this.shared(key, arrival, read), reused: false };
      }
    }
    const page = await this.shared(key, arrival, read);
    this.keep(key, page);
    return { page, reused: false };
  }

  /**
   * The page read by a read that started after request `arrival` came: the
   * one under way if it did, else the next (started once the one under way
   * ends, for every request that came before then), else a new one.
   */
  private shared<Page extends CacheablePage>(key: string, arrival: number, read: () => Promise<Page>): Promise<Page> {
    const latest = this.reads.get(key);
    // Reads of one key read the same statement and values, so of the caller's type.
    if (latest && (latest.startedAt === undefined || latest.startedAt > arrival)) return latest.result as Promise<Page>;
    const next = { startedAt: undefined } as SharedRead;
    const start = () => {
      next.startedAt = ++this.arrivals;
      return read();
    };
    next.result = latest ? latest.result.then(start, start) : start();
    this.reads.set(key, next);
    const done = () => {
      if (this.reads.get(key) === next) this.reads.delete(key);
    };
    next.result.then(done, done);
    return next.result as Promise<Page>;
  }

  private keep(key: string, page: CacheablePage): void {
    const bytes = bytesOf(page);
    this.forget(key);
    // One page that would take more than a quarter of the room would push out everything else for little.
    if (bytes > this.maxBytes / 4) return;
    this.entries.set(key, { page, bytes });
    this.bytes += bytes;
    for (const [oldest, entry] of this.entries) {
      if (this.bytes <= this.maxBytes) break;
      this.entries.delete(oldest);
      this.bytes -= entry.bytes;
    }
  }

  private forget(key: string): void {
    const entry = this.entries.get(key);
    if (!entry) return;
    this.entries.delete(key);
    this.bytes -= entry.bytes;
  }

  /** The bytes the kept pages are counted at (a page read once is not kept yet). */
  get keptBytes(): number {
    return this.bytes;
  }
}
