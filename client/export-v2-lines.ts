import type { z } from 'zod';
import { KINDS, LINK_WRITERS, type StoredKind } from '../catalogue/record-kinds.js';
import { type ExportOutcome, isEmpty, lineOf } from './export-lines.js';

/**
 * Records as v2 reads show them, written as lines of a v2 bulk file (README
 * "Bulk in v2"): each record is its PUT body, each product's categories and
 * related products are link lines. This carries everything a shop can write
 * through v2 (custom attributes, brands, order lines with variants, carts,
 * unsubscribes, purchase events), so a round trip through `push --api v2`
 * gives the same catalogue.
 *
 * - A body keeps the fields its v2 PUT takes; read-only fields (a category's
 *   `product_ids`, ...) are derived from other lines; nulls and empty custom
 *   attribute lists are left out (absent and null are the same on a new record).
 * - A record its PUT cannot create (a stub: required fields unset) is skipped;
 *   the line naming it brings it back.
 */

/**
 * The kinds of a whole v2 export, each before the lines that name it: brands
 * before products (brand_id), categories (parents first) before products and
 * their category links, products before their related-product links and the
 * variants, reviews, order lines and carts naming them, profiles before
 * reviews, orders and carts, orders before purchase events.
 */
export const V2_EXPORT_ORDER: readonly StoredKind[] = [
  'brand',
  'category',
  'product',
  'variant',
  'profile',
  'review',
  'order',
  'shopping_cart',
  'global_unsubscribe',
  'purchase_event',
];

/** Read fields that are the write's under another name. */
const RENAMED: Partial<Record<StoredKind, Record<string, string>>> = { global_unsubscribe: { profile_email: 'email' } };

/** Read fields the service derives or sets itself: never written, never reported as lost. */
const DERIVED: Partial<Record<StoredKind, string[]>> = {
  global_unsubscribe: ['profile_id', 'created_at', 'updated_at'],
  purchase_event: ['created_at', 'updated_at'],
};

/** Nulls and empty custom attribute lists left out, in list items too. */
function compact(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(compact);
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [key, field] of Object.entries(value)) {
    if (field === null || (key === 'custom_attributes' && Array.isArray(field) && field.length === 0)) continue;
    out[key] = compact(field);
  }
  return out;
}

/** The v2 line of one record (its PUT body), or why it has none; `dropped` names values no line can carry. */
export function exportV2Line(kind: StoredKind, record: Record<string, unknown>): ExportOutcome & { dropped: string[] } {
  const definition = KINDS[kind];
  const schema = definition.v2!.schema as z.AnyZodObject;
  const accepted = new Set(Object.keys(schema.shape));
  const readOnly = new Set([...definition.v2!.readOnly, ...(DERIVED[kind] ?? [])]);
  const renamed = RENAMED[kind] ?? {};
  const body: Record<string, unknown> = {};
  const dropped: string[] = [];
  for (const [readName, value] of Object.entries(record)) {
    const name = renamed[readName] ?? readName;
    if (readOnly.has(name) || readOnly.has(readName)) continue;
    if (!accepted.has(name)) {
      if (!isEmpty(value)) dropped.push(name);
      continue;
    }
    const field = compact(value);
    if (field === null || (name === 'custom_attributes' && isEmpty(field))) continue;
    body[name] = field;
  }
  return lineOf(kind, schema, body, dropped);
}

const segment = (id: string) => encodeURIComponent(id);

/**
 * The link lines of a product as v2 reads it: `{"put":"products/P/categories/C"}`
 * for each category, and the same for each related product.
 */
export function productLinkLines(product: Record<string, unknown>): { categories: string[]; related: string[] } {
  const id = segment(String(product['id']));
  const lines = (writer: keyof typeof LINK_WRITERS) => {
    const others = product[LINK_WRITERS[writer].field];
    return Array.isArray(others)
      ? others.map((other) => JSON.stringify({ put: `products/${id}/${writer}/${segment(String(other))}` }))
      : [];
  };
  return { categories: lines('categories'), related: lines('relevant_products') };
}
