// The wire of `kind: sync|stream` routes and model lists, on the plain node request the data
// plane hands over. The service work (admission, validation, limits and funds, the body
// rewrite, the pool's failover, usage and charging) is engine/proxy/requests.ts's; this file is
// its stream sink, and writes the answer's head, problems and the one access line.
//
// Answers:
//  - 2xx JSON: buffered (it is small), its usage read, passed through with its status and
//    bytes; Traceparent, Server-Timing (gateway;dur = the gateway's own time) added.
//  - 2xx text/event-stream: relayed chunk by chunk as it arrives (writeHead + flush at the
//    upstream's first byte, no compression, X-Accel-Buffering: no). Client disconnect aborts
//    the upstream request; an upstream failure mid-stream ends the stream with one
//    `data: {"error": ...}` event and a clean end.
//  - upstream errors: engine/proxy/upstream-error.ts.
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import type { ProxyRoutePlan } from '../descriptors/proxy-route.ts';
import type { TokenUsage } from '../descriptors/token-prices.ts';
import { GatewayError } from '../errors/gateway-error.ts';
import { errorObjectFor, type ClientErrorObject } from '../proxy/error-object.ts';
import type { ExchangeEnd, StreamSink } from '../proxy/exchange.ts';
import { ProxyCall, type ProxyService } from '../proxy/requests.ts';
import { proxiedUpstreamError } from '../proxy/upstream-error.ts';
import { UpstreamFailure } from '../upstream/failure.ts';
import { accessLine, logRequest } from './access-log.ts';
import { problemCodeOf, toGatewayError } from './answer.ts';
import { sendProxyProblem } from './proxy-problem.ts';
import type { Visit } from './visit.ts';

export interface ProxyHandlerDeps {
  service: ProxyService;
  logger: Logger;
  /** The access log (the front door's too: engine/log/logger.ts accessLogger). */
  accessLog: Logger;
}

export class ProxyHandler {
  readonly service: ProxyService;
  readonly logger: Logger;
  readonly accessLog: Logger;

  constructor(deps: ProxyHandlerDeps) {
    this.service = deps.service;
    this.logger = deps.logger;
    this.accessLog = deps.accessLog;
  }

  /** Answers one request the data plane routed here (traced by the front door), and logs it. */
  handle(req: IncomingMessage, res: ServerResponse, route: ProxyRoutePlan, visit: Visit): Promise<void> {
    return new ProxiedRequest(this, req, res, route, visit).run();
  }
}

// A function of the module, not a closure per request: most requests (sync chats) never cork.
const uncorkHeld = (r: ProxiedRequest): void => r.uncork();

/** One proxied request, from the client's side; the sink of its upstream exchange's stream. */
class ProxiedRequest implements StreamSink {
  private readonly gw: ProxyHandler;
  private readonly req: IncomingMessage;
  private readonly res: ServerResponse;
  private readonly visit: Visit;
  private readonly call: ProxyCall;
  private gatewayMs = 0;
  private upHeaders: IncomingHttpHeaders | undefined;
  private streamed = false;
  private clientGone = false;
  private corked = false;
  /** The stream's chunks of the current tick, written as one at its end (see cork()). */
  private pending: Buffer[] | undefined;
  private outcome = 'ok';

  constructor(gw: ProxyHandler, req: IncomingMessage, res: ServerResponse, route: ProxyRoutePlan, visit: Visit) {
    this.gw = gw;
    this.req = req;
    this.res = res;
    this.visit = visit;
    this.call = new ProxyCall(gw.service, route, visit.trace);
  }

  // One async function for the whole request (each async layer is a promise and a microtask
  // turn more per request).
  async run(): Promise<void> {
    const call = this.call;
    try {
      if (call.route.list) await this.list();
      else {
        this.res.on('close', this.onClientClose); // a response closes once: no once() wrapper
        await call.prepare(this.req.headers.authorization, this.visit);
        if (this.clientGone) this.outcome = 'client_closed';
        else {
          const end = await call.send(this);
          // Only an upstream error's answer waits (for its mapping); the others are answered in this turn.
          if (end.kind === 'answer' && (end.status < 200 || end.status >= 300)) await this.answerUpstreamError(end.status, end.headers, end.body);
          else call.usage = this.answer(end);
        }
      }
    } catch (err) {
      this.fail(err);
    }
    // Whatever happened after the hold (answered, refused, failed upstream): settle or release it.
    const charged = call.charge();
    if (charged) await charged;
    this.log();
  }

  private async list(): Promise<void> {
    const body = await this.gw.service.list(this.call.route, this.req.headers.authorization, this.visit, this.visit.trace.traceparent);
    const h = this.answerHeaders();
    h['content-type'] = 'application/json';
    h['content-length'] = String(body.length);
    this.gatewayMs = performance.now() - this.visit.t0;
    h['server-timing'] = `gateway;dur=${this.gatewayMs.toFixed(3)}`;
    this.res.writeHead(200, h).end(body);
  }

  private readonly onClientClose = (): void => {
    if (this.res.writableFinished) return;
    this.clientGone = true;
    this.call.exchange?.abort();
  };

  // ---- the stream sink ---------------------------------------------------------------

  startStream(status: number, headers: IncomingHttpHeaders): void {
    const ex = this.call.exchange!;
    this.streamed = true;
    this.upHeaders = headers;
    const h = this.answerHeaders();
    h['content-type'] = headers['content-type'] as string;
    h['cache-control'] = 'no-cache';
    h['x-accel-buffering'] = 'no';
    this.gatewayMs = ex.tDispatch - this.visit.t0 + (performance.now() - ex.tHeaders);
    h['server-timing'] = this.serverTiming(ex.tHeaders - ex.tDispatch);
    this.cork();
    this.res.writeHead(status, h);
    this.res.flushHeaders();
  }

  /** Held until the end of the tick (cork()); false once the client's buffer is full. */
  writeStream(chunk: Buffer): boolean {
    if (!this.cork()) return this.res.write(chunk);
    (this.pending ??= []).push(chunk);
    return !this.res.writableNeedDrain;
  }

  whenDrained(resume: () => void): void {
    this.res.once('drain', resume);
  }

  committed(): boolean {
    return this.clientGone || this.streamed;
  }

  endStream(): void {
    const last = this.takePending();
    if (last) this.res.end(last);
    else this.res.end();
  }

  /**
   * What undici hands over from one read of the upstream (the head, events, often the end)
   * leaves in one write(2) and as one HTTP chunk: the socket is corked and the events are held
   * until the current callback returns (process.nextTick, which adds no latency), then written
   * with one res.write. undici calls back once per chunk of the upstream's chunked answer, often
   * one per event, and each res.write is the response's own work and chunk framing: about 20 per
   * streamed completion, where one does. The socket, not the response, is corked: a corked
   * response writes end()'s last chunk ahead of the chunks it holds (node 24). end() uncorks the
   * socket fully, so an ended response leaves it alone. False when there is no socket to cork.
   */
  private cork(): boolean {
    const socket = this.res.socket;
    if (this.corked) return true;
    if (!socket) return false;
    this.corked = true;
    socket.cork();
    process.nextTick(uncorkHeld, this);
    return true;
  }

  /** The tick is over (cork()): the held events go out, then the socket is uncorked. */
  uncork(): void {
    this.corked = false;
    const held = this.takePending();
    if (this.res.writableEnded || this.res.destroyed) return;
    if (held) this.res.write(held);
    this.res.socket?.uncork();
  }

  /** Events still held this tick go out before anything written after them. */
  private writeHeld(): void {
    const held = this.takePending();
    if (held) this.res.write(held);
  }

  /** The chunks held this tick, as one; undefined when none. */
  private takePending(): Buffer | undefined {
    const chunks = this.pending;
    this.pending = undefined;
    return chunks && (chunks.length === 1 ? chunks[0] : Buffer.concat(chunks));
  }

  // ---- answers -----------------------------------------------------------------------

  /** Answers the client as the exchange ended, but for an upstream error's answer; returns the usage to charge. */
  private answer(end: ExchangeEnd): TokenUsage | undefined {
    switch (end.kind) {
      case 'answer':
        return this.answerBuffered(end.status, end.headers, end.body);
      case 'stream':
        return this.call.streamUsage(end.tap);
      case 'aborted':
        this.outcome = 'client_closed';
        return end.tap && end.tap.events > 0 ? this.call.streamUsage(end.tap) : undefined;
      case 'failed':
        if (!end.tap) throw end.failure.toGatewayError();
        // Headers are out: end the stream with one error event the client SDKs understand.
        this.outcome = 'upstream_dropped';
        this.writeHeld();
        this.res.end(`data: ${JSON.stringify({ error: errorObjectFor(end.failure.toGatewayError(`The provider's stream broke off: ${end.failure.message}`)) })}\n\n`);
        this.gw.logger.warn({ trace_id: this.visit.trace.traceId, route: this.call.route.key, err: end.failure.message }, 'upstream stream broke off');
        return end.tap.events > 0 ? this.call.streamUsage(end.tap) : undefined;
    }
  }

  private answerBuffered(status: number, headers: IncomingHttpHeaders, text: Buffer): TokenUsage {
    // The completion is done upstream: it is billed even if the client left meanwhile.
    const usage = this.call.answerUsage(status, text);
    if (this.clientGone) return usage;
    this.upHeaders = headers;
    const ex = this.call.exchange!;
    const h = this.answerHeaders();
    h['content-type'] = (headers['content-type'] as string | undefined) ?? 'application/json';
    h['content-length'] = String(text.length);
    this.gatewayMs = ex.tDispatch - this.visit.t0 + (performance.now() - ex.tHeaders);
    h['server-timing'] = this.serverTiming(ex.tHeaders - ex.tDispatch);
    this.res.writeHead(status, h).end(text);
    return usage;
  }

  private async answerUpstreamError(status: number, headers: IncomingHttpHeaders, text: Buffer): Promise<void> {
    this.upHeaders = headers;
    const { error, own } = await proxiedUpstreamError(this.call.route, status, text);
    this.outcome = 'upstream_error';
    this.sendProblem(error, own);
  }

  private answerHeaders(): Record<string, string> {
    const h: Record<string, string> = {};
    const up = this.upHeaders;
    if (up) {
      for (const name of this.call.route.passHeaders) {
        const v = up[name];
        if (typeof v === 'string') h[name] = v;
      }
    }
    if (this.call.dropped) h['x-gateway-dropped-media'] = String(this.call.dropped);
    return h;
  }

  private serverTiming(upstreamMs: number): string {
    return `gateway;dur=${this.gatewayMs.toFixed(3)}, upstream;dur=${upstreamMs.toFixed(3)}`;
  }

  private fail(err: unknown): void {
    // An upstream failure keeps its code; anything else as every route maps it (./answer.ts).
    const e = err instanceof UpstreamFailure ? err.toGatewayError() : toGatewayError(err, this.gw.logger);
    if (this.outcome === 'ok') this.outcome = e.code >= 3000 && e.code < 4000 ? 'upstream_error' : 'refused';
    if (this.res.headersSent) {
      this.res.destroy();
      return;
    }
    if (this.clientGone || this.res.destroyed) return;
    this.sendProblem(e);
  }

  private sendProblem(err: GatewayError, upstreamError?: ClientErrorObject): void {
    const ex = this.call.exchange;
    const now = performance.now();
    this.gatewayMs = ex?.tDispatch ? ex.tDispatch - this.visit.t0 + (ex.tHeaders ? now - ex.tHeaders : 0) : now - this.visit.t0;
    const h = this.answerHeaders();
    h['server-timing'] = ex?.tHeaders ? this.serverTiming(ex.tHeaders - ex.tDispatch) : `gateway;dur=${this.gatewayMs.toFixed(3)}`;
    sendProxyProblem(this.res, err, this.visit.path, this.visit.trace.traceId, h, upstreamError);
  }

  private log(): void {
    const call = this.call;
    const u = call.usage;
    const code = problemCodeOf(this.res);
    call.observe(code, this.streamed);
    const latencyMs = performance.now() - this.visit.t0;
    const line = accessLine(this.visit.trace.traceId, this.req.method, call.route.key, this.visit.path, this.res.statusCode, latencyMs, this.visit.tenantId);
    line.gateway_ms = Math.round(this.gatewayMs * 1000) / 1000;
    line.model = call.model;
    line.outcome = this.clientGone && this.outcome === 'ok' ? 'client_closed' : this.outcome;
    if (this.streamed) {
      line.stream = true;
      line.ttfb_ms = Math.round((call.exchange!.tHeaders - this.visit.t0) * 1000) / 1000;
    }
    if (u) {
      line.tokens_in = u.input;
      line.tokens_cached = u.cachedInput;
      line.tokens_out = u.output;
      line.tokens_estimated = u.estimated;
      line.charged_milli = call.charged;
    }
    if (call.dropped) line.dropped_media = call.dropped;
    logRequest(this.gw.accessLog, line, latencyMs, code);
  }
}
