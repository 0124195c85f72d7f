// Parsing a client's JSON request body: the one function every body reader ends in (the data
// plane's and express's JSON routes through http/raw-body.ts; the media routes on the
// main thread or in the media pool, media/pool.ts and media/worker.ts).
//
// JSON.parse itself copes with any nesting, but what runs on the result afterwards may recurse
// (validation, structured clone out of a worker, mapping, JSON.stringify): `{"a":{"a":...}}`
// 100,000 levels deep overflowed the stack there. So nesting is bounded here, before JSON.parse,
// by a byte scan: no shipped request schema nests past a handful of levels, and a chat request's
// own JSON Schemas (tools, response_format) stay far below the bound (serde_json's default).
export const MAX_JSON_DEPTH = 128;

export class JsonBodyError extends Error {
  /** True when the body was refused for its nesting, not its syntax. */
  readonly tooDeep: boolean;
  constructor(message: string, tooDeep = false) {
    super(message);
    this.name = 'JsonBodyError';
    this.tooDeep = tooDeep;
  }
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJECT = 0x7b;
const OPEN_ARRAY = 0x5b;
const CLOSE_OBJECT = 0x7d;
const CLOSE_ARRAY = 0x5d;

/**
 * True when objects and arrays in the first `length` bytes nest deeper than `max`. Brackets
 * inside strings do not count; a string is skipped with indexOf (memchr speed), so a body that is
 * mostly Base64 media or prompt text costs next to nothing. Invalid JSON may pass: JSON.parse
 * refuses it next.
 */
export function nestsDeeperThan(bytes: Uint8Array, length: number, max: number): boolean {
  // Nesting past `max` takes more than `max` bytes.
  if (length <= max) return false;
  let depth = 0;
  for (let i = 0; i < length; i++) {
    const c = bytes[i];
    if (c === QUOTE) {
      // To the closing quote: one not preceded by an odd run of backslashes.
      for (;;) {
        i = bytes.indexOf(QUOTE, i + 1);
        if (i === -1 || i >= length) return false;
        let b = i - 1;
        while (bytes[b] === BACKSLASH) b--;
        if ((i - 1 - b) % 2 === 0) break;
      }
    } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      if (++depth > max) return true;
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      depth--;
    }
  }
  return false;
}

/** The parsed body; throws JsonBodyError when it nests too deeply or does not parse. */
export function parseJsonBytes(bytes: Uint8Array, length: number = bytes.byteLength): unknown {
  if (nestsDeeperThan(bytes, length, MAX_JSON_DEPTH)) {
    throw new JsonBodyError(`objects and arrays nest deeper than ${MAX_JSON_DEPTH} levels`, true);
  }
  try {
    return JSON.parse(Buffer.from(bytes.buffer, bytes.byteOffset, length).toString('utf8'));
  } catch (err) {
    throw new JsonBodyError((err as Error).message);
  }
}
