// The HTTP client for one vendor's upstream: undici over a shared keep-alive Agent, the
// vendor's auth plug-in and timeout, and the caller's traceparent passed on. It returns any
// HTTP answer whose body is JSON; it throws UpstreamFailure when there is no usable answer.
import { performance } from 'node:perf_hooks';
import { Readable } from 'node:stream';
import { Agent, request, type Dispatcher } from 'undici';
import type { AuthPlugin } from './auth-schemes.ts';
import { UpstreamFailure, type UpstreamStage } from './failure.ts';
import { classifyNetworkError } from './network-error.ts';
import { deadline } from '../util/deadline.ts';
import { ATTR_HTTP_REQUEST_METHOD, ATTR_HTTP_RESPONSE_STATUS_CODE, ATTR_SERVER_ADDRESS, ATTR_SERVER_PORT, ATTR_URL_FULL } from '../tracing/attributes.ts';
import { failSpan, SpanKind, SpanStatusCode, startSpan, traceparentOf, tracing, type Span } from '../tracing/tracing.ts';
import { statusClass, upstreamDuration, upstreamErrors, upstreamRequests } from '../metrics/metrics.ts';

export interface UpstreamResponse {
  status: number;
  body: unknown;
}

export interface UpstreamCall {
  method: string;
  path: string;
  body?: unknown;
  headers?: Record<string, string>;
  traceparent?: string;
  stage: UpstreamStage;
  /** The JSON body already serialised, as buffers (sent as is instead of `body`; see engine/media/blobs.ts). */
  rawBody?: { chunks: readonly Uint8Array[]; length: number };
}

const MAX_UPSTREAM_BODY = 8 * 1024 * 1024;

/**
 * Failures that came after the provider's answer had begun: the provider may have acted on the
 * request, so a pool must not send it to another member (engine/upstream/pool.ts).
 */
const answerBegun = new WeakSet<UpstreamFailure>();

/** True when the failure came after the provider had started answering. */
export function failedAfterAnswer(err: UpstreamFailure): boolean {
  return answerBegun.has(err);
}

export function createUpstreamAgent(): Agent {
  return new Agent({ keepAliveTimeout: 30_000, keepAliveMaxTimeout: 120_000, connections: 256 });
}

export class UpstreamClient {
  readonly baseUrl: string;
  readonly auth: AuthPlugin;
  readonly timeoutMs: number;
  readonly fixedHeaders: Record<string, string>;
  readonly dispatcher: Dispatcher;
  /** The metrics' vendor label. */
  readonly vendor: string;

  constructor(opts: { vendor: string; baseUrl: string; auth: AuthPlugin; timeoutMs: number; headers?: Record<string, string>; dispatcher: Dispatcher }) {
    this.vendor = opts.vendor;
    this.baseUrl = opts.baseUrl.replace(/\/+$/, '');
    this.auth = opts.auth;
    this.timeoutMs = opts.timeoutMs;
    this.fixedHeaders = opts.headers ?? {};
    this.dispatcher = opts.dispatcher;
  }

  /** One call, counted and timed per vendor and stage (a transport failure counts its 3xxx code). */
  async call(c: UpstreamCall): Promise<UpstreamResponse> {
    const t0 = performance.now();
    // Traced: the call is a CLIENT span (a child of the caller's traceparent), and the provider
    // is sent that span's traceparent instead.
    const span = tracing ? this.startSpan(c) : undefined;
    let status = 'error';
    try {
      const res = await this.exchange(span ? { ...c, traceparent: traceparentOf(span) } : c);
      status = statusClass(res.status);
      if (span) endedWith(span, res.status);
      return res;
    } catch (err) {
      if (span) failSpan(span, err);
      if (err instanceof UpstreamFailure) upstreamErrors.inc({ vendor: this.vendor, stage: c.stage, code: String(err.code) });
      throw err;
    } finally {
      upstreamRequests.inc({ vendor: this.vendor, stage: c.stage, status_class: status });
      upstreamDuration.observe({ vendor: this.vendor, stage: c.stage }, (performance.now() - t0) / 1000);
      span?.end();
    }
  }

  private startSpan(c: UpstreamCall): Span {
    const url = new URL(`${this.baseUrl}${c.path}`);
    return startSpan(`upstream ${c.stage}`, SpanKind.CLIENT, {
      [ATTR_HTTP_REQUEST_METHOD]: c.method,
      [ATTR_URL_FULL]: `${url.origin}${url.pathname}`,
      [ATTR_SERVER_ADDRESS]: url.hostname,
      [ATTR_SERVER_PORT]: Number(url.port) || (url.protocol === 'https:' ? 443 : 80),
      'gateway.vendor': this.vendor,
      'gateway.upstream.stage': c.stage,
    }, c.traceparent);
  }

  private async exchange(c: UpstreamCall): Promise<UpstreamResponse> {
    const headers: Record<string, string> = {
      accept: 'application/json',
      ...this.fixedHeaders,
      ...c.headers,
      ...(await this.auth.headers()),
    };
    if (c.traceparent) headers.traceparent = c.traceparent;
    let payload: string | Readable | undefined;
    if (c.rawBody && c.method !== 'GET') {
      payload = Readable.from(c.rawBody.chunks, { objectMode: false });
      headers['content-type'] = 'application/json';
      headers['content-length'] = String(c.rawBody.length);
    } else if (c.body !== undefined && c.method !== 'GET') {
      payload = JSON.stringify(c.body);
      headers['content-type'] = 'application/json';
    }
    // undici's own timers are coarse (about 1 s); the deadline bounds the whole exchange exactly.
    const limit = deadline(this.timeoutMs);
    let res: Dispatcher.ResponseData;
    let text: string;
    try {
      try {
        res = await request(`${this.baseUrl}${c.path}`, {
          method: c.method as Dispatcher.HttpMethod,
          headers,
          body: payload,
          dispatcher: this.dispatcher,
          signal: limit.signal,
          headersTimeout: this.timeoutMs,
          bodyTimeout: this.timeoutMs,
        });
      } catch (err) {
        throw classifyNetworkError(err, c.stage);
      }
      try {
        // A declared length within the limit is read in one go; otherwise chunk by chunk, counting.
        const declared = Number(res.headers['content-length'] ?? Number.NaN);
        text = declared <= MAX_UPSTREAM_BODY ? await res.body.text() : await readLimited(res.body, MAX_UPSTREAM_BODY);
      } catch (err) {
        const failure = classifyNetworkError(err, c.stage);
        answerBegun.add(failure);
        throw failure;
      }
    } finally {
      limit.clear();
    }
    if (text.length === 0) return { status: res.statusCode, body: undefined };
    try {
      return { status: res.statusCode, body: JSON.parse(text) };
    } catch {
      // A non-JSON error page is still an HTTP answer the error mapping can classify.
      if (res.statusCode >= 400) return { status: res.statusCode, body: undefined };
      throw new UpstreamFailure('upstreamResponseError', `The provider's ${c.stage} answer is not JSON.`, c.stage);
    }
  }
}

async function readLimited(body: Dispatcher.ResponseData['body'], limit: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += (chunk as Buffer).length;
    if (size > limit) {
      body.destroy();
      throw new UpstreamFailure('upstreamResponseError', 'The provider answer is too large.', 'poll');
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** The provider answered: a 4xx or 5xx fails a CLIENT span (OpenTelemetry's HTTP conventions). */
function endedWith(span: Span, status: number): void {
  span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, status);
  if (status >= 400) {
    span.setAttribute('error.type', String(status));
    span.setStatus({ code: SpanStatusCode.ERROR });
  }
}
