import { z } from 'zod';
import { customAttributesSchema } from './custom-attribute.schema.js';
import { dateTimeSchema, emailSchema, finiteNumber, idListSchema, idSchema, textSchema, urlSchema } from './primitives.schema.js';

/** The record kinds that live inside a language (languages have their own table). */
export const RECORD_KINDS = ['brand', 'category', 'product', 'variant', 'review', 'profile', 'order', 'shopping_cart'] as const;
export type RecordKind = (typeof RECORD_KINDS)[number];

/** What deleting the referenced record does to a record pointing at it. */
export type OnParentDelete = 'cascade' | 'set-null' | 'keep';

/** A single reference held as a field of the record (CONTRACT 5). */
export interface SingleRef {
  field: string;
  kind: RecordKind;
  /** Create a stub of the referenced record when it does not exist. */
  stub: boolean;
  onParentDelete: OnParentDelete;
}

/**
 * A list field of the writer:
 *  - `replace`: many-to-many; the writer's side becomes exactly the list (rel/side name the link table columns).
 *  - `point-at`: the listed children get `childField` = the writer (moving them), nothing is detached.
 */
export type ListRelation =
  | { field: string; mode: 'replace'; kind: RecordKind; rel: 'product_category' | 'relevant'; side: 'a' | 'b' }
  | { field: string; mode: 'point-at'; kind: RecordKind; childField: string };

export interface KindDefinition {
  kind: RecordKind;
  /** As in messages and 404 bodies: "Shopping cart". */
  resource: string;
  /** Path segment under /languages/{language_id}/. */
  segment: string;
  schema: z.ZodTypeAny;
  /** Fields stored in `data` and shown in every response (besides id). */
  dataFields: string[];
  /** Whether the kind has created_at / updated_at in its SPEC table. */
  timestamps: { created: boolean; updated: boolean };
  refs: SingleRef[];
  lists: ListRelation[];
  /** Ids named in array-valued data fields that get stubs (order products, cart products). */
  stubLists: Array<{ field: string; kind: RecordKind; path: 'self' | 'id' }>;
  /** The v2 write (PUT) of the kind, where SPEC has one: products and categories. */
  v2?: V2Definition;
}

export interface V2Definition {
  schema: z.ZodTypeAny;
  /** Fields stored in `data` by a v2 write and shown by v2 (besides id, timestamps and links). */
  dataFields: string[];
  /** List fields v2 shows but does not accept on write (400 unknown_parameters with `hint`). */
  readOnlyLists: string[];
  hint: string;
}

const optional = <T extends z.ZodTypeAny>(schema: T) => schema.nullable().optional();
const text = textSchema();
const timestamps = {
  created_at: optional(dateTimeSchema),
  updated_at: optional(dateTimeSchema),
};

const brandSchema = z
  .object({
    id: idSchema,
    name: textSchema(1),
    url: optional(urlSchema),
    content: optional(text),
    product_ids: optional(idListSchema),
    ...timestamps,
  })
  .strict();

const categorySchema = z
  .object({
    id: idSchema,
    name: textSchema(1),
    url: optional(urlSchema),
    visible: optional(z.boolean()),
    parent_category_id: optional(idSchema),
    product_ids: optional(idListSchema),
    ...timestamps,
  })
  .strict();

const productSchema = z
  .object({
    id: idSchema,
    name: textSchema(1),
    short_description: optional(text),
    price: optional(finiteNumber),
    url: optional(urlSchema),
    main_image: optional(urlSchema),
    visible: optional(z.boolean()),
    variant_ids: optional(idListSchema),
    relevant_product_ids: optional(idListSchema),
    review_ids: optional(idListSchema),
    category_ids: optional(idListSchema),
    ...timestamps,
  })
  .strict();

const variantSchema = z
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

const reviewSchema = z
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

/** `id` and `email` are both optional here: rule 9 is applied after matching (see record.service). */
const profileSchema = z
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
    tags: optional(z.array(text)),
    telephone: optional(text),
  })
  .strict();

const orderSchema = z
  .object({
    id: idSchema,
    profile_id: idSchema,
    products: z.array(
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
    shopping_cart_id: optional(idSchema),
    created_at: optional(dateTimeSchema),
  })
  .strict();

const shoppingCartSchema = z
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

/** v2 identifiers are strings (SPEC "v2 records"), 1..255 characters like every id. */
const v2IdSchema = textSchema(1, 255);

const productV2Schema = z
  .object({
    id: v2IdSchema,
    name: optional(textSchema(1)),
    visible: optional(z.boolean()),
    main_image: optional(urlSchema),
    url: optional(urlSchema),
    short_description: optional(text),
    price: optional(finiteNumber),
    brand_id: optional(v2IdSchema),
    custom_attributes: optional(customAttributesSchema),
    ...timestamps,
  })
  .strict();

const categoryV2Schema = z
  .object({
    id: v2IdSchema,
    name: textSchema(1),
    parent_category_id: optional(v2IdSchema),
    url: optional(urlSchema),
    visible: optional(z.boolean()),
    custom_attributes: optional(customAttributesSchema),
    ...timestamps,
  })
  .strict();

const ASSIGNMENT_HINT =
  'assign a product to a category with PUT /api/v2/languages/{language_id}/products/{product_id}/categories/{category_id} ' +
  'and remove the assignment with DELETE on the same path';

const fieldsOf = (schema: z.AnyZodObject, lists: string[]) =>
  Object.keys(schema.shape).filter((name) => name !== 'id' && name !== 'created_at' && name !== 'updated_at' && !lists.includes(name));

function define(definition: Omit<KindDefinition, 'dataFields'>): KindDefinition {
  const listFields = definition.lists.map((list) => list.field);
  return { ...definition, dataFields: fieldsOf(definition.schema as z.AnyZodObject, listFields) };
}

export const KINDS: Record<RecordKind, KindDefinition> = {
  brand: define({
    kind: 'brand',
    resource: 'Brand',
    segment: 'brands',
    schema: brandSchema,
    timestamps: { created: true, updated: true },
    refs: [],
    lists: [{ field: 'product_ids', mode: 'point-at', kind: 'product', childField: 'brand_id' }],
    stubLists: [],
  }),
  category: define({
    kind: 'category',
    resource: 'Category',
    segment: 'categories',
    schema: categorySchema,
    timestamps: { created: true, updated: true },
    refs: [{ field: 'parent_category_id', kind: 'category', stub: true, onParentDelete: 'set-null' }],
    lists: [{ field: 'product_ids', mode: 'replace', kind: 'product', rel: 'product_category', side: 'b' }],
    stubLists: [],
    v2: {
      schema: categoryV2Schema,
      dataFields: fieldsOf(categoryV2Schema, []),
      readOnlyLists: ['product_ids'],
      hint: `product_ids is read-only in v2: ${ASSIGNMENT_HINT}`,
    },
  }),
  product: define({
    kind: 'product',
    resource: 'Product',
    segment: 'products',
    schema: productSchema,
    timestamps: { created: true, updated: true },
    refs: [{ field: 'brand_id', kind: 'brand', stub: true, onParentDelete: 'set-null' }],
    lists: [
      { field: 'variant_ids', mode: 'point-at', kind: 'variant', childField: 'product_id' },
      { field: 'relevant_product_ids', mode: 'replace', kind: 'product', rel: 'relevant', side: 'a' },
      { field: 'review_ids', mode: 'point-at', kind: 'review', childField: 'product_id' },
      { field: 'category_ids', mode: 'replace', kind: 'category', rel: 'product_category', side: 'a' },
    ],
    stubLists: [],
    v2: {
      schema: productV2Schema,
      dataFields: fieldsOf(productV2Schema, []),
      readOnlyLists: ['category_ids', 'relevant_product_ids'],
      hint:
        `category_ids and relevant_product_ids are read-only in v2: ${ASSIGNMENT_HINT}; ` +
        'relevant_product_ids are written with POST /api/v1/languages/{language_id}/products',
    },
  }),
  variant: define({
    kind: 'variant',
    resource: 'Variant',
    segment: 'variants',
    schema: variantSchema,
    timestamps: { created: true, updated: true },
    refs: [{ field: 'product_id', kind: 'product', stub: true, onParentDelete: 'cascade' }],
    lists: [],
    stubLists: [],
  }),
  review: define({
    kind: 'review',
    resource: 'Review',
    segment: 'reviews',
    schema: reviewSchema,
    timestamps: { created: true, updated: true },
    refs: [
      { field: 'product_id', kind: 'product', stub: true, onParentDelete: 'keep' },
      { field: 'profile_id', kind: 'profile', stub: true, onParentDelete: 'keep' },
    ],
    lists: [],
    stubLists: [],
  }),
  profile: define({
    kind: 'profile',
    resource: 'Profile',
    segment: 'profiles',
    schema: profileSchema,
    timestamps: { created: false, updated: false },
    refs: [],
    lists: [],
    stubLists: [],
  }),
  order: define({
    kind: 'order',
    resource: 'Order',
    segment: 'orders',
    schema: orderSchema,
    timestamps: { created: true, updated: false },
    refs: [
      { field: 'profile_id', kind: 'profile', stub: true, onParentDelete: 'keep' },
      { field: 'shopping_cart_id', kind: 'shopping_cart', stub: false, onParentDelete: 'keep' },
    ],
    lists: [],
    stubLists: [{ field: 'products', kind: 'product', path: 'id' }],
  }),
  shopping_cart: define({
    kind: 'shopping_cart',
    resource: 'Shopping cart',
    segment: 'shopping_carts',
    schema: shoppingCartSchema,
    timestamps: { created: true, updated: true },
    refs: [{ field: 'profile_id', kind: 'profile', stub: true, onParentDelete: 'keep' }],
    lists: [],
    stubLists: [{ field: 'product_ids', kind: 'product', path: 'self' }],
  }),
};

/**
 * The one reference per kind that the worker tracks serially in `w_ref`:
 * the reference that a parent's delete changes (cascade or set-null) or that
 * a parent's point-at list moves.
 */
export const TRACKED_FIELD: Partial<Record<RecordKind, string>> = {
  variant: 'product_id',
  review: 'product_id',
  product: 'brand_id',
  category: 'parent_category_id',
};
