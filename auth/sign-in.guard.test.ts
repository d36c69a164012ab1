import { describe, expect, it } from 'vitest';
import { addressBlock } from './sign-in.guard.js';

describe('when a source address is turned into the unit failures are counted by', () => {
  it.each([
    ['203.0.113.7', '203.0.113.7'],
    ['::ffff:203.0.113.7', '203.0.113.7'],
    ['2001:db8:1:2:3:4:5:6', '2001:db8:1:2::/64'],
    ['2001:db8:1:2::9', '2001:db8:1:2::/64'],
    ['2001:0db8:0001:0002:ffff::1', '2001:db8:1:2::/64'],
    ['2001:db8::1', '2001:db8:0:0::/64'],
    ['::1', '0:0:0:0::/64'],
    ['not an address', 'not an address'],
  ])('should count %s as %s', (address, block) => {
    expect(addressBlock(address)).toBe(block);
  });
});
