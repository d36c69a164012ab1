import { describe, expect, it } from 'vitest';
import { loggableError, maskText } from './loggable.js';

describe('when a message carries values', () => {
  it.each([
    ['invalid input syntax for type integer: "a b"', 'invalid input syntax for type integer: "…"'],
    ['no profile Jane.Doe@Example.com here', 'no profile [email] here'],
    ["value 'x@y.z' refused", 'value "…" refused'],
    ['connect ECONNREFUSED 10.0.0.1:443', 'connect ECONNREFUSED 10.0.0.1:443'],
  ])('should mask %s', (text, masked) => {
    expect(maskText(text)).toBe(masked);
  });

  it('should cut a long message', () => {
    expect(maskText('x'.repeat(1_000))).toHaveLength(301);
  });
});

describe('when an error is logged', () => {
  it('should keep its class, SQLSTATE and constraint, and drop its stack and extra fields', () => {
    const error = Object.assign(new RangeError('duplicate key value violates unique constraint "records_pkey"'), {
      code: '23505',
      constraint: 'records_pkey',
      detail: 'Key (email)=(a@b.c) already exists.',
      sql: 'INSERT INTO records …',
    });
    expect(loggableError(error)).toEqual({
      type: 'RangeError',
      message: 'duplicate key value violates unique constraint "…"',
      code: '23505',
      constraint: 'records_pkey',
    });
  });

  it('should carry a masked cause', () => {
    const error = new Error('outer', { cause: new TypeError('fetch failed for a@b.c') });
    expect(loggableError(error)).toEqual({
      type: 'Error',
      message: 'outer',
      cause: { type: 'TypeError', message: 'fetch failed for [email]' },
    });
  });
});
