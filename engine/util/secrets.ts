// Comparing a presented secret (a bearer token, a callback token) with the expected one in
// constant time, so the answer's timing says nothing of how much of it matched.
import { timingSafeEqual } from 'node:crypto';

export function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}
