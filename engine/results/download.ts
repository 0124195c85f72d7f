// One result file from a provider, as untrusted input: where it comes from is whatever the
// provider's answer said, so every hop goes through the webhooks' SSRF guard (engine/webhooks/
// ssrf.ts): host names resolve through guardedLookup (an undici Agent's connect-time lookup, so
// DNS rebinding cannot reach inside), IP literals are checked here, and redirects are followed
// by hand, each hop checked again (at most MAX_HOPS). The body is handed on as a stream, counted
// against the size limit as it flows, never held whole.
import { isIP } from 'node:net';
import { Transform, type Readable } from 'node:stream';
import { Agent, request, type Dispatcher } from 'undici';
import { AddressPolicy, guardedLookup, hostOf } from '../webhooks/ssrf.ts';
import type { DownloadAuth } from '../tasks/result-copy.ts';

const MAX_HOPS = 5;

/** Why a copy failed: the reason label of gateway_result_copy_failures_total. */
export type CopyFailureReason = 'refused_address' | 'too_large' | 'content_type' | 'http_status' | 'network' | 'timeout' | 'store';

/** A failed download or store write. `permanent`: trying again cannot help (the task fails at once with 4012). */
export class CopyFailure extends Error {
  readonly reason: CopyFailureReason;
  readonly permanent: boolean;
  constructor(reason: CopyFailureReason, permanent: boolean, message: string, cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = 'CopyFailure';
    this.reason = reason;
    this.permanent = permanent;
  }
}

export interface DownloaderOptions {
  allowPrivateCidrs: readonly string[];
  /** Origins (IP literal hosts) downloaded from without the address check: the built-in sandbox's own server. */
  trustedOrigins: readonly string[];
  connectTimeoutMs: number;
  /** No byte (headers, then body) for this long cuts the download. */
  idleTimeoutMs: number;
  maxBytes: number;
}

export interface DownloadRequest {
  url: string;
  /** Media types accepted for the file's result kind (lower case, without parameters). */
  accept: ReadonlySet<string>;
  /** The vendor's credentials, sent only to these hosts (the descriptor's result_download.auth_hosts). */
  auth?: DownloadAuth;
  signal: AbortSignal;
}

export interface Download {
  body: Readable;
  contentType: string;
}

export class Downloader {
  private readonly policy: AddressPolicy;
  private readonly agent: Agent;
  private readonly opts: DownloaderOptions;

  constructor(opts: DownloaderOptions) {
    this.opts = opts;
    this.policy = AddressPolicy.fromCidrs(opts.allowPrivateCidrs);
    this.agent = new Agent({
      // The sandbox's server is an IP literal (checked in checkAddress), so no lookup sees it.
      connect: { timeout: opts.connectTimeoutMs, lookup: guardedLookup(this.policy) },
      headersTimeout: opts.idleTimeoutMs,
      bodyTimeout: opts.idleTimeoutMs,
    });
  }

  async fetch(req: DownloadRequest): Promise<Download> {
    let url = parseUrl(req.url);
    for (let hop = 0; ; hop++) {
      this.checkAddress(url);
      const headers = req.auth?.hosts.has(url.hostname.toLowerCase()) ? await req.auth.headers() : {};
      let res: Dispatcher.ResponseData;
      try {
        res = await request(url, { method: 'GET', dispatcher: this.agent, signal: req.signal, headers: { ...headers, accept: [...req.accept].join(', ') } });
      } catch (err) {
        throw transportFailure(err, req.signal);
      }
      const status = res.statusCode;
      if (status >= 300 && status < 400 && res.headers.location) {
        res.body.dump().catch(() => undefined);
        if (hop + 1 >= MAX_HOPS) throw new CopyFailure('http_status', true, `more than ${MAX_HOPS - 1} redirects`);
        url = parseUrl(String(res.headers.location), url);
        continue;
      }
      if (status < 200 || status > 299) {
        res.body.dump().catch(() => undefined);
        // A provider busy or down may answer later; a link that is gone or refused will not open.
        const transient = status === 408 || status === 425 || status === 429 || status >= 500;
        throw new CopyFailure('http_status', !transient, `the file's URL answered HTTP ${status}`);
      }
      return this.accepted(res, req);
    }
  }

  private checkAddress(url: URL): void {
    const host = hostOf(url);
    if (isIP(host) === 0) return; // a name: guardedLookup checks every address it resolves to
    const why = this.opts.trustedOrigins.some((o) => new URL(o).host === url.host) ? null : this.policy.refusal(host);
    if (why) throw new CopyFailure('refused_address', true, `download refused: ${why}`);
  }

  private accepted(res: Dispatcher.ResponseData, req: DownloadRequest): Download {
    const contentType = String(res.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
    if (!req.accept.has(contentType)) {
      res.body.dump().catch(() => undefined);
      throw new CopyFailure('content_type', true, `the file's Content-Type ${JSON.stringify(contentType || null)} is not one accepted for this result kind`);
    }
    const max = this.opts.maxBytes;
    const declared = Number(res.headers['content-length']);
    if (Number.isFinite(declared) && declared > max) {
      res.body.dump().catch(() => undefined);
      throw new CopyFailure('too_large', true, `the file is ${declared} bytes, over the ${max}-byte limit`);
    }
    let seen = 0;
    const limit = new Transform({
      transform(chunk: Buffer, _enc, done) {
        seen += chunk.length;
        if (seen > max) done(new CopyFailure('too_large', true, `the file is over the ${max}-byte limit`));
        else done(null, chunk);
      },
    });
    const body = res.body;
    body.on('error', (err) => limit.destroy(transportFailure(err, req.signal)));
    return { body: body.pipe(limit), contentType };
  }

  close(): Promise<void> {
    return this.agent.close();
  }
}

function parseUrl(text: string, base?: URL): URL {
  const url = URL.parse(text, base);
  if (!url || (url.protocol !== 'https:' && url.protocol !== 'http:')) throw new CopyFailure('http_status', true, 'the file has no http(s) URL');
  return url;
}

/** undici and net wrap the interesting error (e.g. the guard's refusal) in causes. */
function transportFailure(err: unknown, signal: AbortSignal): CopyFailure {
  if (err instanceof CopyFailure) return err;
  let e = err as { code?: string; message?: string; cause?: unknown; errors?: unknown[] } | undefined;
  for (let i = 0; i < 5 && e; i++) {
    if (e.code === 'EDESTREFUSED') return new CopyFailure('refused_address', true, e.message ?? 'download refused', err);
    e = (e.cause ?? e.errors?.[0]) as typeof e;
  }
  const code = (err as { code?: string }).code ?? '';
  if (signal.aborted || /TIMEOUT/.test(code)) return new CopyFailure('timeout', false, 'the download timed out', err);
  return new CopyFailure('network', false, `the download failed: ${(err as Error).message ?? code}`, err);
}
