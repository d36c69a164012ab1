import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

export const sha256 = (value: string): Buffer => createHash('sha256').update(value, 'utf8').digest();

export const randomToken = (bytes = 32): string => randomBytes(bytes).toString('base64url');

/** Compares two strings in time that does not depend on where they differ. */
export function constantTimeEqual(a: string, b: string): boolean {
  return timingSafeEqual(sha256(a), sha256(b));
}
