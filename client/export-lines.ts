import { ZodArray, ZodEffects, ZodNullable, ZodObject, ZodOptional, type z } from 'zod';
import { KINDS, RECORD_KINDS, type RecordKind } from '../catalogue/record-kinds.js';
import { toValidationError } from '../catalogue/validation.js';

/**
 * Turns records as v2 reads show them into bulk lines as `push` sends them
 * (`{"<kind>":{...}}`, the v1 write body), so that pushing an export into an
 * empty language gives the same catalogue.
 *
 * - Only fields a bulk line may carry are written (the kind's v1 write schema);
 *   null fields are left out (absent and null are the same on a new record).
 * - Links travel once: on the product (`category_ids`, `relevant_product_ids`)
 *   and on the brand (`product_ids`, the only way a line sets a product's
 *   brand, so a product's `brand_id` is left out); a category's `product_ids`
 *   are the same links seen from the other side and are left out too, so a
 *   category line never detaches products (CARRIED_BY).
 * - A stub (a record only named by another, its required fields unset) is not
 *   a valid line: it is skipped, and comes back from the line that names it.
 */

/**
 * The order of a whole-catalogue export: a record's line comes before the
 * lines that name it where the kinds allow (categories before products,
 * products before the brands, variants and reviews that name them, profiles
 * before reviews, orders and carts), so pushing the file makes no stub that a
 * later line has to fill in.
 */
export const EXPORT_ORDER: readonly RecordKind[] = [
  'category',
  'product',
  'brand',
  'variant',
  'profile',
  'review',
  'order',
  'shopping_cart',
];

/**
 * Categories with every parent before its children (roots first, then each
 * level in list order); categories whose parent is not among them count as
 * roots, and a cycle, which the service cannot hold anyway, keeps list order.
 */
export function parentsFirst<T extends { id: string; parent: string | null }>(items: readonly T[]): T[] {
  const ids = new Set(items.map((item) => item.id));
  const children = new Map<string, T[]>();
  const ordered: T[] = [];
  for (const item of items) {
    if (item.parent !== null && ids.has(item.parent) && item.parent !== item.id) {
      children.set(item.parent, [...(children.get(item.parent) ?? []), item]);
    } else ordered.push(item);
  }
  for (let index = 0; index < ordered.length; index += 1) {
    for (const child of children.get(ordered[index]!.id) ?? []) ordered.push(child);
    children.delete(ordered[index]!.id);
  }
  for (const rest of children.values()) for (const item of rest) ordered.push(item);
  return ordered;
}

/** Fields of a v2 record whose links travel in another kind's lines, and that kind. */
export const CARRIED_BY: Partial<Record<RecordKind, Record<string, RecordKind>>> = {
  category: { product_ids: 'product' },
  product: { brand_id: 'brand' },
};

/**
 * A line, or why there is none: a stub (required fields unset), or a record
 * holding a value a bulk line cannot carry (`problem` says which).
 */
export type ExportOutcome = { line: string } | { skipped: 'stub' } | { skipped: 'unrepresentable'; problem: string };

export function isRecordKind(value: string): value is RecordKind {
  return (RECORD_KINDS as readonly string[]).includes(value);
}

/**
 * The bulk line of one record, or why it has none. `dropped` names the
 * fields with a value that no line can carry (v2-only data).
 */
export function exportLine(kind: RecordKind, record: Record<string, unknown>): ExportOutcome & { dropped: string[] } {
  const schema = KINDS[kind].schema as z.AnyZodObject;
  const accepted = new Set(Object.keys(schema.shape));
  const carried = CARRIED_BY[kind] ?? {};
  const readOnly = KINDS[kind].v2.readOnly;
  const fields: Record<string, unknown> = {};
  const dropped: string[] = [];
  for (const [name, value] of Object.entries(record)) {
    if (value === null || name in carried) continue;
    if (!accepted.has(name)) {
      // A read-only v2 field the line does not take is derived from what it does (an order's product_ids from its lines).
      if (!isEmpty(value) && !readOnly.includes(name)) dropped.push(name);
      continue;
    }
    fields[name] = keepItemFields(schema.shape[name], name, value, dropped);
  }
  // A profile is created only with an email (interface §4.5), which the schema cannot say: one without is a stub.
  if (kind === 'profile' && fields['email'] === undefined) return { skipped: 'stub', dropped: [] };
  return lineOf(kind, schema, fields, dropped);
}

/**
 * `{"<kind>": fields}` when the write schema takes the fields; a stub when
 * they lack a required one; otherwise unrepresentable, saying why.
 */
export function lineOf(
  kind: string,
  schema: z.AnyZodObject,
  fields: Record<string, unknown>,
  dropped: string[],
): ExportOutcome & { dropped: string[] } {
  const parsed = schema.safeParse(fields);
  if (!parsed.success) {
    const problem = toValidationError(parsed.error, fields);
    if (problem.errorClass === 'missing_parameters') return { skipped: 'stub', dropped: [] };
    return { skipped: 'unrepresentable', problem: problem.message, dropped: [] };
  }
  return { line: JSON.stringify({ [kind]: fields }), dropped };
}

/**
 * A list of objects (order lines) keeps only the item fields the line schema
 * accepts: v2 lines also show `variant_id` and `custom_attributes`, which a
 * v1 line refuses. Values left behind are named as `products[].variant_id`.
 */
function keepItemFields(field: z.ZodTypeAny, name: string, value: unknown, dropped: string[]): unknown {
  const item = listItemShape(field);
  if (!item || !Array.isArray(value)) return value;
  const lost = new Set<string>();
  const kept = value.map((entry) => {
    if (entry === null || typeof entry !== 'object' || Array.isArray(entry)) return entry;
    const out: Record<string, unknown> = {};
    for (const [key, inner] of Object.entries(entry as Record<string, unknown>)) {
      if (key in item) out[key] = inner;
      else if (!isEmpty(inner)) lost.add(`${name}[].${key}`);
    }
    return out;
  });
  dropped.push(...lost);
  return kept;
}

/** The item shape of a field that is a list of objects, through optional, nullable and effects wrappers. */
function listItemShape(field: z.ZodTypeAny): z.ZodRawShape | null {
  let current: z.ZodTypeAny = field;
  for (;;) {
    if (current instanceof ZodOptional || current instanceof ZodNullable) current = current.unwrap();
    else if (current instanceof ZodEffects) current = current.innerType();
    else break;
  }
  if (!(current instanceof ZodArray)) return null;
  const element: z.ZodTypeAny = current.element;
  return element instanceof ZodObject ? element.shape : null;
}

/** No value worth a line: null, absent, or an empty list. */
export const isEmpty = (value: unknown) => (Array.isArray(value) ? value.length === 0 : value === null || value === undefined);
