import { sql } from 'slonik';

/**
 * One field of an item as the v2 reads show it. The same description is
 * shown by SQL (lists: the page's JSON is built in the list's own statement)
 * and by JavaScript (single records), so the two cannot drift apart.
 */
export type ItemPart =
  | { key: string; from: 'id' | 'created_at' | 'updated_at' | 'custom_attributes' }
  /** A data field, null when unset. */
  | { key: string; from: 'field'; field: string }
  /** The ids linked to the record through `rel` (the record on `side`), in id order. */
  | { key: string; from: 'links'; rel: 'product_category' | 'relevant'; side: 'a' | 'b' }
  /** The live products whose brand_id is the record, in list order. */
  | { key: string; from: 'brand_products' }
  /** A list held in a data field, [] when unset (a cart's product_ids). */
  | { key: string; from: 'list'; field: string }
  /** An order's lines as `{id, quantity, variant_id}` (absent values null). */
  | { key: string; from: 'order_lines' }
  /** The distinct products of an order's lines, in line order. */
  | { key: string; from: 'line_products' }
  /** The oldest live profile whose email is the record's id (a global unsubscribe), or null. */
  | { key: string; from: 'profile_by_email' };
export type ItemShape = readonly ItemPart[];

/** A timestamp exactly as the API shows it (db.ts: ISO 8601 in UTC with milliseconds). */
export const isoText = (column: ReturnType<typeof sql.identifier>) =>
  sql.fragment`to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/** The SQL value of one part for the record `r`. */
function partValue(langKey: number, part: ItemPart) {
  switch (part.from) {
    case 'id':
      return sql.fragment`r.id`;
    case 'created_at':
      return sql.fragment`t.created_text`;
    case 'updated_at':
      // Most records were never updated: their created_at's text is formatted once for both.
      return sql.fragment`CASE WHEN r.updated_at = r.created_at THEN t.created_text ELSE ${isoText(sql.identifier(['r', 'updated_at']))} END`;
    case 'field':
      return sql.fragment`${sql.identifier(['f', part.field])}`;
    case 'custom_attributes':
      return sql.fragment`coalesce(nullif(f.custom_attributes, 'null'::jsonb), '[]'::jsonb)`;
    case 'links': {
      const mine = sql.identifier(['l', part.side]);
      const other = sql.identifier(['l', part.side === 'a' ? 'b' : 'a']);
      // A relation the language has no links of (often 'relevant') is not probed for each item: whether it
      // has any is read once per statement, in its snapshot, from the primary key (min() is its first entry;
      // an EXISTS was planned as a scan of the table, generic plans not knowing the relation is empty).
      return sql.fragment`CASE WHEN (SELECT min(l.a) FROM links l WHERE l.lang_key = ${langKey} AND l.rel = ${part.rel}) IS NOT NULL THEN to_json(ARRAY(
        SELECT ${other} FROM links l
        WHERE l.lang_key = ${langKey} AND l.rel = ${part.rel} AND ${mine} = r.id
        ORDER BY ${other}
      )) ELSE '[]'::json END`;
    }
    case 'brand_products':
      return sql.fragment`to_json(ARRAY(
        SELECT p.id FROM records p
        WHERE p.lang_key = ${langKey} AND p.kind = 'product' AND p.live AND (p.data ->> 'brand_id') = r.id
        ORDER BY p.created_at, p.id
      ))`;
    case 'list':
      return sql.fragment`CASE WHEN jsonb_typeof(r.data -> ${part.field}) = 'array' THEN r.data -> ${part.field} ELSE '[]'::jsonb END`;
    case 'order_lines':
      return sql.fragment`CASE WHEN jsonb_typeof(r.data -> 'products') = 'array' THEN (
        SELECT coalesce(jsonb_agg(jsonb_build_object(
          'id', line -> 'id',
          'quantity', coalesce(line -> 'quantity', 'null'::jsonb),
          'variant_id', coalesce(line -> 'variant_id', 'null'::jsonb)
        ) ORDER BY n), '[]'::jsonb)
        FROM jsonb_array_elements(r.data -> 'products') WITH ORDINALITY AS lines (line, n)
      ) ELSE '[]'::jsonb END`;
    case 'line_products':
      return sql.fragment`CASE WHEN jsonb_typeof(r.data -> 'products') = 'array' THEN to_jsonb(ARRAY(
        SELECT product FROM (
          SELECT line ->> 'id' AS product, min(n) AS first
          FROM jsonb_array_elements(r.data -> 'products') WITH ORDINALITY AS lines (line, n)
          GROUP BY 1
        ) AS distinct_products
        ORDER BY first
      )) ELSE '[]'::jsonb END`;
    case 'profile_by_email':
      return sql.fragment`(
        SELECT p.id FROM records p
        WHERE p.lang_key = ${langKey} AND p.kind = 'profile' AND p.live AND lower(p.data ->> 'email') = r.id
        ORDER BY p.created_seq
        LIMIT 1
      )`;
  }
}

/** The data fields a shape shows as they are stored (its `field` and `custom_attributes` parts), each once. */
function storedFields(shape: ItemShape): string[] {
  const names = shape.flatMap((part) =>
    part.from === 'field' ? [part.field] : part.from === 'custom_attributes' ? ['custom_attributes'] : [],
  );
  return [...new Set(names)];
}

/**
 * The record's data fields an item shows, as the columns of `f`, taken from
 * `r.data` in one call. A record's data is stored compressed once it passes
 * about 2 KB (a product with a description), and each `r.data -> 'field'`
 * decompresses all of it again: one jsonb_to_record decompresses it once. A
 * column is null where the field is absent, as `->` would be.
 */
export const itemFields = (shape: ItemShape) => {
  const names = storedFields(shape);
  if (names.length === 0) return sql.fragment``;
  return sql.fragment`CROSS JOIN LATERAL jsonb_to_record(r.data) AS f(${sql.join(
    names.map((name) => sql.fragment`${sql.identifier([name])} jsonb`),
    sql.fragment`, `,
  )})`;
};

/** The columns of an item (from `r`, `t` and `f`: itemFields); row_to_json of them gives the item with its keys in shape order. */
export const itemColumns = (langKey: number, shape: ItemShape) =>
  sql.join(
    shape.map((part) => sql.fragment`${partValue(langKey, part)} AS ${sql.identifier([part.key])}`),
    sql.fragment`, `,
  );
