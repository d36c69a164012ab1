import { describe, expect, it } from 'vitest';
import { STAMPS, written } from '../test/support/export-lines.js';
import { exportLine, parentsFirst } from './export-lines.js';

describe('when a record is written as a bulk line', () => {
  it('should keep the fields a line may carry, leave out nulls and keep timestamps', () => {
    const outcome = exportLine('product', {
      id: 'P1',
      name: 'Shoe',
      price: 10,
      url: null,
      category_ids: ['C1'],
      relevant_product_ids: [],
      custom_attributes: [],
      ...STAMPS,
    });
    expect(outcome).toEqual(
      written('product', { id: 'P1', name: 'Shoe', price: 10, category_ids: ['C1'], relevant_product_ids: [], ...STAMPS }),
    );
  });

  it('should leave out links that travel in another kind and say which v2-only values it cannot carry', () => {
    const product = exportLine('product', {
      id: 'P1',
      name: 'Shoe',
      brand_id: 'B1',
      custom_attributes: [{ name: 'a', string_value: 'b' }],
    });
    expect(product).toEqual({ line: '{"product":{"id":"P1","name":"Shoe"}}', dropped: ['custom_attributes'] });
    const category = exportLine('category', { id: 'C1', name: 'Men', product_ids: ['P1', 'P2'] });
    expect(category).toEqual({ line: '{"category":{"id":"C1","name":"Men"}}', dropped: [] });
    const brand = exportLine('brand', { id: 'B1', name: 'Acme', product_ids: ['P1'] });
    expect(brand).toEqual({ line: '{"brand":{"id":"B1","name":"Acme","product_ids":["P1"]}}', dropped: [] });
  });

  it.each([
    ['a product stub', 'product', { id: 'P9', name: null, price: null }],
    ['a category stub', 'category', { id: 'C9', name: null, product_ids: [] }],
    ['a profile stub (no email)', 'profile', { id: 'u9', email: null, first_name: null }],
  ] as const)('should skip %s', (_case, kind, record) => {
    expect(exportLine(kind, record as Record<string, unknown>)).toMatchObject({ skipped: 'stub' });
  });

  it('should keep a variant stub, which is a valid line (it holds its product)', () => {
    expect(exportLine('variant', { id: 'V1', product_id: 'P1', title: null })).toEqual({
      line: '{"variant":{"id":"V1","product_id":"P1"}}',
      dropped: [],
    });
  });

  it('should write order lines as v1 lines carry them and say which v2 line values it cannot carry', () => {
    const outcome = exportLine('order', {
      id: 'O1',
      profile_id: 'u1',
      product_ids: ['P1', 'P2'],
      products: [
        { id: 'P1', quantity: 2, variant_id: null, custom_attributes: [] },
        { id: 'P2', quantity: 1, variant_id: 'V2', custom_attributes: [] },
      ],
      checkout_id: null,
      custom_attributes: [],
    });
    const products = [
      { id: 'P1', quantity: 2 },
      { id: 'P2', quantity: 1 },
    ];
    expect(outcome).toEqual(written('order', { id: 'O1', profile_id: 'u1', products }, ['products[].variant_id']));
  });

  it('should report a value a v1 line refuses instead of dropping the record silently', () => {
    const outcome = exportLine('order', { id: 'O1', profile_id: 'u1', products: [], status: 'pending' });
    expect(outcome).toMatchObject({ skipped: 'unrepresentable', problem: expect.stringContaining('status') });
  });
});

describe('when categories are ordered for a push', () => {
  const ids = (items: Array<{ id: string }>) => items.map((item) => item.id);

  it('should put every parent before its children and keep list order otherwise', () => {
    const items = [
      { id: 'grandchild', parent: 'child' },
      { id: 'child', parent: 'root' },
      { id: 'other', parent: null },
      { id: 'root', parent: null },
      { id: 'orphan', parent: 'not-exported' },
    ];
    expect(ids(parentsFirst(items))).toEqual(['other', 'root', 'orphan', 'child', 'grandchild']);
  });

  it('should keep categories of a cycle, in list order, after the rest', () => {
    const items = [
      { id: 'a', parent: 'b' },
      { id: 'b', parent: 'a' },
      { id: 'self', parent: 'self' },
    ];
    expect(ids(parentsFirst(items)).sort()).toEqual(['a', 'b', 'self']);
    expect(ids(parentsFirst(items))[0]).toBe('self');
  });
});
