// Identifiers: UUIDs for tasks and tenants, prefixed random ids for everything a user sees
// with a type prefix (evt_, whd_, whsec_, key ids), all from the OS CSPRNG.
import { randomBytes, randomUUID } from 'node:crypto';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** `bytes` random bytes as base62 text (unbiased: rejection sampling on each byte). */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const b of randomBytes(length * 2)) {
      if (b < 248) out += ALPHABET[b % 62];
      if (out.length === length) break;
    }
  }
  return out;
}

export function prefixedId(prefix: string, length = 24): string {
  return `${prefix}${randomBase62(length)}`;
}

export const newUuid = (): string => randomUUID();

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const isUuid = (s: string): boolean => UUID_RE.test(s);
