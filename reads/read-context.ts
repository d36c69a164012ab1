import type { ListQuery } from '../catalogue/list-query.schema.js';
import type { Database } from '../platform/db.js';
import type { LiveLanguages } from '../records/live-languages.js';
import type { PreparedReader } from './prepared-read.js';
import type { ReadCaches } from './read-caches.js';

/** A server reads can run on (the primary or a replica: read-router.ts), with its pools and its caches. */
export interface ReadTarget {
  db: Database;
  /** The pool of the list pages' prepared statements (prepared-read.ts), and the pages it keeps. */
  reader: PreparedReader;
  /** Kept per server: a page or anchor read on one is only checked against that one. */
  caches: ReadCaches;
  /** A replica: what it does not show yet is read again from the primary rather than answered. */
  replica: boolean;
}

/** What a v2 read runs with: the server's pools and read caches, the process's languages, and the account asking. */
export interface ReadContext extends ReadTarget {
  /** The process's live languages (a list page's statement checks again that its language is live). */
  languages: LiveLanguages;
  accountId: number;
}

/** A list response, already serialised: `{"data":[...],"meta":{"current_page","per_page","total"}}`, as text or bytes. */
export type ListJson = string | Buffer;

/** A list response of `total` results with the page's items, already serialised (`data`). */
export const listJson = (query: ListQuery, total: number, data: string): ListJson =>
  `{"data":${data},"meta":{"current_page":${query.page},"per_page":${query.per_page},"total":${total}}}`;
