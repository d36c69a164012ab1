import { describe, expect, it } from 'vitest';
import { deleteEffectsOf } from './delete-effects.js';

describe('when the effects of a delete are read off KINDS', () => {
  it("should take a product's variants with it, then remove its assignments and related-product links in both directions", () => {
    expect(deleteEffectsOf('product')).toEqual([
      { type: 'children', kind: 'variant', field: 'product_id', effect: 'cascade' },
      { type: 'links', rel: 'product_category', side: 'a', auditKind: 'product', field: 'category_ids', audited: 'deleted' },
      { type: 'links', rel: 'relevant', side: 'a', auditKind: 'product', field: 'relevant_product_ids', audited: 'deleted' },
      { type: 'links', rel: 'relevant', side: 'b', auditKind: 'product', field: 'relevant_product_ids', audited: 'other' },
    ]);
  });

  it("should remove a category's product assignments once, then clear its children's parent", () => {
    expect(deleteEffectsOf('category')).toEqual([
      { type: 'links', rel: 'product_category', side: 'b', auditKind: 'category', field: 'product_ids', audited: 'deleted' },
      { type: 'children', kind: 'category', field: 'parent_category_id', effect: 'set-null' },
    ]);
  });

  it("should clear a brand's products' brand_id", () => {
    expect(deleteEffectsOf('brand')).toEqual([{ type: 'children', kind: 'product', field: 'brand_id', effect: 'set-null' }]);
  });

  it.each(['variant', 'review', 'profile', 'order', 'shopping_cart', 'global_unsubscribe', 'purchase_event'] as const)(
    'should do nothing more for a %s',
    (kind) => {
      expect(deleteEffectsOf(kind)).toEqual([]);
    },
  );
});
