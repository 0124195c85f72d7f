// JSON request bodies, read from the node request: one policy for every JSON route (the data
// plane's routes through ./request-body.ts, express's admin and console routes through
// ./body.ts; the media reader, ./media-body.ts, applies the same checks) —
// uncompressed UTF-8 JSON (415 otherwise), the route's size limit (413, from Content-Length
// before a byte is read), 2001 when it does not parse or nests deeper than MAX_JSON_DEPTH.
import type { IncomingMessage } from 'node:http';
import { GatewayError } from '../errors/gateway-error.ts';
import { JsonBodyError, MAX_JSON_DEPTH, parseJsonBytes } from '../util/json-body.ts';

const JSON_TYPE = /^application\/([\w.+-]*\+)?json\b/i;
const CHARSET = /;\s*charset=("?)([^";]+)\1/i;

export function tooLarge(limit: number): GatewayError {
  return new GatewayError('payloadTooLarge', `The request body exceeds this endpoint's limit of ${limit} bytes.`, { headers: { connection: 'close' } });
}

/** True when the request carries a body (chunked, or a Content-Length above 0). */
export function hasBody(req: IncomingMessage): boolean {
  return req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
}

/** Throws 415 unless the body is declared as uncompressed UTF-8 JSON, 413 when its declared length is over `limit`. */
export function refuseUnlessJson(req: IncomingMessage, limit: number): void {
  const type = req.headers['content-type'] ?? '';
  const charset = CHARSET.exec(type)?.[2]?.toLowerCase();
  const encoding = (req.headers['content-encoding'] ?? 'identity').toLowerCase();
  if (!JSON_TYPE.test(type) || (charset && charset !== 'utf-8' && charset !== 'utf8') || encoding !== 'identity') {
    req.resume();
    throw new GatewayError('unsupportedMediaType', 'Send the request body as uncompressed UTF-8 JSON with Content-Type: application/json.');
  }
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > limit) {
    req.resume();
    throw tooLarge(limit);
  }
}

/** Where a request keeps its body once read: its stream can be read only once. */
const READ = Symbol('request body read');
type ReadRequest = IncomingMessage & { [READ]?: Promise<Buffer> };

/**
 * The raw body after refuseUnlessJson's checks. The stream is read once per request: a second
 * reader (a router mounted under one that read the body already) gets the same bytes, held to
 * its own limit, instead of waiting forever for an 'end' that has already been emitted.
 */
export function readJsonBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  try {
    refuseUnlessJson(req, limit);
  } catch (err) {
    return Promise.reject(err);
  }
  const read = ((req as ReadRequest)[READ] ??= readStream(req, limit));
  // A second reader of a body already read is held to its own limit.
  return read.then((raw) => (raw.length > limit ? Promise.reject(tooLarge(limit)) : raw));
}

// Neither this nor readJsonBody is async: every JSON request reads its body, and each async
// layer is a promise and a microtask turn more.
function readStream(req: IncomingMessage, limit: number): Promise<Buffer> {
  // A small body usually arrives with the headers and is buffered before this runs: take it from
  // the stream's buffer at once instead of through flowing-mode events (resume() then lets the
  // stream end on its own).
  const declared = req.headers['content-length'];
  const buffered = req.complete || (declared !== undefined && req.readableLength === Number(declared));
  if (buffered && !req.readableFlowing && req.readableLength <= limit) {
    const all = req.read() as Buffer | null;
    req.resume();
    return Promise.resolve(all ?? Buffer.alloc(0));
  }
  return new Promise((resolve, reject) => {
    let first: Buffer | undefined;
    let chunks: Buffer[] | undefined;
    let size = 0;
    const onData = (c: Buffer) => {
      size += c.length;
      if (size > limit) {
        req.off('data', onData);
        req.resume();
        reject(tooLarge(limit));
        return;
      }
      if (!first) first = c;
      else (chunks ??= [first]).push(c);
    };
    req.on('data', onData);
    req.once('end', () => resolve(chunks ? Buffer.concat(chunks, size) : (first ?? Buffer.alloc(0))));
    req.once('error', () => reject(new GatewayError('inputValidationFailed', 'The request was aborted by the client.')));
  });
}

export function malformedJson(why: string): GatewayError {
  return new GatewayError('parameterValidationFailed', `Malformed JSON in the request body: ${why}.`, { errors: [{ pointer: '', detail: 'is not valid JSON', code: 2001 }] });
}

/** 2001 for a body nested deeper than MAX_JSON_DEPTH: refused before anything recursive sees it. */
export function tooDeepJson(): GatewayError {
  return new GatewayError('parameterValidationFailed', `The request body nests objects or arrays deeper than ${MAX_JSON_DEPTH} levels.`, { errors: [{ pointer: '', detail: `nests deeper than ${MAX_JSON_DEPTH} levels`, code: 2001 }] });
}

/** The GatewayError of a body that util/json-body.ts refused. */
export function refusedJson(err: JsonBodyError): GatewayError {
  return err.tooDeep ? tooDeepJson() : malformedJson(err.message);
}

export function parseJson(raw: Buffer): unknown {
  try {
    return parseJsonBytes(raw);
  } catch (err) {
    throw err instanceof JsonBodyError ? refusedJson(err) : err;
  }
}

/**
 * The parsed body of a JSON route: undefined when the request has none; a JSON object or
 * array otherwise (a bare string or number is refused as malformed, 2001).
 */
export async function readJsonRequest(req: IncomingMessage, limit: number): Promise<unknown> {
  if (!hasBody(req)) return undefined;
  return parseJsonObject(await readJsonBody(req, limit));
}

/** A JSON object or array (a bare string or number is refused as malformed, 2001). */
export function parseJsonObject(raw: Buffer): unknown {
  if (!opensObjectOrArray(raw)) throw malformedJson('the body must be a JSON object');
  return parseJson(raw);
}

/**
 * The routes take objects (and arrays, which validation then refuses with its own pointer): the
 * first byte past JSON's whitespace, within the first 256, is `{` or `[`. Read from the bytes:
 * a regular expression needed a string of the body's first 256 bytes on every request.
 */
function opensObjectOrArray(raw: Buffer): boolean {
  const end = Math.min(raw.length, 256);
  for (let i = 0; i < end; i++) {
    const c = raw[i];
    if (c === 0x7b || c === 0x5b) return true;
    if (c !== 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) return false;
  }
  return false;
}
