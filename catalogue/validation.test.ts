import { describe, expect, it } from 'vitest';
import { ValidationError } from '../platform/errors.js';
import { KINDS } from './record-kinds.js';
import { formatPath, parseOrThrow } from './validation.js';

/** The error parseOrThrow raises for `input` against a kind's v1 schema. */
function problem(kind: keyof typeof KINDS, input: unknown): { class: string; names: string[] } {
  try {
    parseOrThrow(KINDS[kind].schema, input);
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    return { class: error.errorClass, names: error.parameters };
  }
  throw new Error('expected a validation error');
}

describe('when paths inside a record are named', () => {
  it('should write them as CONTRACT 4 does', () => {
    expect(formatPath(['products', 0, 'id'])).toBe('products[0].id');
    expect(formatPath(['name'])).toBe('name');
    expect(formatPath([3])).toBe('[3]');
    expect(formatPath(['a', 'b', 1, 2])).toBe('a.b[1][2]');
  });
});

describe('when a record has several kinds of problems', () => {
  it('should report missing fields first', () => {
    expect(problem('product', { price: 'x', colour: 'red' })).toEqual({ class: 'missing_parameters', names: ['id', 'name'] });
  });

  it('should report unknown fields once nothing is missing', () => {
    expect(problem('product', { id: 'P', name: 'n', price: 'x', colour: 'red' })).toEqual({
      class: 'unknown_parameters',
      names: ['colour'],
    });
  });

  it('should report invalid fields once nothing is missing or unknown', () => {
    expect(problem('product', { id: 'P', name: 'n', price: 'x', url: 'ftp://x' })).toEqual({
      class: 'invalid_parameters',
      names: ['price', 'url'],
    });
  });

  it('should report a required field sent as null as missing, and a null inside a list as invalid', () => {
    expect(problem('product', { id: 'P', name: null })).toEqual({ class: 'missing_parameters', names: ['name'] });
    expect(problem('product', { id: 'P', name: 'n', category_ids: ['C1', null] })).toEqual({
      class: 'invalid_parameters',
      names: ['category_ids[1]'],
    });
  });

  it('should name fields inside list items by their path', () => {
    expect(problem('order', { id: 'O', profile_id: 'U', products: [{ id: 'P' }, { quantity: 2 }] })).toEqual({
      class: 'missing_parameters',
      names: ['products[1].id'],
    });
    expect(problem('order', { id: 'O', profile_id: 'U', products: [{ id: 'P', colour: 1 }] })).toEqual({
      class: 'unknown_parameters',
      names: ['products[0].colour'],
    });
  });

  it('should accept integers as ids and store them as strings', () => {
    expect(parseOrThrow(KINDS.product.schema, { id: 12, name: 'n', category_ids: [1, '2'] })).toMatchObject({
      id: '12',
      category_ids: ['1', '2'],
    });
  });
});
