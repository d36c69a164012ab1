import { describe, expect, it } from 'vitest';
import { decodeCursor, encodeCursor } from './list-cursor.js';

describe('when a list cursor is made and read back', () => {
  it('should give back the page and the key it was made from', () => {
    const cursor = { page: 7, after: { created_at: '2026-11-23T10:00:00.123456Z', id: 'P-5 "quoted" ü' } };
    const text = encodeCursor(cursor);
    expect(text).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(decodeCursor(text)).toEqual(cursor);
  });

  it('should refuse text it did not make', () => {
    const valid = encodeCursor({ page: 2, after: { created_at: '2026-11-23T10:00:00.000000Z', id: 'a' } });
    for (const text of [
      '',
      'not base64!',
      valid.slice(0, -2),
      Buffer.from('{"page":2}').toString('base64url'),
      Buffer.from('[1,"2026-11-23T10:00:00.000000Z","a"]').toString('base64url'),
      Buffer.from('[2.5,"2026-11-23T10:00:00.000000Z","a"]').toString('base64url'),
      Buffer.from('[2,"2026-11-23T10:00:00Z","a"]').toString('base64url'),
      Buffer.from('[2,"2026-11-23T10:00:00.000000Z",""]').toString('base64url'),
      Buffer.from(`[2,"2026-11-23T10:00:00.000000Z","${'x'.repeat(256)}"]`).toString('base64url'),
      'x'.repeat(3_000),
      // Keys Postgres cannot take, or the service never makes.
      Buffer.from('[2,"2026-02-30T10:00:00.000000Z","a"]').toString('base64url'),
      Buffer.from('[2,"2026-11-23T24:00:00.000000Z","a"]').toString('base64url'),
      Buffer.from('[2,"2026-11-23T23:59:60.000000Z","a"]').toString('base64url'),
      Buffer.from('[2,"0000-01-01T00:00:00.000000Z","a"]').toString('base64url'),
      Buffer.from('[2,"2026-11-23T10:00:00.000000Z","a\\u0000"]').toString('base64url'),
      Buffer.from('[2,"2026-11-23T10:00:00.000000Z","a\\ud800"]').toString('base64url'),
      Buffer.from([0x5b, 0x32, 0x2c, 0x22, 0xff, 0x22, 0x5d]).toString('base64url'),
    ]) {
      expect(decodeCursor(text), text.slice(0, 40)).toBeNull();
    }
  });
});
