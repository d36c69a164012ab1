import { describe, expect, it } from 'vitest';
import { ValidationError } from '../platform/errors.js';
import { KINDS } from './record-kinds.js';
import { formatPath, parseOrThrow } from './validation.js';

/** The error parseOrThrow raises for `input` against a kind's v1 schema. */
function problem(kind: keyof typeof KINDS, input: unknown): { class: string; names: string[] } {
  const { errorClass, parameters } = failure(kind, input);
  return { class: errorClass, names: parameters };
}

function failure(kind: keyof typeof KINDS, input: unknown): ValidationError {
  try {
    parseOrThrow(KINDS[kind].schema, input);
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    return error;
  }
  throw new Error('expected a validation error');
}

describe('when paths inside a record are named', () => {
  it('should write them as interface §4 does', () => {
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

describe('when fields are invalid', () => {
  it.each<[string, keyof typeof KINDS, Record<string, unknown>, string]>([
    ['a type', 'product', { id: 'P', name: 'n', price: 'cheap' }, 'price (expected a number, got a string)'],
    ['a boolean', 'product', { id: 'P', name: 'n', visible: 'yes' }, 'visible (expected true or false, got a string)'],
    ['a format', 'product', { id: 'P', name: 'n', url: 'ftp://x' }, 'url (expected an http or https URL)'],
    ['a date-time', 'product', { id: 'P', name: 'n', created_at: 'yesterday' }, 'created_at (expected an ISO 8601 date-time)'],
    ['an email', 'profile', { id: 'u', email: 'nope' }, 'email (expected an email address)'],
    ['allowed values', 'profile', { id: 'u', email: 'u@example.test', gender: 'x' }, 'gender (expected one of unidentified, male, female)'],
    ['a range', 'variant', { id: 'V', product_id: 'P', stock_level: 2 ** 60 }, 'stock_level (expected a safe integer (below 2^53))'],
    ['a length', 'product', { id: 'x'.repeat(256), name: 'n' }, 'id (expected at most 255 characters)'],
    [
      'an integer in a list item',
      'order',
      { id: 'O', profile_id: 'u', products: [{ id: 'P', quantity: 1.5 }] },
      'products[0].quantity (expected an integer, got a number with decimals)',
    ],
    ['a list', 'profile', { id: 'u', email: 'u@example.test', tags: 'vip' }, 'tags (expected a list, got a string)'],
  ])('should say what %s expected, in the message only', (_case, kind, input, described) => {
    const error = failure(kind, input);
    expect(error.message).toBe(`Invalid parameters: ${described}`);
    const name = described.slice(0, described.indexOf(' ('));
    // The body keeps interface §4.3's shape: the names, and the message.
    expect(error.body()).toEqual({ error: { message: error.message, invalid_parameters: [name] } });
  });

  it('should describe every invalid field, in order', () => {
    expect(failure('product', { id: 'P', name: 'n', price: 'x', url: 'ftp://x' }).message).toBe(
      'Invalid parameters: price (expected a number, got a string), url (expected an http or https URL)',
    );
  });
});
