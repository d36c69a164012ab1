import { type CommonQueryMethods, sql } from 'slonik';
import { z } from 'zod';

/* The lists a record shows (its links, a brand's products, a global unsubscribe's profile), for many records at once. */

const idsRow = z.object({ owner: z.string(), ids: z.array(z.string()) });

/**
 * The current links of many records at once: for each owner in `owners`
 * (on `side`), the ids on the other side, in id order.
 */
export async function linkedIds(
  db: CommonQueryMethods,
  langKey: number,
  rel: 'product_category' | 'relevant',
  side: 'a' | 'b',
  owners: readonly string[],
): Promise<Map<string, string[]>> {
  if (owners.length === 0) return new Map();
  const mine = sql.identifier([side]);
  const other = sql.identifier([side === 'a' ? 'b' : 'a']);
  const rows = await db.any(sql.type(idsRow)`
    SELECT ${mine} AS owner, array_agg(${other} ORDER BY ${other}) AS ids
    FROM links
    WHERE lang_key = ${langKey} AND rel = ${rel} AND ${mine} = ANY(${sql.array([...owners], 'text')})
    GROUP BY ${mine}
  `);
  return new Map(rows.map((row) => [row.owner, [...row.ids]]));
}

/** For each global unsubscribe (its id: a lower-case email), the oldest live profile with that email. */
export async function profilesByEmail(db: CommonQueryMethods, langKey: number, emails: readonly string[]): Promise<Map<string, string>> {
  if (emails.length === 0) return new Map();
  const rows = await db.any(sql.type(z.object({ email: z.string(), id: z.string() }))`
    SELECT DISTINCT ON (lower(data ->> 'email')) lower(data ->> 'email') AS email, id
    FROM records
    WHERE lang_key = ${langKey} AND kind = 'profile' AND live AND lower(data ->> 'email') = ANY(${sql.array([...emails], 'text')})
    ORDER BY lower(data ->> 'email'), created_seq
  `);
  return new Map(rows.map((row) => [row.email, row.id]));
}

/** For each brand in `brandIds`, its live products (by the products' brand_id), in list order. */
export async function brandProductIds(
  db: CommonQueryMethods,
  langKey: number,
  brandIds: readonly string[],
): Promise<Map<string, string[]>> {
  if (brandIds.length === 0) return new Map();
  const rows = await db.any(sql.type(idsRow)`
    SELECT data ->> 'brand_id' AS owner, array_agg(id ORDER BY created_at, id) AS ids
    FROM records
    WHERE lang_key = ${langKey} AND kind = 'product' AND live
      AND (data ->> 'brand_id') = ANY(${sql.array([...brandIds], 'text')})
    GROUP BY data ->> 'brand_id'
  `);
  return new Map(rows.map((row) => [row.owner, [...row.ids]]));
}
