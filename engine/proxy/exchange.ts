// One upstream call of a proxied route, as undici's raw dispatch handler (no stream objects on
// the hot path): it sends the body, buffers a JSON answer whole, or relays a 2xx event stream to
// its sink chunk by chunk as it arrives (reading the usage event as it passes, ./sse-tap.ts),
// with the client's back-pressure; then it says how the call ended. It knows no HTTP server:
// the client side is the StreamSink (engine/http/proxy-handler.ts).
import type { IncomingHttpHeaders } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { Dispatcher } from 'undici';
import type { ProxyRoutePlan, ProxyTarget } from '../descriptors/proxy-route.ts';
import { UpstreamFailure } from '../upstream/failure.ts';
import { classifyNetworkError } from '../upstream/network-error.ts';
import { ATTR_HTTP_REQUEST_METHOD, ATTR_HTTP_RESPONSE_STATUS_CODE, ATTR_SERVER_ADDRESS, ATTR_URL_FULL } from '../tracing/attributes.ts';
import { failSpan, SpanKind, SpanStatusCode, startSpan, traceparentOf, tracing, type Span } from '../tracing/tracing.ts';
import { SseTap } from './sse-tap.ts';

const MAX_JSON_ANSWER = 64 * 1024 * 1024;

/** Where a 2xx event stream goes, as it arrives. */
export interface StreamSink {
  /** The stream begins: its head goes to the client now. */
  startStream(status: number, headers: IncomingHttpHeaders): void;
  /** One chunk, as it arrived; false when the client's buffer is full (then whenDrained). */
  writeStream(chunk: Buffer): boolean;
  /** Call `resume` once the client's buffer has drained. */
  whenDrained(resume: () => void): void;
  /**
   * The stream ended cleanly: end the client's response now, in the callback that brought the
   * upstream's last bytes, so the end leaves with them in one write rather than after the
   * exchange's promise settles (a turn later, a write(2) of its own).
   */
  endStream(): void;
  /** True once the call cannot go to another pool member: the stream's head is out, or the client left. */
  committed(): boolean;
}

/** How an exchange ended. `tap` is there when a stream had begun (its head is out). */
export type ExchangeEnd =
  /** A non-stream answer, whole (any status). */
  | { kind: 'answer'; status: number; headers: IncomingHttpHeaders; body: Buffer }
  /** The stream ended cleanly (the sink has ended it). */
  | { kind: 'stream'; tap: SseTap }
  /** No (more) answer: network, timeout, an answer too large. */
  | { kind: 'failed'; failure: UpstreamFailure; tap?: SseTap }
  /** The client left (abort()) before the end. */
  | { kind: 'aborted'; tap?: SseTap };

export class UpstreamExchange implements Dispatcher.DispatchHandler {
  /** performance.now() when the request went upstream, and when the upstream's head came back (0 until then). */
  tDispatch = 0;
  tHeaders = 0;
  private readonly route: ProxyRoutePlan;
  private readonly sink: StreamSink;
  private controller: Dispatcher.DispatchController | undefined;
  private tap: SseTap | undefined;
  private status = 0;
  private headers: IncomingHttpHeaders = {};
  private chunks: Buffer[] = [];
  private size = 0;
  private gone = false;
  private ended: ((end: ExchangeEnd) => void) | undefined;
  /** Traced: the exchange's CLIENT span, ended with it. */
  private span: Span | undefined;

  /** The pool member this exchange goes to (the route's first member unless told). */
  private readonly target: ProxyTarget;

  constructor(route: ProxyRoutePlan, sink: StreamSink, target: ProxyTarget = route.upstream) {
    this.route = route;
    this.sink = sink;
    this.target = target;
  }

  /** The upstream's HTTP status; 0 when no answer came. */
  get upstreamStatus(): number {
    return this.status;
  }

  /**
   * Send the request body upstream; resolves once the exchange is over, however it ended. Not
   * async: the auth headers are known at once but for a signed token's refresh, and an async
   * layer is a promise and a suspended frame more on every chat.
   */
  send(body: Buffer, streaming: boolean, traceparent: string): Promise<ExchangeEnd> {
    const auth = this.target.auth.headers();
    if (auth instanceof Promise) return auth.then((h) => this.dispatch(body, streaming, traceparent, h));
    return this.dispatch(body, streaming, traceparent, auth);
  }

  private dispatch(body: Buffer, streaming: boolean, traceparent: string, auth: Record<string, string>): Promise<ExchangeEnd> {
    const up = this.target;
    if (tracing) {
      this.span = startSpan('upstream proxy', SpanKind.CLIENT, {
        [ATTR_HTTP_REQUEST_METHOD]: this.route.method,
        [ATTR_URL_FULL]: `${up.origin}${up.path}`,
        [ATTR_SERVER_ADDRESS]: new URL(up.origin).hostname,
        'gateway.vendor': this.route.vendor,
        'gateway.upstream.stage': 'proxy',
        'gateway.stream': streaming,
      }, traceparent);
      traceparent = traceparentOf(this.span);
    }
    // undici takes a flat [name, value, ...] list as it is (an object costs its keys' list and a
    // copy); the target's fixed headers and its auth are flattened once, not per request.
    const headers = fixedHeaders(up, auth).concat('accept', streaming ? 'text/event-stream' : 'application/json', 'traceparent', traceparent);
    const end = new Promise<ExchangeEnd>((resolve) => (this.ended = resolve));
    this.tDispatch = performance.now();
    up.dispatcher.dispatch(
      { origin: up.origin, path: up.path, method: this.route.method, headers, body, headersTimeout: up.timeoutMs, bodyTimeout: up.timeoutMs, idempotent: false },
      this,
    );
    return end;
  }

  /** The client left: the upstream request is cut (the exchange then ends as `aborted`). */
  abort(): void {
    this.gone = true;
    if (this.controller && this.ended) this.controller.abort(new Error('the client closed the connection'));
  }

  private end(end: ExchangeEnd): void {
    if (this.span) endSpan(this.span, end, this.status);
    this.span = undefined;
    const resolve = this.ended;
    this.ended = undefined;
    resolve?.(end);
  }

  private readonly resume = (): void => this.controller?.resume();

  // ---- undici dispatch handler -------------------------------------------------------

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.gone) controller.abort(new Error('the client closed the connection'));
  }

  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders): void {
    this.tHeaders = performance.now();
    this.status = statusCode;
    this.headers = headers;
    const type = headers['content-type'];
    if (statusCode >= 200 && statusCode < 300 && typeof type === 'string' && type.startsWith('text/event-stream')) {
      this.tap = new SseTap(this.route.usage?.key ?? 'usage');
      this.sink.startStream(statusCode, headers);
    }
    if (this.gone) controller.abort(new Error('the client closed the connection'));
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.tap) {
      this.tap.feed(chunk);
      if (!this.sink.writeStream(chunk) && !controller.paused) {
        controller.pause();
        this.sink.whenDrained(this.resume);
      }
      return;
    }
    this.size += chunk.length;
    if (this.size > MAX_JSON_ANSWER) {
      controller.abort(new UpstreamFailure('upstreamResponseError', 'The provider answer is too large.', 'submit'));
      return;
    }
    this.chunks.push(chunk);
  }

  onResponseEnd(): void {
    if (this.tap) {
      this.sink.endStream();
      return this.end({ kind: 'stream', tap: this.tap });
    }
    const body = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks, this.size);
    this.chunks = [];
    this.end({ kind: 'answer', status: this.status, headers: this.headers, body });
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error): void {
    if (this.gone) return this.end({ kind: 'aborted', tap: this.tap });
    this.end({ kind: 'failed', failure: classifyNetworkError(err, 'submit'), tap: this.tap });
  }
}

/** Each target's fixed headers with its auth's, flattened; kept while the auth answers the same object (a static key does). */
const fixed = new WeakMap<ProxyTarget, { auth: Record<string, string>; pairs: string[] }>();

/** The target's headers, its auth's and the body's type, as undici's flat list (a later name overrides, as a spread would). */
function fixedHeaders(up: ProxyTarget, auth: Record<string, string>): string[] {
  const known = fixed.get(up);
  if (known?.auth === auth) return known.pairs;
  const merged: Record<string, string> = { ...up.headers, ...auth, 'content-type': 'application/json' };
  delete merged.accept;
  delete merged.traceparent;
  const pairs = Object.entries(merged).flat();
  fixed.set(up, { auth, pairs });
  return pairs;
}

/** The exchange's CLIENT span, as the exchange ended (a 4xx or 5xx answer fails it, as a client span). */
function endSpan(span: Span, end: ExchangeEnd, status: number): void {
  if (status) span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, status);
  if (end.kind === 'failed') failSpan(span, end.failure);
  else if (end.kind === 'aborted') span.setAttribute('gateway.outcome', 'client_closed');
  else if (status >= 400) {
    span.setAttribute('error.type', String(status));
    span.setStatus({ code: SpanStatusCode.ERROR });
  }
  span.end();
}
