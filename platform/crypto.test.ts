import { describe, expect, it } from 'vitest';
import { sha256, sha256Base64 } from './crypto.js';

describe('when a token is hashed for its lookup', () => {
  it.each(['', 'a', 'Zq3-_x'.repeat(8), 'ünïcödé ✓'])('should give the digest of %j as base64, the same bytes as sha256', (value) => {
    expect(sha256Base64(value)).toBe(sha256(value).toString('base64'));
    expect(Buffer.from(sha256Base64(value), 'base64')).toEqual(sha256(value));
  });
});
