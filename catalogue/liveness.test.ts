import { describe, expect, it } from 'vitest';
import { kindsCascadedFrom, kindsStubbedBy, recordsStubbedBy } from './liveness.js';
import { TRACKED_FIELD } from './record-kinds.js';

describe('when the kinds a write may stub are read off KINDS', () => {
  it.each([
    ['review', ['product', 'profile']],
    ['variant', ['product']],
    ['product', ['brand', 'variant', 'product', 'review', 'category']],
    ['category', ['category', 'product']],
    ['order', ['profile', 'product']],
    ['shopping_cart', ['profile', 'product']],
    ['purchase_event', ['profile']],
    ['profile', []],
    ['global_unsubscribe', []],
  ] as const)('should give a %s write %j', (kind, stubbed) => {
    expect([...kindsStubbedBy(kind)].sort()).toEqual([...stubbed].sort());
  });
});

describe('when the kinds a delete may cascade to are read off KINDS', () => {
  it.each([
    ['product', ['variant']],
    ['variant', []],
    ['brand', []],
    ['category', []],
    ['profile', []],
    ['order', []],
  ] as const)('should give a %s delete %j', (kind, cascaded) => {
    expect([...kindsCascadedFrom(kind)].sort()).toEqual([...cascaded].sort());
  });
});

describe('when a write names only some of its references and lists', () => {
  it.each([
    [[], []],
    [['brand_id'], ['brand']],
    [['category_ids'], ['category']],
    [['relevant_product_ids'], ['product']],
  ] as const)('should stub for a product naming %j only %j', (named, stubbed) => {
    expect([...kindsStubbedBy('product', new Set(named))].sort()).toEqual([...stubbed].sort());
  });

  it("should stub a line write's product, and not a removed line's", () => {
    expect([...kindsStubbedBy('order', new Set(['line_product_id']))]).toEqual(['product']);
    expect([...kindsStubbedBy('shopping_cart', new Set(['line_product_id', 'line_removed']))]).toEqual([]);
  });
});

describe('when the records a write stubs are read off its payload', () => {
  it.each([
    ['product', { id: 'P1', name: 'x', brand_id: null, category_ids: [] }, []],
    ['product', { id: 'P1', brand_id: 'B1', category_ids: ['C1', 'C2'] }, ['brand/B1', 'category/C1', 'category/C2']],
    ['review', { id: 'R1', product_id: 'P1', profile_id: 'U1' }, ['product/P1', 'profile/U1']],
    [
      'order',
      { id: 'O1', profile_id: 'U1', shopping_cart_id: 'S1', products: [{ id: 'P1' }, { id: 'P2' }] },
      ['profile/U1', 'product/P1', 'product/P2'],
    ],
    ['shopping_cart', { id: 'S1', product_ids: ['P1'] }, ['product/P1']],
    ['order', { id: 'O1', line_product_id: 'P9' }, ['product/P9']],
    ['order', { id: 'O1', line_product_id: 'P9', line_removed: true }, []],
  ] as const)('should give a %s write of %j %j', (kind, payload, stubbed) => {
    expect(
      recordsStubbedBy(kind, payload)
        .map((record) => `${record.kind}/${record.id}`)
        .sort(),
    ).toEqual([...stubbed].sort());
  });
});

describe('when the references the worker tracks serially are read off KINDS', () => {
  it('should track the one reference a parent changes or moves, and the email a global unsubscribe finds profiles by', () => {
    expect(TRACKED_FIELD).toEqual({
      product: 'brand_id',
      category: 'parent_category_id',
      variant: 'product_id',
      review: 'product_id',
      profile: 'email',
    });
  });
});
