import { describe, expect, it } from 'vitest';
import { STAMPS, written } from '../test/support/export-lines.js';
import { exportV2Line, productLinkLines } from './export-v2-lines.js';

describe('when a record is written as a v2 bulk line', () => {
  it('should write its PUT body: no read-only fields, no nulls, no empty custom attribute lists', () => {
    const outcome = exportV2Line('product', {
      id: 'P1',
      name: 'Shoe',
      visible: null,
      brand_id: 'B1',
      category_ids: ['C1'],
      relevant_product_ids: [],
      custom_attributes: [{ name: 'colour', string_value: 'red', integer_value: null }],
      ...STAMPS,
    });
    const customAttributes = [{ name: 'colour', string_value: 'red' }];
    expect(outcome).toEqual(written('product', { id: 'P1', name: 'Shoe', brand_id: 'B1', custom_attributes: customAttributes, ...STAMPS }));
  });

  it('should keep order lines with their variants and custom attributes, and leave out the derived product_ids', () => {
    const outcome = exportV2Line('order', {
      id: 'O1',
      profile_id: 'u1',
      ordered_at: '2024-01-01T00:00:00.000Z',
      product_ids: ['P1'],
      products: [{ id: 'P1', quantity: 2, variant_id: null, custom_attributes: [] }],
      status: 'pending',
      custom_attributes: [],
    });
    expect(outcome).toEqual({
      line: '{"order":{"id":"O1","profile_id":"u1","ordered_at":"2024-01-01T00:00:00.000Z","products":[{"id":"P1","quantity":2}],"status":"pending"}}',
      dropped: [],
    });
  });

  it('should write a global unsubscribe as its PUT body, which names the email differently', () => {
    const outcome = exportV2Line('global_unsubscribe', {
      profile_email: 'jane@example.test',
      unsubscribed: true,
      profile_id: 'u1',
      created_at: '2024-01-01T00:00:00.000Z',
      updated_at: '2024-01-01T00:00:00.000Z',
    });
    expect(outcome).toEqual({ line: '{"global_unsubscribe":{"email":"jane@example.test","unsubscribed":true}}', dropped: [] });
  });

  it('should skip a record its PUT cannot create (a stub) and name a field no line can carry', () => {
    expect(exportV2Line('category', { id: 'C9', name: null, product_ids: [] })).toMatchObject({ skipped: 'stub' });
    expect(exportV2Line('brand', { id: 'B1', name: 'Acme', mystery: 'x' })).toEqual({
      line: '{"brand":{"id":"B1","name":"Acme"}}',
      dropped: ['mystery'],
    });
  });
});

describe("when a product's links are written as v2 lines", () => {
  it('should write one link line per category and related product, ids percent-encoded as in the URL', () => {
    expect(productLinkLines({ id: 'a/b', category_ids: ['C1', 'C 2'], relevant_product_ids: ['P2'] })).toEqual({
      categories: ['{"put":"products/a%2Fb/categories/C1"}', '{"put":"products/a%2Fb/categories/C%202"}'],
      related: ['{"put":"products/a%2Fb/relevant_products/P2"}'],
    });
  });
});
