import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEnvironment, type TestEnvironment } from './support/harness.js';
import { openShop, type Shop } from './support/v2-client.js';

/** interface §8.4 custom attributes: one typed value each, unique names, whole-array replacement. */

let env: TestEnvironment;
let shop: Shop;

beforeAll(async () => {
  env = await startEnvironment();
  shop = await openShop(env);
});
afterAll(async () => {
  await env.close();
});

describe('when valid custom attributes are sent', () => {
  it.each([
    [
      { name: 'material', string_value: 'oak' },
      { name: 'material', string_value: 'oak' },
    ],
    [
      { name: 'empty text', string_value: '' },
      { name: 'empty text', string_value: '' },
    ],
    [
      { name: 'legs', integer_value: 4 },
      { name: 'legs', integer_value: 4 },
    ],
    [
      { name: 'negative', integer_value: -12 },
      { name: 'negative', integer_value: -12 },
    ],
    [
      { name: 'stackable', boolean_value: false },
      { name: 'stackable', boolean_value: false },
    ],
    [
      { name: 'since', date_value: '2024-02-29' },
      { name: 'since', date_value: '2024-02-29' },
    ],
    [
      { name: 'at', datetime_value: '2024-05-01T12:30:00Z' },
      { name: 'at', datetime_value: '2024-05-01T12:30:00.000Z' },
    ],
    [
      { name: 'zoned', datetime_value: '2024-05-01T12:30:00+02:00' },
      { name: 'zoned', datetime_value: '2024-05-01T10:30:00.000Z' },
    ],
    [
      { name: 'other nulls', string_value: 'x', integer_value: null },
      { name: 'other nulls', string_value: 'x' },
    ],
  ])('should store %j and show it as %j', async (attribute, shown) => {
    const saved = await shop.save('product', { id: 'ok', custom_attributes: [attribute] });
    expect(saved['custom_attributes']).toEqual([shown]);
    expect((await shop.get('/products/ok')).body.custom_attributes).toEqual([shown]);
  });
});

describe('when invalid custom attributes are sent', () => {
  it.each([
    ['no value field', [{ name: 'a' }], 'invalid_parameters', ['custom_attributes[0]']],
    ['only null value fields', [{ name: 'a', string_value: null }], 'invalid_parameters', ['custom_attributes[0]']],
    ['two value fields', [{ name: 'a', string_value: 'x', integer_value: 1 }], 'invalid_parameters', ['custom_attributes[0]']],
    ['a fractional integer_value', [{ name: 'a', integer_value: 1.5 }], 'invalid_parameters', ['custom_attributes[0].integer_value']],
    ['an integer_value as a string', [{ name: 'a', integer_value: '1' }], 'invalid_parameters', ['custom_attributes[0].integer_value']],
    ['a boolean_value as a string', [{ name: 'a', boolean_value: 'true' }], 'invalid_parameters', ['custom_attributes[0].boolean_value']],
    ['a string_value that is a number', [{ name: 'a', string_value: 3 }], 'invalid_parameters', ['custom_attributes[0].string_value']],
    [
      'a date_value that is not a day',
      [{ name: 'a', date_value: '2023-02-29' }],
      'invalid_parameters',
      ['custom_attributes[0].date_value'],
    ],
    ['a date_value of April 31', [{ name: 'a', date_value: '2024-04-31' }], 'invalid_parameters', ['custom_attributes[0].date_value']],
    [
      'a date_value without zero padding',
      [{ name: 'a', date_value: '2024-1-5' }],
      'invalid_parameters',
      ['custom_attributes[0].date_value'],
    ],
    [
      'a date_value with a time',
      [{ name: 'a', date_value: '2024-01-05T00:00:00Z' }],
      'invalid_parameters',
      ['custom_attributes[0].date_value'],
    ],
    [
      'a datetime_value without a time',
      [{ name: 'a', datetime_value: '2024-01-05' }],
      'invalid_parameters',
      ['custom_attributes[0].datetime_value'],
    ],
    [
      'a datetime_value on February 30',
      [{ name: 'a', datetime_value: '2024-02-30T10:00:00Z' }],
      'invalid_parameters',
      ['custom_attributes[0].datetime_value'],
    ],
    [
      'a datetime_value that is text',
      [{ name: 'a', datetime_value: 'noon' }],
      'invalid_parameters',
      ['custom_attributes[0].datetime_value'],
    ],
    ['an empty name', [{ name: '', string_value: 'x' }], 'invalid_parameters', ['custom_attributes[0].name']],
    [
      'a duplicate name',
      [
        { name: 'a', string_value: 'x' },
        { name: 'a', integer_value: 1 },
      ],
      'invalid_parameters',
      ['custom_attributes[1].name'],
    ],
    ['an element that is not an object', ['a'], 'invalid_parameters', ['custom_attributes[0]']],
    ['an object instead of an array', { name: 'a', string_value: 'x' }, 'invalid_parameters', ['custom_attributes']],
    ['no name', [{ string_value: 'x' }], 'missing_parameters', ['custom_attributes[0].name']],
    ['an unknown field', [{ name: 'a', value: 'x' }], 'unknown_parameters', ['custom_attributes[0].value']],
  ])('should answer 400 for %s', async (_label, attributes, errorClass, names) => {
    for (const kind of ['product', 'category'] as const) {
      const response = await shop.put(kind, { id: 'bad', name: 'n', custom_attributes: attributes });
      expect(response.status).toBe(400);
      expect(response.body.error[errorClass as string]).toEqual(names);
    }
  });
});

describe('when custom attributes are written again', () => {
  it('should replace the whole array when the write sends it', async () => {
    await shop.save('product', {
      id: 'r',
      custom_attributes: [
        { name: 'a', string_value: 'x' },
        { name: 'b', integer_value: 2 },
      ],
    });
    const saved = await shop.save('product', { id: 'r', custom_attributes: [{ name: 'c', boolean_value: true }] });
    expect(saved['custom_attributes']).toEqual([{ name: 'c', boolean_value: true }]);
  });

  it('should keep the array when the write leaves it out', async () => {
    await shop.save('category', { id: 'k', name: 'K', custom_attributes: [{ name: 'a', date_value: '2024-01-01' }] });
    const saved = await shop.save('category', { id: 'k', name: 'K2' });
    expect(saved['custom_attributes']).toEqual([{ name: 'a', date_value: '2024-01-01' }]);
  });

  it('should clear it with [] or null, and show [] when there are none', async () => {
    await shop.save('product', { id: 'e', custom_attributes: [{ name: 'a', string_value: 'x' }] });
    expect((await shop.save('product', { id: 'e', custom_attributes: [] }))['custom_attributes']).toEqual([]);
    await shop.save('product', { id: 'e', custom_attributes: [{ name: 'a', string_value: 'x' }] });
    expect((await shop.save('product', { id: 'e', custom_attributes: null }))['custom_attributes']).toEqual([]);
    expect((await shop.get('/products/e')).body.custom_attributes).toEqual([]);
  });

  it('should keep the order the attributes were sent in', async () => {
    const attributes = [
      { name: 'z', string_value: 'last name first' },
      { name: 'a', integer_value: 1 },
    ];
    expect((await shop.save('product', { id: 'ordered', custom_attributes: attributes }))['custom_attributes']).toEqual(attributes);
  });
});
