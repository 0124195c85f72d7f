// The request-body reader of routes with `request.media`: the checks of every JSON route
// (engine/http/raw-body.ts: 415, 413 from Content-Length before a byte is read) — but a large
// body is parsed, and its large media checked, in the media pool, so a burst of big uploads
// does not stall the event loop (see pool.ts, blobs.ts).
// The blob tokens the request holds are left on res.locals.mediaTokens.
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { hasBody, refusedJson, refuseUnlessJson, tooLarge } from '../http/raw-body.ts';
import { GatewayError } from '../errors/gateway-error.ts';
import { JsonBodyError } from '../util/json-body.ts';
import type { MediaRule } from './checks.ts';
import { acquireBodyBuffer } from './buffers.ts';
import { mediaOptions, parseMediaBody } from './pool.ts';

/** Small bodies are read at full speed; past this, one chunk per event-loop turn. */
const YIELD_AFTER_BYTES = 256 * 1024;

export function mediaJsonBody(limitBytes: number, rules: readonly MediaRule[]): RequestHandler {
  return (req: Request, res: Response, next: NextFunction) => {
    readMediaBody(req, res, limitBytes, rules).then(() => next(), next);
  };
}

/** Read and parse the body into req.body (undefined when there is none). */
export async function readMediaBody(req: Request, res: Response, limit: number, rules: readonly MediaRule[]): Promise<void> {
  if (!hasBody(req)) return;
  refuseUnlessJson(req, limit);
  const declared = req.headers['content-length'] === undefined ? undefined : Number(req.headers['content-length']);
  // With a Content-Length, chunks go straight into one buffer of that size (no large concat).
  // A buffer of its own (transferable to a worker), not zero-filled; large ones are reused.
  let buf: Uint8Array = declared && Number.isFinite(declared) && declared >= mediaOptions().inlineBelowBytes
    ? acquireBodyBuffer(declared)
    : Buffer.allocUnsafeSlow(declared && Number.isFinite(declared) ? declared : 64 * 1024);
  let length = 0;
  // Chunks are taken one per event-loop turn: a burst of big uploads on many sockets then costs
  // each turn a few copies of 64 KB, instead of the megabytes libuv would read in one go.
  await new Promise<void>((resolve, reject) => {
    const fail = (err: unknown) => {
      req.off('data', onData);
      req.resume();
      reject(err instanceof GatewayError ? err : new GatewayError(2000, 'The request was aborted by the client.'));
    };
    const onData = (chunk: Buffer) => {
      if (length + chunk.length > limit) return fail(tooLarge(limit));
      if (length + chunk.length > buf.length) {
        const grown = Buffer.allocUnsafeSlow(Math.min(limit, Math.max(buf.length * 2, length + chunk.length)));
        grown.set(buf.subarray(0, length));
        buf = grown;
      }
      buf.set(chunk, length);
      length += chunk.length;
      if (length >= YIELD_AFTER_BYTES) {
        req.pause();
        setImmediate(() => req.resume());
      }
    };
    req.on('data', onData);
    req.once('end', () => resolve());
    req.once('error', fail);
    req.once('aborted', () => fail(undefined));
  });
  if (declared !== undefined && length !== declared) throw new GatewayError(2000, 'The request body ended before its Content-Length.');
  if (length === 0) return;
  try {
    const parsed = await parseMediaBody(buf, length, rules);
    req.body = parsed.body;
    res.locals.mediaTokens = parsed.tokens;
  } catch (err) {
    if (err instanceof JsonBodyError) throw refusedJson(err);
    throw err;
  }
}
