// Large media strings never become JavaScript strings on the main thread. The media worker
// parses a big request body, checks each large Base64 value, and hands back the value's bytes
// (already in the form forwarded upstream) plus a short TOKEN that takes the value's place in the
// request: `\u0000gw-media:<sha256>`. Validation, rules, pricing, the task store and idempotency
// fingerprints all see the token; when the upstream request is sent, encodeJsonWithMedia()
// splices the bytes back into the serialised JSON as a list of buffers, without copying them
// into a string. Tokens are content-addressed (same bytes and check → same token), so the same
// upload always yields the same request.
//
// A blob lives while a request or task holds it (reference counts) and at most `ttlMs` after it
// was stored, so a task that never reaches its upstream submit does not pin memory forever.
// Mappings must treat media values as opaque: pass them through, never slice or concatenate them.
import type { MediaVerdict } from './checks.ts';

export const MEDIA_TOKEN_PREFIX = '\u0000gw-media:';
const TOKEN_IN_JSON = /"\\u0000gw-media:([0-9a-f]{64})"/g;
const WRITE_CHUNK = 256 * 1024;

interface Blob {
  bytes: Uint8Array | undefined;
  verdict: MediaVerdict;
  refs: number;
  storedAt: number;
}

export interface RawJson {
  chunks: Uint8Array[];
  length: number;
}

export class MediaGoneError extends Error {}

export class MediaBlobStore {
  private readonly blobs = new Map<string, Blob>();
  private readonly ttlMs: number;
  private sweeper: NodeJS.Timeout | undefined;
  private heldBytes = 0;

  constructor(ttlMs = 30 * 60_000) {
    this.ttlMs = ttlMs;
  }

  /** Store (or re-reference) a blob; the caller holds one reference. */
  put(token: string, bytes: Uint8Array | undefined, verdict: MediaVerdict, now = Date.now()): void {
    const b = this.blobs.get(token);
    if (b) {
      b.refs++;
      b.storedAt = now;
      return;
    }
    this.blobs.set(token, { bytes, verdict, refs: 1, storedAt: now });
    this.heldBytes += bytes?.byteLength ?? 0;
    this.sweeper ??= setInterval(() => this.sweep(), Math.max(1000, Math.min(this.ttlMs, 60_000))).unref();
  }

  /**
   * Take in the bytes of a blob another process checked (redis mode: fetched from the shared
   * media store for an upstream submit); the caller holds one reference.
   */
  adopt(token: string, bytes: Uint8Array, now = Date.now()): void {
    this.put(token, bytes, { ok: true }, now);
  }

  verdict(token: string): MediaVerdict | undefined {
    return this.blobs.get(token)?.verdict;
  }

  bytes(token: string): Uint8Array | undefined {
    return this.blobs.get(token)?.bytes;
  }

  /** Drop one reference to each token; a blob nobody holds is freed. */
  release(tokens: Iterable<string>): void {
    for (const token of tokens) {
      const b = this.blobs.get(token);
      if (!b) continue;
      if (--b.refs <= 0) this.drop(token, b);
    }
  }

  get size(): number {
    return this.blobs.size;
  }

  get bytesHeld(): number {
    return this.heldBytes;
  }

  sweep(now = Date.now()): void {
    for (const [token, b] of this.blobs) if (now - b.storedAt > this.ttlMs) this.drop(token, b);
  }

  private drop(token: string, b: Blob): void {
    this.blobs.delete(token);
    this.heldBytes -= b.bytes?.byteLength ?? 0;
  }

  /**
   * The JSON of `value` with every media token replaced by its bytes, as buffers; undefined when
   * `value` holds no token (the caller serialises it as usual). Throws MediaGoneError when a
   * token's blob is no longer held.
   */
  encodeJson(value: unknown): RawJson | undefined {
    const json = JSON.stringify(value);
    if (json === undefined || !json.includes('\\u0000gw-media:')) return undefined;
    const chunks: Uint8Array[] = [];
    let length = 0;
    let last = 0;
    const push = (c: Uint8Array) => {
      chunks.push(c);
      length += c.byteLength;
    };
    for (const m of json.matchAll(TOKEN_IN_JSON)) {
      const token = `${MEDIA_TOKEN_PREFIX}${m[1]}`;
      const bytes = this.bytes(token);
      if (!bytes) throw new MediaGoneError('an uploaded media file is no longer held by the gateway');
      push(Buffer.from(`${json.slice(last, m.index)}"`));
      // Views of at most WRITE_CHUNK bytes: each socket write stays short, the event loop free.
      for (let at = 0; at < bytes.byteLength; at += WRITE_CHUNK) push(bytes.subarray(at, Math.min(bytes.byteLength, at + WRITE_CHUNK)));
      push(Buffer.from('"'));
      last = m.index + m[0].length;
    }
    push(Buffer.from(json.slice(last)));
    return { chunks, length };
  }
}

export function isMediaToken(value: unknown): value is string {
  return typeof value === 'string' && value.startsWith(MEDIA_TOKEN_PREFIX) && value.length === MEDIA_TOKEN_PREFIX.length + 64;
}

/** Every media token inside a JSON value. */
export function tokensIn(value: unknown, out: string[] = []): string[] {
  if (isMediaToken(value)) out.push(value);
  else if (Array.isArray(value)) for (const v of value) tokensIn(v, out);
  else if (value && typeof value === 'object') for (const v of Object.values(value)) tokensIn(v, out);
  return out;
}

/** The process's blob store (media bytes live beside the API process that received them). */
export const mediaBlobs = new MediaBlobStore();
