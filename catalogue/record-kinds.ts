import type { z } from 'zod';
import {
  brandSchema,
  brandV2Schema,
  categorySchema,
  categoryV2Schema,
  globalUnsubscribeSchema,
  orderSchema,
  orderV2Schema,
  productSchema,
  productV2Schema,
  profileSchema,
  profileV2Schema,
  purchaseEventSchema,
  reviewSchema,
  reviewV2Schema,
  shoppingCartSchema,
  shoppingCartV2Schema,
  variantSchema,
  variantV2Schema,
} from './record-schemas.js';
import { Validator } from './validation.js';

/** The record kinds of interface §12: every one has a v1 write and a v2 write (languages have their own table). */
export const RECORD_KINDS = ['brand', 'category', 'product', 'variant', 'review', 'profile', 'order', 'shopping_cart'] as const;
export type RecordKind = (typeof RECORD_KINDS)[number];

/** Kinds that exist only in v2 (interface §16 and §17): stored like records, written only by v2 PUTs and bulk lines. */
export const EVENT_KINDS = ['global_unsubscribe', 'purchase_event'] as const;
export type EventKind = (typeof EVENT_KINDS)[number];

/** Everything stored in `records`, numbered, applied and audited by the sync protocol. */
export const STORED_KINDS = [...RECORD_KINDS, ...EVENT_KINDS] as const;
export type StoredKind = (typeof STORED_KINDS)[number];

/** What deleting the referenced record does to a record pointing at it. */
export type OnParentDelete = 'cascade' | 'set-null' | 'keep';

/** A single reference held as a field of the record (interface §5.3). */
export interface SingleRef {
  field: string;
  kind: StoredKind;
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
  | { field: string; mode: 'replace'; kind: StoredKind; rel: 'product_category' | 'relevant'; side: 'a' | 'b' }
  | { field: string; mode: 'point-at'; kind: StoredKind; childField: string };

export interface KindDefinition {
  kind: StoredKind;
  /** As in messages and 404 bodies: "Shopping cart". */
  resource: string;
  /** Path segment under /languages/{language_id}/. */
  segment: string;
  schema: z.ZodTypeAny;
  /** The schema with its compiled form, which every write body of the kind is parsed with. */
  validator: Validator<z.ZodTypeAny>;
  /** Fields stored in `data` and shown in every response (besides id). */
  dataFields: string[];
  /** Whether the kind has created_at / updated_at in its field table (interface §12.3). */
  timestamps: { created: boolean; updated: boolean };
  refs: SingleRef[];
  lists: ListRelation[];
  /** Ids named in array-valued data fields that get stubs (order products, cart products). */
  stubLists: Array<{ field: string; kind: StoredKind; path: 'self' | 'id' }>;
  /** The v2 write (PUT on the collection, interface §14): every kind has one. */
  v2: V2Definition;
  /** The body field that names the record when it has no `id` of its own (a purchase event's order, an unsubscribe's email). */
  idFrom?: { field: string; lowerCase?: boolean };
  /** A record that must exist (live, in the API view) for a write to be accepted: 404 with its body otherwise. */
  requires?: { field: string; kind: RecordKind };
  /** A global unsubscribe: every profile of the language with the record's id as email gets `field` = the written value. */
  fansOut?: { kind: 'profile'; field: 'unsubscribed' };
}

export interface V2Definition {
  schema: z.ZodTypeAny;
  validator: Validator<z.ZodTypeAny>;
  /** Fields stored in `data` by a v2 write and shown by v2 (besides id, timestamps and derived lists). */
  dataFields: string[];
  /** Fields v2 shows but does not accept on write: 400 unknown_parameters whose message adds `hint`. */
  readOnly: string[];
  /** The written field the read-only lists show after (default: after every written field). */
  readOnlyAfter?: string;
  hint?: string;
}

const ASSIGNMENT_HINT =
  'assign a product to a category with PUT /api/v2/languages/{language_id}/products/{product_id}/categories/{category_id} ' +
  'and remove the assignment with DELETE on the same path';

const fieldsOf = (schema: z.AnyZodObject, lists: string[]) =>
  Object.keys(schema.shape).filter((name) => name !== 'id' && name !== 'created_at' && name !== 'updated_at' && !lists.includes(name));

type Definition = Omit<KindDefinition, 'dataFields' | 'validator' | 'v2'> & { v2: Omit<V2Definition, 'dataFields' | 'validator'> };

function define(definition: Definition): KindDefinition {
  const listFields = definition.lists.map((list) => list.field);
  const idField = definition.idFrom ? [definition.idFrom.field] : [];
  const validator = new Validator(definition.schema);
  return {
    ...definition,
    validator,
    dataFields: fieldsOf(definition.schema as z.AnyZodObject, [...listFields, ...idField]),
    v2: {
      ...definition.v2,
      validator: definition.v2.schema === definition.schema ? validator : new Validator(definition.v2.schema),
      dataFields: fieldsOf(definition.v2.schema as z.AnyZodObject, idField),
    },
  };
}

const LINES_HINT =
  "product_ids is read-only: it lists the products of the order's lines; send products, or change one line with " +
  'PUT or DELETE /api/v2/languages/{language_id}/orders/{order_id}/products/{product_id}';

export const KINDS: Record<StoredKind, KindDefinition> = {
  brand: define({
    kind: 'brand',
    resource: 'Brand',
    segment: 'brands',
    schema: brandSchema,
    timestamps: { created: true, updated: true },
    refs: [],
    lists: [{ field: 'product_ids', mode: 'point-at', kind: 'product', childField: 'brand_id' }],
    stubLists: [],
    v2: {
      schema: brandV2Schema,
      readOnly: ['product_ids'],
      hint:
        "product_ids is read-only in v2: it lists the products whose brand_id is the brand; set a product's brand with " +
        'PUT /api/v2/languages/{language_id}/products and its brand_id',
    },
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
      readOnly: ['product_ids'],
      readOnlyAfter: 'parent_category_id',
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
      readOnly: ['category_ids', 'relevant_product_ids'],
      hint:
        `category_ids and relevant_product_ids are read-only in v2: ${ASSIGNMENT_HINT}; ` +
        'link a related product with PUT /api/v2/languages/{language_id}/products/{product_id}/relevant_products/{relevant_id} ' +
        'and unlink it with DELETE on the same path',
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
    v2: { schema: variantV2Schema, readOnly: [] },
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
    v2: { schema: reviewV2Schema, readOnly: [] },
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
    v2: { schema: profileV2Schema, readOnly: [] },
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
    v2: { schema: orderV2Schema, readOnly: ['product_ids'], hint: LINES_HINT },
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
    v2: { schema: shoppingCartV2Schema, readOnly: [] },
  }),
  global_unsubscribe: define({
    kind: 'global_unsubscribe',
    resource: 'Global unsubscribe',
    segment: 'global_unsubscribes',
    schema: globalUnsubscribeSchema,
    timestamps: { created: true, updated: true },
    refs: [],
    lists: [],
    stubLists: [],
    v2: { schema: globalUnsubscribeSchema, readOnly: [] },
    idFrom: { field: 'email', lowerCase: true },
    fansOut: { kind: 'profile', field: 'unsubscribed' },
  }),
  purchase_event: define({
    kind: 'purchase_event',
    resource: 'Purchase event',
    segment: 'purchase_events',
    schema: purchaseEventSchema,
    timestamps: { created: true, updated: true },
    // The order must exist but gets no stub; a missing profile does (its stub may still be queued with the order's).
    refs: [{ field: 'profile_id', kind: 'profile', stub: true, onParentDelete: 'keep' }],
    lists: [],
    stubLists: [],
    v2: { schema: purchaseEventSchema, readOnly: [] },
    idFrom: { field: 'order_id' },
    requires: { field: 'order_id', kind: 'order' },
  }),
};

/** The body key of every v2 write that names a stored kind (the kind itself). */
export const isStoredKind = (key: string): key is StoredKind => (STORED_KINDS as readonly string[]).includes(key);

/**
 * The v2 sub-resources that write one item of a parent's line list
 * (interface §15): PUT and DELETE .../{segment}/{parent_id}/products/{product_id}.
 */
export const LINE_LISTS = {
  order: { field: 'products', item: 'object' },
  shopping_cart: { field: 'product_ids', item: 'id' },
} as const satisfies Partial<Record<RecordKind, { field: string; item: 'object' | 'id' }>>;
export type LineParent = keyof typeof LINE_LISTS;

/** The keys of a line write's queued change (an upsert of the parent): the line's product, stubbed unless the line was removed. */
export const LINE_PAYLOAD = { product: 'line_product_id', removed: 'line_removed' } as const;

/**
 * The many-to-many links with a v2 writer of one link (PUT / DELETE
 * .../products/{product_id}/{segment}/{other_id}): the product is side a.
 * `payloadKey` names the other record in the queued change.
 */
export const LINK_WRITERS = {
  categories: { rel: 'product_category', kind: 'category', field: 'category_ids', payloadKey: 'category_id' },
  relevant_products: { rel: 'relevant', kind: 'product', field: 'relevant_product_ids', payloadKey: 'relevant_id' },
} as const;
export type LinkWriter = (typeof LINK_WRITERS)[keyof typeof LINK_WRITERS];

/**
 * The one reference per kind that the worker tracks serially in `w_ref`,
 * read off KINDS: the reference that a parent's delete changes (cascade or
 * set-null) or that a parent's point-at list moves, and the field a fanning
 * out kind finds its records by (a global unsubscribe finds the profiles that
 * have its email at its point of the serial order).
 */
export const TRACKED_FIELD: Partial<Record<StoredKind, string>> = (() => {
  const tracked: Partial<Record<StoredKind, string>> = {};
  const track = (kind: StoredKind, field: string) => {
    if (tracked[kind] !== undefined && tracked[kind] !== field) throw new Error(`${kind} would track both ${tracked[kind]} and ${field}`);
    tracked[kind] = field;
  };
  for (const definition of Object.values(KINDS)) {
    for (const ref of definition.refs) if (ref.onParentDelete !== 'keep') track(definition.kind, ref.field);
    for (const list of definition.lists) if (list.mode === 'point-at') track(list.kind, list.childField);
    if (definition.fansOut && definition.idFrom) track(definition.fansOut.kind, definition.idFrom.field);
  }
  return tracked;
})();

/** The serial form of a tracked reference: emails compare case-insensitively. */
export const trackedValue = (kind: StoredKind, value: string): string => (kind === 'profile' ? value.toLowerCase() : value);

/**
 * What an erasure (interface §24) clears in the records that name an erased
 * profile and stay (a shop's accounting): these fields, and any field whose
 * value holds the erased email.
 */
export const PERSONAL_FIELDS = {
  order: [],
  shopping_cart: ['recovery_url', 'recovery_token'],
  review: ['name'],
  purchase_event: ['visitor_token'],
} as const satisfies Partial<Record<StoredKind, readonly string[]>>;
export type ProfileDependent = keyof typeof PERSONAL_FIELDS;
