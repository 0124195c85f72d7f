// The HTTP client for one vendor's upstream: undici over a shared keep-alive Agent, the
// vendor's auth plug-in and timeout, and the caller's traceparent passed on. It returns any
// HTTP answer whose body is JSON; it throws UpstreamFailure when there is no usable answer.
import { Readable } from 'node:stream';
import { Agent, request, type Dispatcher } from 'undici';
import type { AuthPlugin } from './auth-schemes.ts';
import { UpstreamFailure, type UpstreamStage } from './failure.ts';
import { classifyNetworkError } from './network-error.ts';

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

export function createUpstreamAgent(): Agent {
  return new Agent({ keepAliveTimeout: 30_000, keepAliveMaxTimeout: 120_000, connections: 256 });
}

export class UpstreamClient {
  readonly baseUrl: string;
  readonly auth: AuthPlugin;
  readonly timeoutMs: number;
  readonly fixedHeaders: Record<string, string>;
  readonly dispatcher: Dispatcher;

  constructor(opts: { baseUrl: string; auth: AuthPlugin; timeoutMs: number; headers?: Record<string, string>; dispatcher: Dispatcher }) {
    this.baseUrl = opts.baseUrl.replace(/\/+$/, '');
    this.auth = opts.auth;
    this.timeoutMs = opts.timeoutMs;
    this.fixedHeaders = opts.headers ?? {};
    this.dispatcher = opts.dispatcher;
  }

  async call(c: UpstreamCall): Promise<UpstreamResponse> {
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
    let res: Dispatcher.ResponseData;
    try {
      res = await request(`${this.baseUrl}${c.path}`, {
        method: c.method as Dispatcher.HttpMethod,
        headers,
        body: payload,
        dispatcher: this.dispatcher,
        // undici's own timers are coarse (about 1 s); the signal bounds the whole exchange exactly.
        signal: AbortSignal.timeout(this.timeoutMs),
        headersTimeout: this.timeoutMs,
        bodyTimeout: this.timeoutMs,
      });
    } catch (err) {
      throw classifyNetworkError(err, c.stage);
    }
    let text: string;
    try {
      // A declared length within the limit is read in one go; otherwise chunk by chunk, counting.
      const declared = Number(res.headers['content-length'] ?? Number.NaN);
      text = declared <= MAX_UPSTREAM_BODY ? await res.body.text() : await readLimited(res.body, MAX_UPSTREAM_BODY);
    } catch (err) {
      throw classifyNetworkError(err, c.stage);
    }
    if (text.length === 0) return { status: res.statusCode, body: undefined };
    try {
      return { status: res.statusCode, body: JSON.parse(text) };
    } catch {
      // A non-JSON error page is still an HTTP answer the error mapping can classify.
      if (res.statusCode >= 400) return { status: res.statusCode, body: undefined };
      throw new UpstreamFailure(3003, `The provider's ${c.stage} answer is not JSON.`, c.stage);
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
      throw new UpstreamFailure(3003, 'The provider answer is too large.', 'poll');
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}
