import type { ListKey } from '../catalogue/list-cursor.js';
import type { ListFilters } from '../catalogue/list-query.schema.js';
import type { StoredKind } from '../catalogue/record-kinds.js';
import type { ItemShape } from './item-shape.js';

/** Which records of the kind a list holds. */
export type ListScope =
  | { type: 'all' }
  /** Variants of a product (by the variant's own product_id). */
  | { type: 'variants-of'; productId: string }
  /** Records linked to `other` through `rel`; `side` is the listed records' column. */
  | { type: 'linked'; rel: 'product_category' | 'relevant'; side: 'a' | 'b'; other: string }
  /** Products whose brand_id is the brand. */
  | { type: 'brand-products'; brandId: string }
  /** Profiles whose email is one of `emails` (lower case), compared case-insensitively. */
  | { type: 'emails'; emails: string[] };

/** The record a sub-listing hangs from; the list is only shown when it is live. */
export interface ListParent {
  kind: StoredKind;
  id: string;
}

/** Where a page starts. */
export type ListPosition =
  /** `(page - 1) * perPage` rows in, walked from whichever end of the list is nearer. */
  | { type: 'page' }
  /** Right after an item (a keyset cursor): an index seek, however deep. */
  | { type: 'after'; key: ListKey }
  /**
   * As `page`, but walked from a cached anchor (the item at `anchor.offset`)
   * when the list has not changed since `snapshot`, the snapshot the anchor
   * was read in; otherwise as `page`. Unfiltered `all` lists only.
   */
  | { type: 'anchor'; anchor: { offset: number; key: ListKey }; snapshot: string };

export interface ListRequest {
  kind: StoredKind;
  scope: ListScope;
  filters: ListFilters;
  page: number;
  perPage: number;
  shape: ItemShape;
  parent?: ListParent;
  position?: ListPosition;
}
