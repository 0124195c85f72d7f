// Identifiers: UUIDs for tasks and tenants, prefixed random ids for everything a user sees
// with a type prefix (evt_, whd_, whsec_, key ids), all from the OS CSPRNG.
import { randomFillSync, randomUUID } from 'node:crypto';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

// Random bytes are drawn from a pooled buffer refilled from the CSPRNG 8 KiB at a time: one
// system call per hundreds of ids instead of one per id (it was ~6% of a create's CPU).
const POOL_BYTES = 8192;
const pool = Buffer.alloc(POOL_BYTES);
let offset = POOL_BYTES;
const ID_BYTES = 64;
const idBuffer = Buffer.alloc(ID_BYTES);

function take(n: number): number {
  if (offset + n > POOL_BYTES) {
    randomFillSync(pool);
    offset = 0;
  }
  const at = offset;
  offset += n;
  return at;
}

/** `bytes` random bytes as lowercase hex, never all zeros (W3C trace and span ids). */
export function randomHex(bytes: number): string {
  for (;;) {
    const at = take(bytes);
    for (let i = at; i < at + bytes; i++) if (pool[i] !== 0) return pool.toString('hex', at, at + bytes);
  }
}

/** `length` random base62 characters (unbiased: rejection sampling on each byte). */
export function randomBase62(length: number): string {
  return prefixedId('', length);
}

/**
 * `prefix` and `length` random base62 characters, written into one buffer and read out as one
 * flat string: appended a character at a time, an id would be a chain of a dozen heap
 * objects (V8's cons strings), and ledger entries and events keep theirs for their lifetime.
 */
export function prefixedId(prefix: string, length = 24): string {
  const out = prefix.length + length <= ID_BYTES ? idBuffer : Buffer.alloc(prefix.length + length);
  let n = out.write(prefix, 'latin1');
  const end = n + length;
  while (n < end) {
    const at = take(length * 2);
    for (let i = at; i < at + length * 2 && n < end; i++) {
      const b = pool[i]!;
      if (b < 248) out[n++] = ALPHABET.charCodeAt(b % 62);
    }
  }
  return out.toString('latin1', 0, end);
}

export const newUuid = (): string => randomUUID();

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const isUuid = (s: string): boolean => UUID_RE.test(s);
