// GET and HEAD <result host>/results/{task_id}/{token}/{name}: a copied result file
// (engine/results/, docs/results.md). The path's secret is the credential (no API key: a
// <video> element or a webhook receiver follows the link as it is). Every answer carries
// nosniff, a sandboxing CSP and Content-Disposition, since the bytes came from a provider;
// Range requests are answered 206 (one range; several are answered whole, as RFC 9110 allows),
// so a browser can seek; a presigned S3 URL may be answered with a 302 instead.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { pipeline } from 'node:stream/promises';
import rangeParser from 'range-parser';
import { GatewayError } from '../errors/gateway-error.ts';
import { resultBytesServed } from '../metrics/metrics.ts';
import { contentDisposition, type OpenedFile, type ResultService } from '../results/service.ts';

/** The path of the route (its :token is left out of access lines and spans). */
export const RESULT_FILE_PATH = '/results/:task_id/:token/:name';

export async function serveResultFile(results: ResultService, req: IncomingMessage, res: ServerResponse, params: Record<string, string | undefined>): Promise<void> {
  const opened = await results.open(params.task_id ?? '', params.token ?? '', params.name ?? '');
  const { file } = opened;
  const headers: Record<string, string | number> = {
    'cache-control': `private, max-age=${opened.maxAgeS}`,
    'x-content-type-options': 'nosniff',
    'content-security-policy': 'sandbox',
    'content-disposition': contentDisposition(opened.name),
    // A console or client page on another origin may embed it (<img>, <video>).
    'cross-origin-resource-policy': 'cross-origin',
  };
  if (opened.redirect) {
    res.writeHead(302, { ...headers, 'cache-control': 'no-store', location: opened.redirect }).end();
    return;
  }
  Object.assign(headers, { 'content-type': file.contentType, etag: file.etag, 'accept-ranges': 'bytes', 'last-modified': new Date(file.writtenAt).toUTCString() });
  if (notModified(req, file.etag)) {
    res.writeHead(304, headers).end();
    return;
  }
  const range = wantedRange(req, opened);
  if (range) {
    headers['content-range'] = `bytes ${range.start}-${range.end}/${file.size}`;
    headers['content-length'] = range.end - range.start + 1;
  } else headers['content-length'] = file.size;
  if (req.method === 'HEAD' || file.size === 0) {
    res.writeHead(range ? 206 : 200, headers).end();
    return;
  }
  const body = await results.backend.read(opened.key, range);
  res.writeHead(range ? 206 : 200, headers);
  let sent = 0;
  body.on('data', (chunk: Buffer) => (sent += chunk.length));
  try {
    await pipeline(body, res);
  } catch {
    // The client went away (a <video> seeking drops its earlier request): nothing to answer.
  } finally {
    resultBytesServed.inc(sent);
  }
}

function notModified(req: IncomingMessage, etag: string): boolean {
  const inm = req.headers['if-none-match'];
  return !!inm && inm.split(',').some((t) => t.trim().replace(/^W\//, '') === etag || t.trim() === '*');
}

/** The one byte range to send, or undefined for the whole file; unsatisfiable: 416. */
function wantedRange(req: IncomingMessage, opened: OpenedFile): { start: number; end: number } | undefined {
  const header = req.headers.range;
  if (!header) return undefined;
  // If-Range with another validator: the file changed, send it whole.
  const ifRange = req.headers['if-range'];
  if (ifRange && ifRange !== opened.file.etag) return undefined;
  const ranges = rangeParser(opened.file.size, header, { combine: true });
  if (ranges === -2 || (ranges !== -1 && ranges.type !== 'bytes')) return undefined; // malformed or another unit: ignored (RFC 9110 §14.2)
  if (ranges === -1) {
    throw new GatewayError('rangeNotSatisfiable', `The range ${header} is outside the file's ${opened.file.size} bytes.`, { headers: { 'Content-Range': `bytes */${opened.file.size}` } });
  }
  return ranges.length === 1 ? ranges[0] : undefined;
}
