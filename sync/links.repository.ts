/*
 * The applier's statements on links (relations between records), each on one
 * slice of ids, as the serial view's are (applier.repository.ts).
 */
import { type DatabaseTransactionConnection, sql } from 'slonik';
import { z } from 'zod';
import { compareKeys } from '../catalogue/key-order.js';
import { copyInto, copyText } from '../platform/copy-in.js';
import { textArray, unparsedRows } from '../platform/db.js';

type Tx = DatabaseTransactionConnection;

const linkRows = unparsedRows(z.object({ writer: z.string(), other: z.string() }));

export type LinkSide = 'a' | 'b';

const otherSide = (side: LinkSide): LinkSide => (side === 'a' ? 'b' : 'a');

const linkColumns = (side: LinkSide) => ({
  mine: sql.identifier([side]),
  other: sql.identifier([otherSide(side)]),
});

/**
 * The next `limit` ids linked to `id` on its side, in order, after `after`
 * (from the start when null). The row comparison can only be served by the
 * index that leads with this side, so the scan reads exactly the page.
 */
export async function linksPage(
  tx: Tx,
  langKey: number,
  rel: string,
  side: LinkSide,
  id: string,
  after: string | null,
  limit: number,
): Promise<readonly string[]> {
  const { mine, other } = linkColumns(side);
  return tx.anyFirst(sql.type(z.object({ id: z.string() }))`
    SELECT l.${other} AS id FROM links l
    WHERE l.lang_key = ${langKey} AND l.rel = ${rel} AND l.${mine} = ${id} AND l.${other} > ${after ?? ''}::text
    ORDER BY l.${other}
    LIMIT ${limit}
  `);
}

/** Removes the links between `id` (on its side) and `others`. */
export async function unlinkMany(
  tx: Tx,
  langKey: number,
  rel: string,
  side: LinkSide,
  id: string,
  others: readonly string[],
): Promise<void> {
  if (others.length === 0) return;
  const { mine, other } = linkColumns(side);
  await tx.query(sql.unsafe`
    DELETE FROM links
    WHERE lang_key = ${langKey} AND rel = ${rel} AND ${mine} = ${id} AND ${other} = ANY(${textArray(others)})
  `);
}

/** Links the writer to `ids` (one slice of its list); returns the ids that were not linked yet. */
export async function linkMany(
  tx: Tx,
  langKey: number,
  rel: string,
  side: LinkSide,
  writer: string,
  ids: readonly string[],
  seq: number,
): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const { mine, other } = linkColumns(side);
  const added = await tx.anyFirst(sql.type(z.object({ id: z.string() }))`
    INSERT INTO links (lang_key, rel, ${mine}, ${other}, seq)
    SELECT ${langKey}, ${rel}, ${writer}, other_id, ${seq}
    FROM unnest(${textArray(ids)}) AS other_id
    ON CONFLICT DO NOTHING
    RETURNING ${other} AS id
  `);
  return new Set(added);
}

/** Adds or removes one link; true when that changed anything. */
export async function setLink(tx: Tx, langKey: number, rel: string, a: string, b: string, present: boolean, seq: number): Promise<boolean> {
  const result = present
    ? await tx.query(sql.unsafe`
        INSERT INTO links (lang_key, rel, a, b, seq) VALUES (${langKey}, ${rel}, ${a}, ${b}, ${seq})
        ON CONFLICT DO NOTHING
      `)
    : await tx.query(sql.unsafe`DELETE FROM links WHERE lang_key = ${langKey} AND rel = ${rel} AND a = ${a} AND b = ${b}`);
  return result.rowCount > 0;
}

/**
 * The links of `writers` on their side, at most `limit` (the caller asks for
 * one more than it can take, to know that a run is too big), sorted. (No
 * ORDER BY: with a list of writers the index cannot return them in order,
 * and sorting a writer's million links to keep a few would be the scan the
 * limit is there to avoid.)
 */
export async function existingLinks(
  tx: Tx,
  langKey: number,
  rel: string,
  side: LinkSide,
  writers: readonly string[],
  limit: number,
): Promise<ReadonlyArray<{ writer: string; other: string }>> {
  if (writers.length === 0) return [];
  const { mine, other } = linkColumns(side);
  // One index probe per writer (LATERAL): with "= ANY(writers)" and a language the statistics do not know, the
  // planner estimated one row for the whole language and read all of its links, filtering them.
  const rows = await tx.any(sql.type(linkRows)`
    SELECT w.writer, l.other
    FROM unnest(${textArray(writers)}) AS w(writer)
    CROSS JOIN LATERAL (
      SELECT l.${other} AS other FROM links l
      WHERE l.lang_key = ${langKey} AND l.rel = ${rel} AND l.${mine} = w.writer
      LIMIT ${limit}
    ) AS l
    LIMIT ${limit}
  `);
  return [...rows].sort((x, y) => (x.writer === y.writer ? compareKeys(x.other, y.other) : compareKeys(x.writer, y.writer)));
}

/** Removes exactly these links. */
export async function removeLinkPairs(
  tx: Tx,
  langKey: number,
  rel: string,
  side: LinkSide,
  pairs: ReadonlyArray<{ writer: string; other: string }>,
): Promise<void> {
  if (pairs.length === 0) return;
  const { mine, other } = linkColumns(side);
  const writers = textArray(pairs.map((pair) => pair.writer));
  const others = textArray(pairs.map((pair) => pair.other));
  await tx.query(sql.unsafe`
    DELETE FROM links l
    USING unnest(${writers}, ${others}) AS p(writer, other)
    WHERE l.lang_key = ${langKey} AND l.rel = ${rel} AND l.${mine} = ANY(${writers}) AND l.${other} = ANY(${others})
      AND l.${mine} = p.writer AND l.${other} = p.other
  `);
}

/**
 * Adds these links, each numbered by its change: links none of their writers
 * has yet (the caller leaves out the ones it read). Copied (a plain insert:
 * no ON CONFLICT, nothing returned): only the applier writes links, under its
 * language's lock, so nothing can have added one since they were read (a
 * duplicate is a bug, and fails the batch loudly), so nothing probes the
 * unique index for a conflict or returns rows no one reads.
 */
export async function insertLinkPairs(
  tx: Tx,
  langKey: number,
  rel: string,
  side: LinkSide,
  pairs: ReadonlyArray<{ writer: string; other: string; seq: number }>,
): Promise<void> {
  // Copied (platform/copy-in.ts): a run's new links are many rows with no conflict to handle.
  const prefix = `${langKey}\t${copyText(rel)}\t`;
  let rows = '';
  for (const pair of pairs) rows += `${prefix}${copyText(pair.writer)}\t${copyText(pair.other)}\t${pair.seq}\n`;
  await copyInto(tx, 'links', ['lang_key', 'rel', side, otherSide(side), 'seq'], rows);
}
