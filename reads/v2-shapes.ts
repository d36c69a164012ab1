import { KINDS, LINE_LISTS, type StoredKind } from '../catalogue/record-kinds.js';
import type { ItemPart, ItemShape } from './item-shape.js';

/* The shapes the v2 reads show records in: each kind's whole record, and the summaries of sub-listings. */

const fields = (...names: string[]): ItemShape => names.map((field) => ({ key: field, from: 'field', field }));
const ID: ItemShape = [{ key: 'id', from: 'id' }];
const CREATED: ItemShape = [{ key: 'created_at', from: 'created_at' }];
const UPDATED: ItemShape = [{ key: 'updated_at', from: 'updated_at' }];
const CUSTOM_ATTRIBUTES: ItemShape = [{ key: 'custom_attributes', from: 'custom_attributes' }];

/** The part that shows a read-only list of a kind (`v2.readOnly`), from the relation KINDS declares for it. */
function readOnlyPart(kind: StoredKind, field: string): ItemPart {
  // An order's product_ids are its lines' products.
  if (kind === 'order' && field === 'product_ids') return { key: field, from: 'line_products' };
  const list = KINDS[kind].lists.find((relation) => relation.field === field);
  if (list?.mode === 'replace') return { key: field, from: 'links', rel: list.rel, side: list.side };
  if (list?.mode === 'point-at' && list.kind === 'product' && list.childField === 'brand_id') return { key: field, from: 'brand_products' };
  throw new Error(`${kind}.${field} is read-only in v2 but no part shows it`);
}

/** How a written field shows: order lines and a cart's product list have parts of their own. */
function fieldPart(kind: StoredKind, field: string): ItemPart {
  if (kind === 'order' && field === LINE_LISTS.order.field) return { key: field, from: 'order_lines' };
  if (kind === 'shopping_cart' && field === LINE_LISTS.shopping_cart.field) return { key: field, from: 'list', field };
  return { key: field, from: 'field', field };
}

/**
 * A record kind in its v2 shape (interface §8.2, §14), all from KINDS: the
 * id, the fields v2 writes (in their order) with the read-only lists after
 * `readOnlyAfter`, the custom attributes, the kind's timestamps.
 */
const v2Shape = (kind: StoredKind): ItemShape => {
  const definition = KINDS[kind];
  const written = definition.v2.dataFields.filter((field) => field !== 'custom_attributes');
  const split = definition.v2.readOnlyAfter ? written.indexOf(definition.v2.readOnlyAfter) + 1 : written.length;
  return [
    ...ID,
    ...written.slice(0, split).map((field) => fieldPart(kind, field)),
    ...definition.v2.readOnly.map((field) => readOnlyPart(kind, field)),
    ...written.slice(split).map((field) => fieldPart(kind, field)),
    ...(definition.v2.dataFields.includes('custom_attributes') ? CUSTOM_ATTRIBUTES : []),
    ...(definition.timestamps.created ? CREATED : []),
    ...(definition.timestamps.updated ? UPDATED : []),
  ];
};

/** A product as every product list shows it. */
export const PRODUCT = v2Shape('product');

export const SHAPES: Record<StoredKind, ItemShape> = {
  product: PRODUCT,
  category: v2Shape('category'),
  brand: v2Shape('brand'),
  variant: v2Shape('variant'),
  review: v2Shape('review'),
  profile: v2Shape('profile'),
  order: v2Shape('order'),
  shopping_cart: v2Shape('shopping_cart'),
  // The kinds only v2 writes are named by a field of theirs, shown under its own key.
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
