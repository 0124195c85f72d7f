// Comparing a presented secret (an admin or bearer token, a callback token) with the expected
// one in constant time. Both are hashed first, so the digests have one length and the timing
// says nothing of how much matched, nor of the expected secret's length.
import { hash, timingSafeEqual } from 'node:crypto';

export function sameSecret(given: string, expected: string): boolean {
  return timingSafeEqual(hash('sha256', given, 'buffer'), hash('sha256', expected, 'buffer'));
}
