import { KINDS, type StoredKind } from '../catalogue/record-kinds.js';
import type { ItemPart, ItemShape } from './item-shape.js';

/* The shapes the v2 reads show records in: each kind's whole record, and the summaries of sub-listings. */

const fields = (...names: string[]): ItemShape => names.map((field) => ({ key: field, from: 'field', field }));
const ID: ItemShape = [{ key: 'id', from: 'id' }];
const CREATED: ItemShape = [{ key: 'created_at', from: 'created_at' }];
const UPDATED: ItemShape = [{ key: 'updated_at', from: 'updated_at' }];
const CUSTOM_ATTRIBUTES: ItemShape = [{ key: 'custom_attributes', from: 'custom_attributes' }];

/** interface §8.2 (product): own fields, brand, current links and custom attributes. */
export const PRODUCT: ItemShape = [
  ...ID,
  ...fields('name', 'visible', 'main_image', 'url', 'short_description', 'price', 'brand_id'),
  { key: 'category_ids', from: 'links', rel: 'product_category', side: 'a' },
  { key: 'relevant_product_ids', from: 'links', rel: 'relevant', side: 'a' },
  ...CUSTOM_ATTRIBUTES,
  ...CREATED,
  ...UPDATED,
];

/** interface §8.2 (category). */
const CATEGORY: ItemShape = [
  ...ID,
  ...fields('name', 'parent_category_id'),
  { key: 'product_ids', from: 'links', rel: 'product_category', side: 'b' },
  ...fields('url', 'visible'),
  ...CREATED,
  ...UPDATED,
  ...CUSTOM_ATTRIBUTES,
];

/**
 * Every other kind in its v2 shape (interface §14): the v1 field table plus
 * the v2 fields, read-only lists derived from the record, the kind's timestamps.
 */
const v2Shape = (kind: StoredKind, derived: ItemShape = []): ItemShape => {
  const definition = KINDS[kind];
  const parts: ItemPart[] = [...ID];
  for (const field of definition.v2.dataFields) {
    if (field === 'custom_attributes') parts.push(...CUSTOM_ATTRIBUTES);
    else if (kind === 'order' && field === 'products') parts.push({ key: 'products', from: 'order_lines' });
    else if (kind === 'shopping_cart' && field === 'product_ids') parts.push({ key: 'product_ids', from: 'list', field });
    else parts.push(...fields(field));
  }
  parts.push(...derived);
  if (definition.timestamps.created) parts.push(...CREATED);
  if (definition.timestamps.updated) parts.push(...UPDATED);
  return parts;
};

export const SHAPES: Record<StoredKind, ItemShape> = {
  product: PRODUCT,
  category: CATEGORY,
  /** interface §14.1 (brand): product_ids are the live products whose brand_id is the brand. */
  brand: v2Shape('brand', [{ key: 'product_ids', from: 'brand_products' }]),
  variant: v2Shape('variant'),
  review: v2Shape('review'),
  profile: v2Shape('profile'),
  order: v2Shape('order', [{ key: 'product_ids', from: 'line_products' }]),
  shopping_cart: v2Shape('shopping_cart'),
  global_unsubscribe: [
    { key: 'profile_email', from: 'id' },
    ...fields('unsubscribed'),
    { key: 'profile_id', from: 'profile_by_email' },
    ...CREATED,
    ...UPDATED,
  ],
  purchase_event: [{ key: 'order_id', from: 'id' }, ...fields('profile_id', 'visitor_token'), ...CREATED, ...UPDATED],
};

/** Summary items of the sub-listings and the profiles list (interface §8.3). */
const renamed = (key: string, field: string): ItemShape => [{ key, from: 'field', field }];
export const VARIANT_SUMMARY: ItemShape = [...ID, ...renamed('name', 'title'), ...renamed('price', 'price_incl'), ...fields('main_image')];
export const CATEGORY_SUMMARY: ItemShape = ID;
export const PRODUCT_SUMMARY: ItemShape = [...ID, ...fields('name', 'url')];
export const PROFILE_SUMMARY: ItemShape = [...ID, ...fields('email', 'first_name', 'last_name')];
