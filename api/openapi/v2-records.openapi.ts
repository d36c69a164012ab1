import type { ZodTypeAny } from 'zod';
import { kindsStubbedBy } from '../../catalogue/liveness.js';
import { KINDS, type LineParent, PERSONAL_FIELDS, STORED_KINDS, type StoredKind } from '../../catalogue/record-kinds.js';
import type { ItemPart, ItemShape } from '../../reads/item-shape.js';
import { CATEGORY_SUMMARY, PRODUCT_SUMMARY, PROFILE_SUMMARY, SHAPES, VARIANT_SUMMARY } from '../../reads/v2-shapes.js';
import { nullable, responseView } from './v1.openapi.js';
import { z } from './zod-openapi.js';

/*
 * The records v2 shows, in the API description: generated from the item
 * shapes the reads present them in (reads/v2-shapes.ts) and the kinds' write
 * schemas, so a field shown is a field described.
 */

export const pascal = (kind: string) => kind.replace(/(^|_)([a-z])/g, (_, __, letter: string) => letter.toUpperCase());
export const dateTime = () => z.string().openapi({ format: 'date-time' });
export const uri = () => z.string().openapi({ format: 'uri' });
const ids = (description: string) => z.array(z.string()).openapi({ description });

export const customAttributeSchema = z
  .object({
    name: z.string(),
    string_value: z.string().optional(),
    integer_value: z.number().int().optional(),
    boolean_value: z.boolean().optional(),
    date_value: z.string().optional().openapi({ description: 'YYYY-MM-DD' }),
    datetime_value: z.string().optional().openapi({ format: 'date-time', description: 'ISO 8601, shown in UTC' }),
  })
  .openapi('CustomAttribute', { description: '`name` and exactly one value field; names are unique within a record' });

const orderLineSchema = z
  .object({ id: z.string(), quantity: z.number().int().nullable(), variant_id: z.string().nullable() })
  .openapi('OrderLine', { description: 'A line of an order; its custom attributes show in the lines list' });

/** Kinds a write can create as a stub, holding only its id: each of their fields may be null. */
const STUBBED = new Set(STORED_KINDS.flatMap((kind) => [...kindsStubbedBy(kind)]));

/** Descriptions of the parts that are not a written field. */
const LINKS = {
  product_category: { a: 'Current category assignments', b: 'Products currently assigned' },
  relevant: { a: 'Current related products', b: 'Products that list this one as related' },
} as const;

/** What a key says beyond its type, where its name does not say enough. */
const NOTES: Partial<Record<StoredKind, Record<string, ZodTypeAny>>> = {
  order: {
    status: z.string().nullable().openapi({ description: "processing, shipped, completed, cancelled, or a shop's own status" }),
  },
  global_unsubscribe: {
    profile_email: z.string().openapi({ format: 'email', description: 'In lower case' }),
  },
  purchase_event: {
    visitor_token: z
      .string()
      .nullable()
      .openapi({ description: "Required on every write; null once an erasure cleared it (the profile's personal data)" }),
  },
};

const ruleOf = (schema: z.ZodTypeAny, field: string): ZodTypeAny | undefined =>
  ((schema as z.AnyZodObject).shape as Record<string, ZodTypeAny>)[field];

/**
 * A written field as a response shows it: null when unset, which a field can
 * be unless every write of the kind (v1 and v2) requires it, no write stubs
 * the kind, and no erasure can clear it.
 */
function fieldSchema(kind: StoredKind, field: string): ZodTypeAny {
  const definition = KINDS[kind];
  const rule = ruleOf(definition.v2.schema, field);
  if (!rule) throw new Error(`${kind} shows ${field}, which its v2 write schema lacks`);
  const shown = field.endsWith('_id') ? z.string() : responseView(rule);
  const required = (schema: z.ZodTypeAny) => {
    const own = ruleOf(schema, field);
    return own !== undefined && !own.isOptional() && !own.isNullable();
  };
  const personal = ((PERSONAL_FIELDS as Partial<Record<StoredKind, readonly string[]>>)[kind] ?? []).includes(field);
  // A reference is cleared by its record's erasure when it named the person by email.
  const alwaysSet =
    required(definition.v2.schema) && required(definition.schema) && !STUBBED.has(kind) && !personal && !field.endsWith('_id');
  return alwaysSet ? shown : nullable(shown);
}

function partSchema(kind: StoredKind, part: ItemPart): ZodTypeAny {
  switch (part.from) {
    case 'id':
      return z.string();
    case 'created_at':
    case 'updated_at':
      return dateTime();
    case 'custom_attributes':
      return z.array(customAttributeSchema);
    case 'field':
      return fieldSchema(kind, part.field);
    case 'links':
      return ids(LINKS[part.rel][part.side]);
    case 'brand_products':
      return ids('Live products whose brand_id is this brand (read-only)');
    case 'list':
      return ids('The products, in the order written');
    case 'order_lines':
      return z.array(orderLineSchema);
    case 'line_products':
      return ids("The distinct products of the order's lines, in line order (read-only)");
    case 'profile_by_email':
      return z.string().nullable().openapi({ description: "The language's (oldest) profile with this email, if any" });
  }
}

/** The object an item of `shape` is, its keys in shape order. */
function itemSchema(kind: StoredKind, shape: ItemShape): z.AnyZodObject {
  return z.object(Object.fromEntries(shape.map((part) => [part.key, NOTES[kind]?.[part.key] ?? partSchema(kind, part)])));
}

const RECORD_SCHEMAS = {} as Record<StoredKind, ZodTypeAny>;
for (const kind of STORED_KINDS) {
  RECORD_SCHEMAS[kind] = itemSchema(kind, SHAPES[kind]).openapi(KINDS[kind].idFrom ? pascal(kind) : `${pascal(kind)}V2`);
}

/** The full record of each kind as v2 reads and PUTs show it. */
export function recordSchema(kind: StoredKind): ZodTypeAny {
  return RECORD_SCHEMAS[kind];
}

export const summaries = {
  variant: itemSchema('variant', VARIANT_SUMMARY).openapi('VariantSummary', {
    description: '`name` is the title, `price` the price_incl',
  }),
  category: itemSchema('category', CATEGORY_SUMMARY).openapi('CategorySummary'),
  product: itemSchema('product', PRODUCT_SUMMARY).openapi('ProductSummary'),
  profile: itemSchema('profile', PROFILE_SUMMARY).openapi('ProfileSummary'),
};

export const lineItemSchemas: Record<LineParent, ZodTypeAny> = {
  order: z
    .object({
      order_id: z.string(),
      product_id: z.string(),
      quantity: z.number().int().nullable(),
      variant_id: z.string().nullable(),
      custom_attributes: z.array(customAttributeSchema),
    })
    .openapi('OrderLineItem'),
  shopping_cart: z.object({ shopping_cart_id: z.string(), product_id: z.string() }).openapi('CartProductItem'),
};
