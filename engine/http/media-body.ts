// The request-body reader of routes with `request.media`: the checks of every JSON route
// (./raw-body.ts: 415, 413 from Content-Length before a byte is read) — but a large body is
// parsed, and its large media checked, in the media pool (engine/media/pool.ts), so a burst of
// big uploads does not stall the event loop (see engine/media/blobs.ts).
import type { IncomingMessage } from 'node:http';
import { hasBody, refusedJson, refuseUnlessJson, tooLarge } from './raw-body.ts';
import { GatewayError } from '../errors/gateway-error.ts';
import { JsonBodyError } from '../util/json-body.ts';
import type { MediaRule } from '../media/checks.ts';
import { acquireBodyBuffer } from '../media/buffers.ts';
import { mediaOptions, parseMediaBody } from '../media/pool.ts';

/** Small bodies are read at full speed; past this, one chunk per event-loop turn. */
const YIELD_AFTER_BYTES = 256 * 1024;

/**
 * The parsed body (undefined when there is none) and the media blob tokens it holds: the caller
 * releases them unless a task takes them over.
 */
export async function readMediaBody(req: IncomingMessage, limit: number, rules: readonly MediaRule[]): Promise<{ body: unknown; tokens: string[] } | undefined> {
  if (!hasBody(req)) return undefined;
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
      reject(err instanceof GatewayError ? err : new GatewayError('inputValidationFailed', 'The request was aborted by the client.'));
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
  if (declared !== undefined && length !== declared) throw new GatewayError('inputValidationFailed', 'The request body ended before its Content-Length.');
  if (length === 0) return undefined;
  try {
    return await parseMediaBody(buf, length, rules);
  } catch (err) {
    if (err instanceof JsonBodyError) throw refusedJson(err);
    throw err;
  }
}
