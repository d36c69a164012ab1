import { z } from 'zod';
import { customAttributesSchema } from './custom-attribute.schema.js';
import {
  dateTimeSchema,
  emailSchema,
  finiteNumber,
  idListSchema,
  idSchema,
  listOf,
  MAX_LIST_ITEMS,
  textSchema,
  urlSchema,
} from './primitives.schema.js';

/*
 * The write schemas of every stored kind. The v1 schemas are the field
 * tables; each v2 schema is derived from its kind's v1 schema (ids become v2
 * ids, list fields v2 does not write are left out, v2's own fields added), so
 * a field added to a v1 table reaches v2 too. A schema's order is the order
 * its invalid fields are reported in and responses show its fields in.
 */

const optional = <T extends z.ZodTypeAny>(schema: T) => schema.nullable().optional();
const text = textSchema();
const timestamps = {
  created_at: optional(dateTimeSchema),
  updated_at: optional(dateTimeSchema),
};

/** v2 identifiers are strings (interface §2.2), 1..255 characters like every id. */
export const v2IdSchema = textSchema(1, 255);

// The id schemas of v1 fields, each with its v2 counterpart (v2From swaps them).
const optionalId = optional(idSchema);
const optionalIdList = optional(idListSchema);
const V2_IDS = new Map<z.ZodTypeAny, z.ZodTypeAny>([
  [idSchema, v2IdSchema],
  [optionalId, optional(v2IdSchema)],
  [idListSchema, listOf(v2IdSchema)],
  [optionalIdList, optional(listOf(v2IdSchema))],
]);

export const brandSchema = z
  .object({
    id: idSchema,
    name: textSchema(1),
    url: optional(urlSchema),
    content: optional(text),
    product_ids: optionalIdList,
    ...timestamps,
  })
  .strict();

export const categorySchema = z
  .object({
    id: idSchema,
    name: textSchema(1),
    url: optional(urlSchema),
    visible: optional(z.boolean()),
    parent_category_id: optionalId,
    product_ids: optionalIdList,
    ...timestamps,
  })
  .strict();

export const productSchema = z
  .object({
    id: idSchema,
    name: textSchema(1),
    short_description: optional(text),
    price: optional(finiteNumber),
    url: optional(urlSchema),
    main_image: optional(urlSchema),
    visible: optional(z.boolean()),
    variant_ids: optionalIdList,
    relevant_product_ids: optionalIdList,
    review_ids: optionalIdList,
    category_ids: optionalIdList,
    ...timestamps,
  })
  .strict();

export const variantSchema = z
  .object({
    id: idSchema,
    product_id: idSchema,
    title: optional(text),
    article_code: optional(text),
    default: optional(z.boolean()),
    ean: optional(text),
    main_image: optional(urlSchema),
    price_cost: optional(finiteNumber),
    price_excl: optional(finiteNumber),
    price_incl: optional(finiteNumber),
    unit_price: optional(finiteNumber),
    unit_unit: optional(text),
    sku: optional(text),
    stock_level: optional(z.number().int().safe()),
    ...timestamps,
  })
  .strict();

export const reviewSchema = z
  .object({
    id: idSchema,
    product_id: idSchema,
    profile_id: idSchema,
    name: optional(text),
    score: optional(z.number().int().safe()),
    visible: optional(z.boolean()),
    ...timestamps,
  })
  .strict();

/** `id` and `email` are both optional here: the profile rule (interface §4.5) is applied after matching (see record.service). */
export const profileSchema = z
  .object({
    id: idSchema.optional(),
    email: emailSchema.optional(),
    birthdate: optional(dateTimeSchema),
    city: optional(text),
    province: optional(text),
    street: optional(text),
    housenumber: optional(text),
    zipcode: optional(text),
    country_code: optional(text),
    first_name: optional(text),
    middle_name: optional(text),
    last_name: optional(text),
    gender: optional(z.enum(['unidentified', 'male', 'female'])),
    active: optional(z.boolean()),
    subscribed_to_newsletter: optional(z.boolean()),
    subscribed_to_newsletter_at: optional(dateTimeSchema),
    tags: optional(listOf(text)),
    telephone: optional(text),
  })
  .strict();

export const orderSchema = z
  .object({
    id: idSchema,
    profile_id: idSchema,
    products: listOf(
      z
        .object({
          id: idSchema,
          quantity: optional(z.number().int().safe()),
        })
        .strict(),
    ),
    currency: optional(text),
    number: optional(text),
    price: optional(finiteNumber),
    paid: optional(z.boolean()),
    status: optional(z.enum(['processing', 'shipped', 'completed', 'cancelled'])),
    deliver_date: optional(dateTimeSchema),
    ordered_at: optional(dateTimeSchema),
    shopping_cart_id: optionalId,
    created_at: optional(dateTimeSchema),
  })
  .strict();

export const shoppingCartSchema = z
  .object({
    id: idSchema,
    profile_id: idSchema,
    product_ids: idListSchema,
    currency: optional(text),
    price: optional(finiteNumber),
    recovery_url: optional(urlSchema),
    ...timestamps,
  })
  .strict();

/** Order lines in v2: a product appears in at most one line (interface §14.2). */
export const orderLineV2Schema = z
  .object({
    id: v2IdSchema,
    quantity: optional(z.number().int().safe()),
    variant_id: optional(v2IdSchema),
    custom_attributes: optional(customAttributesSchema),
  })
  .strict();

const orderLinesV2Schema = listOf(orderLineV2Schema)
  .superRefine((lines, ctx) => {
    const seen = new Set<string>();
    lines.forEach((line, index) => {
      if (seen.has(line.id))
        ctx.addIssue({ code: z.ZodIssueCode.custom, path: [index, 'id'], message: 'a product appears in one line only' });
      seen.add(line.id);
    });
  })
  // The refinement hides the array's bound from the document generator: stated again here.
  .openapi({ maxItems: MAX_LIST_ITEMS });

interface V2Changes {
  /** Fields v2 puts first, in this order (interface §8.2 for products and categories); the rest keep v1's. */
  lead?: string[];
  /** v1 fields v2 does not write (lists it shows read-only, or not at all). */
  omit?: string[];
  /** v1 fields whose rule differs in v2, in their v1 place. */
  change?: z.ZodRawShape;
  /** v2's own fields, before the timestamps. */
  add?: z.ZodRawShape;
}

/** The v2 schema of a kind: its v1 schema with v2 ids and the changes, strict like v1. */
function v2From(v1: z.AnyZodObject, { lead = [], omit = [], change = {}, add = {} }: V2Changes): z.AnyZodObject {
  const shape: z.ZodRawShape = {};
  const fields = Object.entries(v1.shape as z.ZodRawShape);
  // The id, then the lead fields in their order, then the others in v1's (the sort is stable).
  const rank = (field: string) => (field === 'id' ? -1 : lead.includes(field) ? lead.indexOf(field) : lead.length);
  fields.sort(([x], [y]) => rank(x) - rank(y));
  let added = false;
  const addOnce = () => {
    if (!added) Object.assign(shape, add);
    added = true;
  };
  for (const [field, rule] of fields) {
    if (omit.includes(field)) continue;
    if (field === 'created_at' || field === 'updated_at') addOnce();
    shape[field] = change[field] ?? V2_IDS.get(rule) ?? rule;
  }
  addOnce();
  return z.object(shape).strict();
}

const customAttributes = { custom_attributes: optional(customAttributesSchema) };

export const brandV2Schema = v2From(brandSchema, { omit: ['product_ids'], add: customAttributes });

export const categoryV2Schema = v2From(categorySchema, {
  lead: ['name', 'parent_category_id'],
  omit: ['product_ids'],
  add: customAttributes,
});

export const productV2Schema = v2From(productSchema, {
  lead: ['name', 'visible', 'main_image', 'url', 'short_description', 'price'],
  omit: ['variant_ids', 'relevant_product_ids', 'review_ids', 'category_ids'],
  change: { name: optional(textSchema(1)) },
  add: { brand_id: optional(v2IdSchema), ...customAttributes },
});

export const variantV2Schema = v2From(variantSchema, {
  add: {
    url: optional(urlSchema),
    old_price_excl: optional(finiteNumber),
    old_price_incl: optional(finiteNumber),
    ...customAttributes,
  },
});

export const reviewV2Schema = v2From(reviewSchema, { add: { description: optional(text), ...customAttributes } });

/** v2 names a profile by its id and requires its email (interface §4.5 applies to v1 only). */
export const profileV2Schema = v2From(profileSchema, {
  change: { id: v2IdSchema, email: emailSchema },
  add: {
    unsubscribed: optional(z.boolean()),
    double_opt_in: optional(z.boolean()),
    is_company: optional(z.boolean()),
    is_registered: optional(z.boolean()),
    company_name: optional(text),
    ...customAttributes,
  },
});

export const orderV2Schema = v2From(orderSchema, {
  change: {
    products: optional(orderLinesV2Schema),
    // The four values of interface §12.4 stay canonical; v2 also takes a shop's own status (interface §14.3).
    status: optional(textSchema(1, 64)),
    ordered_at: dateTimeSchema,
  },
  add: {
    checkout_id: optional(v2IdSchema),
    discount_code: optional(text),
    is_discount_applied: optional(z.boolean()),
    ...customAttributes,
  },
});

export const shoppingCartV2Schema = v2From(shoppingCartSchema, {
  change: { product_ids: optional(listOf(v2IdSchema)) },
  add: { recovery_token: optional(textSchema(0, 255)), deleted: optional(z.boolean()), ...customAttributes },
});

/** Kinds only v2 writes have one schema. */
export const globalUnsubscribeSchema = z
  .object({
    email: emailSchema,
    unsubscribed: z.boolean(),
  })
  .strict();

export const purchaseEventSchema = z
  .object({
    order_id: v2IdSchema,
    profile_id: v2IdSchema,
    visitor_token: textSchema(1, 65_535),
  })
  .strict();
