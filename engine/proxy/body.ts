// Request bodies of proxied routes: read raw (the exact bytes are what the upstream gets,
// unless the gateway must change something), parsed once for validation, and rewritten only
// when needed — without losing integers beyond 2^53 (a `seed` near 2^63 keeps its digits).
import { setPath, type Getter } from '../descriptors/json-path.ts';

type Reviver = (this: unknown, key: string, value: unknown, context?: { source?: string }) => unknown;

/** Keeps an integer that a double cannot hold exactly as its original digits. */
const keepBigIntegers: Reviver = (_key, value, context) =>
  typeof value === 'number' && !Number.isSafeInteger(value) && context?.source !== undefined && /^-?\d+$/.test(context.source)
    ? (JSON as unknown as { rawJSON(text: string): unknown }).rawJSON(context.source)
    : value;

export function reparseExact(raw: Buffer): Record<string, unknown> {
  return JSON.parse(raw.toString('utf8'), keepBigIntegers as never) as Record<string, unknown>;
}

/** Base64 payload size of a data URI or bare Base64 string; 0 for anything else (URLs). */
export function inlineBytes(value: unknown): number {
  if (typeof value !== 'string') return 0;
  let start = 0;
  if (value.startsWith('data:')) {
    const comma = value.indexOf(',');
    if (comma === -1 || !value.slice(0, comma).endsWith(';base64')) return 0;
    start = comma + 1;
  } else if (/^https?:\/\//i.test(value.slice(0, 8))) {
    return 0;
  }
  let len = value.length - start;
  if (value.endsWith('==')) len -= 2;
  else if (value.endsWith('=')) len -= 1;
  return Math.floor((len * 3) / 4);
}

/** The bytes that set a dotted path to true: made once per path, not once per request. */
const splices = new Map<string, { top: string; alone: Buffer; after: Buffer }>();
function spliceOf(path: string): { top: string; alone: Buffer; after: Buffer } {
  let s = splices.get(path);
  if (!s) {
    const keys = path.split('.');
    const nested = keys.slice(1).reduceRight<string>((inner, k) => `{${JSON.stringify(k)}:${inner}}`, 'true');
    const member = `${JSON.stringify(keys[0])}:${nested}`;
    splices.set(path, (s = { top: keys[0]!, alone: Buffer.from(member), after: Buffer.from(`,${member}`) }));
  }
  return s;
}

export interface Rewrite {
  /** Dotted path set to true (the stream usage option), when the client did not. */
  setTrue?: string;
  drop?: { walk: (root: unknown, visit: (array: unknown[], index: number) => void) => void; url: Getter; maxBytes: number };
}

/**
 * The body to send upstream: `raw` itself when nothing changes. Setting a path whose top-level
 * key is absent is a splice before the closing brace; anything else re-serialises the body.
 * Returns the bytes and how many media items were dropped.
 */
export function rewriteBody(raw: Buffer, parsed: Record<string, unknown>, rw: Rewrite): { body: Buffer; dropped: number } {
  let dropped = 0;
  if (rw.drop) {
    const probe = (array: unknown[], i: number) => {
      if (inlineBytes(rw.drop!.url(array[i])) > rw.drop!.maxBytes) dropped++;
    };
    rw.drop.walk(parsed, probe);
  }
  if (!dropped && !rw.setTrue) return { body: raw, dropped };
  if (!dropped && rw.setTrue) {
    const splice = spliceOf(rw.setTrue);
    if (!(splice.top in parsed)) {
      const end = raw.lastIndexOf(0x7d); // }
      const insert = Object.keys(parsed).length === 0 ? splice.alone : splice.after;
      return { body: Buffer.concat([raw.subarray(0, end), insert, raw.subarray(end)]), dropped };
    }
  }
  const exact = reparseExact(raw);
  if (dropped) {
    rw.drop!.walk(exact, (array, i) => {
      const item = array[i];
      if (inlineBytes(rw.drop!.url(item)) > rw.drop!.maxBytes) array.splice(i, 1);
    });
  }
  if (rw.setTrue) setPath(exact, rw.setTrue, true);
  return { body: Buffer.from(JSON.stringify(exact)), dropped };
}
