import { describe, expect, it } from 'vitest';
import { LINK_WRITERS } from '../catalogue/record-kinds.js';
import { AppError } from '../platform/errors.js';
import { parseBulkLine } from './bulk-line.parser.js';
import { LINE_HAS_NUL, LINE_NOT_UTF8, LINE_TOO_LONG } from './ndjson-copy.transform.js';

/** The error body a line gets, or the parsed line. */
function outcome(text: string, generation: 'v1' | 'v2') {
  try {
    return parseBulkLine(text, generation);
  } catch (error) {
    if (error instanceof AppError) return error.body();
    throw error;
  }
}

describe('when a line is not a request of either interface', () => {
  it.each([
    [LINE_TOO_LONG, { error: { message: 'Line is longer than 1 MiB' } }],
    [LINE_HAS_NUL, { error: { message: 'Line contains a NUL character', invalid_parameters: ['<line>'] } }],
    [LINE_NOT_UTF8, { error: { message: 'Line is not valid UTF-8' } }],
    [
      `{"product":{"id":"p1","name":${'['.repeat(33)}${']'.repeat(33)}}}`,
      { error: { message: 'Line is nested too deeply: at most 32 levels of arrays and objects' } },
    ],
    ['{"product":', { error: { message: 'Malformed JSON on this line' } }],
    ['[1]', { error: { message: 'Each line must be a JSON object' } }],
    ['null', { error: { message: 'Each line must be a JSON object' } }],
  ])('should refuse %s the same way in v1 and v2 files', (text, body) => {
    expect(outcome(text, 'v1')).toEqual(body);
    expect(outcome(text, 'v2')).toEqual(body);
  });

  it('should name the keys each generation takes when none fits', () => {
    expect(outcome('{"wat":{}}', 'v1')).toEqual({
      error: { message: expect.stringContaining('one of brand, category, product'), unknown_parameters: ['wat'] },
    });
    const v2 = outcome('{"wat":{}}', 'v2') as { error: { message: string } };
    expect(v2.error.message).toContain('global_unsubscribe, purchase_event');
    expect(v2.error.message).toContain('{"put":"<path>"}');
    expect(outcome('{}', 'v2')).toMatchObject({ error: { missing_parameters: ['<kind>'] } });
  });
});

describe('when a line carries a body key', () => {
  it.each(['global_unsubscribe', 'purchase_event'])('should take the v2-only kind %s in v2 files only', (kind) => {
    const text = JSON.stringify({ [kind]: {} });
    expect(outcome(text, 'v2')).toEqual({ type: 'write', kind, body: { [kind]: {} } });
    expect(outcome(text, 'v1')).toMatchObject({ error: { unknown_parameters: [kind] } });
  });

  it.each(['language', 'custom_attribute'])('should send %s, which is not a record of the language, to its own endpoint', (key) => {
    expect(outcome(JSON.stringify({ [key]: { id: 'x' } }), 'v2')).toEqual({
      error: {
        message: expect.stringMatching(/^A bulk line writes records of the language; .*PUT \/api\/v2\//),
        unknown_parameters: [key],
      },
    });
  });

  it('should leave the body to the write (its extra keys are the write envelope’s unknown parameters)', () => {
    expect(outcome('{"order":{"id":"O1"},"extra":1}', 'v2')).toEqual({
      type: 'write',
      kind: 'order',
      body: { order: { id: 'O1' }, extra: 1 },
    });
  });
});

describe('when a line deletes a record', () => {
  it('should take the v1 form in both, with v2 ids strings only', () => {
    expect(outcome('{"delete":{"kind":"product","id":7}}', 'v1')).toEqual({ type: 'delete', kind: 'product', id: '7' });
    expect(outcome('{"delete":{"kind":"product","id":7}}', 'v2')).toMatchObject({ error: { invalid_parameters: ['delete.id'] } });
    expect(outcome('{"delete":{"kind":"product","id":"P 1"}}', 'v2')).toEqual({ type: 'delete', kind: 'product', id: 'P 1' });
  });

  it('should refuse deleting kinds that v2 cannot delete', () => {
    expect(outcome('{"delete":{"kind":"purchase_event","id":"O1"}}', 'v2')).toMatchObject({
      error: { invalid_parameters: ['delete.kind'] },
    });
    expect(outcome('{"delete":"purchase_events/O1"}', 'v2')).toMatchObject({ error: { invalid_parameters: ['delete'] } });
  });

  it('should take a record path in v2 files, percent-decoded', () => {
    expect(outcome('{"delete":"shopping_carts/S%2F1"}', 'v2')).toEqual({ type: 'delete', kind: 'shopping_cart', id: 'S/1' });
    expect(outcome('{"delete":"/brands/B1"}', 'v2')).toEqual({ type: 'delete', kind: 'brand', id: 'B1' });
  });
});

describe('when a v2 line is a request on a sub-resource', () => {
  it.each(Object.entries(LINK_WRITERS))('should read PUT and DELETE of products/{id}/%s/{id} as the link writer', (segment, link) => {
    expect(outcome(JSON.stringify({ put: `products/P1/${segment}/X%201` }), 'v2')).toEqual({
      type: 'link',
      link,
      productId: 'P1',
      otherId: 'X 1',
      action: 'assign',
    });
    expect(outcome(JSON.stringify({ delete: `products/P1/${segment}/X1` }), 'v2')).toMatchObject({ type: 'link', action: 'unassign' });
  });

  it('should read order and cart line writes, an order line with its body', () => {
    expect(outcome('{"put":"orders/O1/products/P1","body":{"quantity":2}}', 'v2')).toEqual({
      type: 'line',
      parent: 'order',
      parentId: 'O1',
      productId: 'P1',
      remove: false,
      body: { quantity: 2 },
    });
    expect(outcome('{"put":"shopping_carts/S1/products/P1"}', 'v2')).toEqual({
      type: 'line',
      parent: 'shopping_cart',
      parentId: 'S1',
      productId: 'P1',
      remove: false,
    });
    expect(outcome('{"delete":"orders/O1/products/P1"}', 'v2')).toMatchObject({ type: 'line', remove: true });
  });

  it.each([
    ['a PUT on a record', '{"put":"products/P1"}', 'put'],
    ['a list that has no writer', '{"put":"categories/C1/products/P1"}', 'put'],
    ['an empty segment', '{"delete":"orders//products/P1"}', 'delete'],
    ['a broken percent-encoding', '{"put":"products/P%ZZ/categories/C1"}', 'put'],
    ['an inherited name', '{"put":"products/P1/constructor/C1"}', 'put'],
    ['a path that is not a string', '{"put":{"path":"products/P1/categories/C1"}}', 'put'],
  ])('should refuse %s with invalid_parameters naming the method', (_case, text, method) => {
    expect(outcome(text, 'v2')).toMatchObject({ error: { invalid_parameters: [method] } });
  });

  it('should name what else the line carries', () => {
    expect(outcome('{"put":"products/P1/categories/C1","extra":1}', 'v2')).toMatchObject({ error: { unknown_parameters: ['extra'] } });
    expect(outcome('{"delete":"orders/O1/products/P1","body":{}}', 'v2')).toMatchObject({ error: { unknown_parameters: ['body'] } });
  });

  it('should not read request lines in v1 files', () => {
    expect(outcome('{"put":"products/P1/categories/C1"}', 'v1')).toMatchObject({ error: { unknown_parameters: ['put'] } });
    expect(outcome('{"delete":"products/P1"}', 'v1')).toMatchObject({ error: { invalid_parameters: ['delete'] } });
  });
});
