import { describe, expect, it } from 'vitest';
import { kindsCascadedFrom, kindsStubbedBy, namedFields } from './liveness.js';

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
    [{ id: 'P1', name: 'x' }, []],
    [{ id: 'P1', brand_id: 'B1', category_ids: [] }, ['brand']],
    [{ id: 'P1', brand_id: null, category_ids: ['C1'] }, ['category']],
    [{ id: 'P1', relevant_product_ids: ['P2'] }, ['product']],
  ] as const)('should stub for a product %j only %j', (payload, stubbed) => {
    expect([...kindsStubbedBy('product', namedFields(payload))].sort()).toEqual([...stubbed].sort());
  });

  it("should stub a line write's product, and not a removed line's", () => {
    expect([...kindsStubbedBy('order', namedFields({ id: 'O1', line_product_id: 'P1' }))]).toEqual(['product']);
    expect([...kindsStubbedBy('shopping_cart', namedFields({ id: 'S1', line_product_id: 'P1', line_removed: true }))]).toEqual([]);
  });
});
