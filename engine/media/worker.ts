// The media worker (a Piscina pool thread): parses a large JSON request body and checks its
// large media strings off the main thread. Each large value that a `request.media` rule names is
// checked (engine/media/checks.ts); the value is replaced by a content-addressed token and its
// bytes — in the form forwarded upstream — travel back to the main thread as a transferred
// ArrayBuffer, so the main thread never holds the media as a string (see blobs.ts).
import { createHash } from 'node:crypto';
import { Piscina } from 'piscina';
import { JsonBodyError, parseJsonBytes } from '../util/json-body.ts';
import { checkMedia, type MediaRule, type MediaVerdict } from './checks.ts';
import { MEDIA_TOKEN_PREFIX } from './blobs.ts';
import { parsePointer, resolvePointer } from './pointers.ts';

export interface ParseTask {
  bytes: ArrayBuffer;
  length: number;
  rules: MediaRule[];
  /** Strings at least this long become blobs; shorter ones stay in the body. */
  blobMinChars: number;
}

export interface ParsedBlob {
  token: string;
  bytes?: Uint8Array;
  verdict: MediaVerdict;
}

/** `spare`: the request's bytes, handed back for reuse once decoded. */
export type ParseOutcome = ({ ok: true; body: unknown; blobs: ParsedBlob[] } | { ok: false; detail: string; tooDeep: boolean }) & { spare?: ArrayBuffer };

export default function parse(task: ParseTask): unknown {
  const spare = task.bytes;
  let body: unknown;
  try {
    body = parseJsonBytes(new Uint8Array(task.bytes, 0, task.length));
  } catch (err) {
    const failed: ParseOutcome = { ok: false, detail: (err as Error).message, tooDeep: err instanceof JsonBodyError && err.tooDeep, spare };
    return Piscina.move({ [Piscina.transferableSymbol]: [spare], [Piscina.valueSymbol]: failed } as never);
  }
  const blobs: ParsedBlob[] = [];
  const transfer: ArrayBuffer[] = [spare];
  if (body && typeof body === 'object' && !Array.isArray(body)) {
    for (const rule of task.rules) {
      const signature = JSON.stringify(rule);
      for (const hit of resolvePointer(body, parsePointer(rule.at))) {
        if (typeof hit.value !== 'string' || hit.value.length < task.blobMinChars) continue;
        const value = hit.value;
        const verdict = checkMedia(value, rule);
        if (verdict.ok && verdict.shape !== 'base64' && verdict.shape !== 'data_uri') continue; // a (long) URL stays a string
        const hash = createHash('sha256').update(signature).update('\n');
        let bytes: Buffer | undefined;
        if (verdict.ok) {
          const prefix = verdict.rewrite?.prefix ?? '';
          const payload = verdict.rewrite ? value.slice(verdict.rewrite.payloadStart) : value;
          bytes = Buffer.allocUnsafeSlow(prefix.length + payload.length);
          bytes.write(prefix, 0, 'latin1');
          bytes.write(payload, prefix.length, 'latin1');
          hash.update(bytes);
          transfer.push(bytes.buffer as ArrayBuffer);
        } else {
          hash.update(value);
        }
        const token = `${MEDIA_TOKEN_PREFIX}${hash.digest('hex')}`;
        const { rewrite: _r, ...kept } = verdict;
        blobs.push({ token, bytes, verdict: kept });
        hit.set(token);
      }
    }
  }
  const outcome: ParseOutcome = { ok: true, body, blobs, spare };
  return Piscina.move({ [Piscina.transferableSymbol]: transfer, [Piscina.valueSymbol]: outcome } as never);
}
