import { describe, expect, it } from 'vitest';
import { kindsCascadedFrom, kindsStubbedBy } from './liveness.js';

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
