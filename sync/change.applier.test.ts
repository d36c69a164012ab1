import { describe, expect, it } from 'vitest';
import { sentReference, upsertSteps } from './change-plan.js';

const summary = (kind: Parameters<typeof upsertSteps>[0], payload: Record<string, unknown>) =>
  upsertSteps(kind, payload).map((step) => ({ kind: step.kind, ids: step.ids, list: step.list?.field ?? null }));

describe('when the records an upsert names are listed', () => {
  it('should visit single references, stub lists, then each list sent, in that order', () => {
    expect(summary('review', { id: 'R', product_id: 'P', profile_id: 'U' })).toEqual([
      { kind: 'product', ids: ['P'], list: null },
      { kind: 'profile', ids: ['U'], list: null },
    ]);
    expect(summary('product', { id: 'P', brand_id: 'B', category_ids: ['C2', 'C1', 'C2'], variant_ids: ['V'] })).toEqual([
      { kind: 'brand', ids: ['B'], list: null },
      { kind: 'variant', ids: ['V'], list: 'variant_ids' },
      { kind: 'category', ids: ['C2', 'C1'], list: 'category_ids' },
    ]);
  });

  it('should stub each product of an order once, and none for its shopping cart', () => {
    expect(
      summary('order', {
        id: 'O',
        profile_id: 'U',
        shopping_cart_id: 'S',
        products: [{ id: 'P1' }, { id: 'P2', quantity: 2 }, { id: 'P1' }],
      }),
    ).toEqual([
      { kind: 'profile', ids: ['U'], list: null },
      { kind: 'product', ids: ['P1', 'P2'], list: null },
    ]);
  });

  it('should treat a list sent as null as an empty list and leave out lists not sent', () => {
    expect(summary('category', { id: 'C', product_ids: null })).toEqual([{ kind: 'product', ids: [], list: 'product_ids' }]);
    expect(summary('category', { id: 'C', name: 'n' })).toEqual([]);
    expect(summary('product', { id: 'P', brand_id: null })).toEqual([]);
  });
});

describe('when the reference an upsert sends for the serial view is read', () => {
  it('should give the tracked reference when sent, null when cleared, nothing when not sent', () => {
    expect(sentReference('variant', { id: 'V', product_id: 'P' })).toEqual({ value: 'P' });
    expect(sentReference('category', { id: 'C', parent_category_id: null })).toEqual({ value: null });
    expect(sentReference('category', { id: 'C' })).toBeUndefined();
    expect(sentReference('order', { id: 'O', profile_id: 'U' })).toBeUndefined();
  });
});
