// The HTTP side of `kind: sync|stream` routes and model lists, on the plain node request the
// data plane hands over: auth → scope → body (raw, ./raw-body.ts) → validation → limits → funds
// → the upstream exchange (engine/proxy/exchange.ts) → answer passed back unchanged → usage
// charged once (engine/proxy/usage.ts) → one access line. Route plans are compiled at start-up:
// the hot path does no descriptor work.
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
import type { VendorPlan } from '../descriptors/compile.ts';
import type { ProxyRoutePlan } from '../descriptors/proxy-route.ts';
import type { ModelPrice, TokenUsage } from '../descriptors/token-prices.ts';
import { GatewayError } from '../errors/gateway-error.ts';
import { accessLogger } from '../log/logger.ts';
import { rewriteBody } from '../proxy/body.ts';
import { errorObjectFor, type ClientErrorObject } from '../proxy/error-object.ts';
import { UpstreamExchange, type ExchangeEnd, type StreamSink } from '../proxy/exchange.ts';
import { ListCache } from '../proxy/model-list.ts';
import { noBilling, noLimits, type ProxyBilling, type ProxyLimits } from '../proxy/ports.ts';
import type { SseTap } from '../proxy/sse-tap.ts';
import { proxiedUpstreamError } from '../proxy/upstream-error.ts';
import { completionIdOf, estimatedUsage, reportedUsage, usageCharge } from '../proxy/usage.ts';
import { requireScope, type AuthContext } from '../tenants/auth-context.ts';
import type { TenantService } from '../tenants/service.ts';
import { UpstreamFailure } from '../upstream/failure.ts';
import { traced, tracing } from '../tracing/tracing.ts';
import { logRequest } from './access-log.ts';
import { problemCodeOf, toGatewayError } from './answer.ts';
import { sendProxyProblem } from './proxy-problem.ts';
import type { Visit } from './visit.ts';
import { memberFailovers, statusClass, upstreamDuration, upstreamErrors, upstreamRequests, upstreamTtfb } from '../metrics/metrics.ts';
import { failureReason, statusReason } from '../upstream/pool.ts';

export interface ProxyHandlerDeps {
  tenants: TenantService;
  logger: Logger;
  billing?: ProxyBilling;
  limits?: ProxyLimits;
}

export class ProxyHandler {
  readonly routes: readonly ProxyRoutePlan[];
  readonly tenants: TenantService;
  readonly logger: Logger;
  /**
   * The per-request access line. Its fields are fixed and never hold a secret, so it skips the
   * root logger's wildcard redaction (~15 µs a line) and redacts top-level names only.
   */
  readonly accessLog: Logger;
  billing: ProxyBilling;
  limits: ProxyLimits;
  private readonly lists = new Map<string, ListCache>();

  constructor(vendors: readonly VendorPlan[], deps: ProxyHandlerDeps) {
    this.tenants = deps.tenants;
    this.logger = deps.logger;
    this.accessLog = accessLogger(deps.logger);
    this.billing = deps.billing ?? noBilling;
    this.limits = deps.limits ?? noLimits;
    const routes: ProxyRoutePlan[] = [];
    const served = new Map<string, string>();
    for (const v of vendors) {
      for (const r of v.routes) {
        if (r.kind !== 'sync' && r.kind !== 'stream') continue;
        routes.push(r);
        for (const path of [r.path, ...r.aliases]) {
          const key = `${r.method} ${path}`;
          const other = served.get(key);
          if (other) throw new Error(`${key} is served by two routes: ${other} and ${r.key}`);
          served.set(key, r.key);
        }
        if (r.list) this.lists.set(r.key, new ListCache(r, deps.logger));
      }
    }
    this.routes = Object.freeze(routes);
  }

  /** Every (method, client path) served, aliases included. */
  paths(): { method: 'GET' | 'POST'; path: string; route: ProxyRoutePlan }[] {
    return this.routes.flatMap((r) => [r.path, ...r.aliases].map((path) => ({ method: r.method, path, route: r })));
  }

  /** Answers one request the data plane routed here (traced by the front door), and logs it. */
  handle(req: IncomingMessage, res: ServerResponse, route: ProxyRoutePlan, visit: Visit): Promise<void> {
    return new ProxiedRequest(this, req, res, route, visit).run();
  }

  listCache(route: ProxyRoutePlan): ListCache {
    return this.lists.get(route.key)!;
  }
}

/** One proxied request, from the client's side; the sink of its upstream exchange's stream. */
class ProxiedRequest implements StreamSink {
  private readonly gw: ProxyHandler;
  private readonly req: IncomingMessage;
  private readonly res: ServerResponse;
  private readonly route: ProxyRoutePlan;
  private readonly visit: Visit;
  private exchange: UpstreamExchange | undefined;
  private gatewayMs = 0;
  private auth: AuthContext | undefined;
  private body: Record<string, unknown> | undefined;
  private model: string | undefined;
  private price: ModelPrice | undefined;
  private upHeaders: IncomingHttpHeaders | undefined;
  private streamed = false;
  private clientGone = false;
  private corked = false;
  private outcome = 'ok';
  private usage: TokenUsage | undefined;
  private charged: number | undefined;
  private dropped = 0;
  private completionId: string | undefined;

  constructor(gw: ProxyHandler, req: IncomingMessage, res: ServerResponse, route: ProxyRoutePlan, visit: Visit) {
    this.gw = gw;
    this.req = req;
    this.res = res;
    this.route = route;
    this.visit = visit;
  }

  async run(): Promise<void> {
    try {
      if (this.route.list) await this.list();
      else await this.proxy();
    } catch (err) {
      this.fail(err);
    }
    this.log();
  }

  // ---- before the upstream -------------------------------------------------------------

  private async authorise(action: 'create' | 'read'): Promise<AuthContext> {
    const auth = await this.gw.tenants.authenticate(this.req.headers.authorization);
    this.auth = auth;
    requireScope(auth, this.route.vendor, action);
    return auth;
  }

  private async proxy(): Promise<void> {
    const route = this.route;
    this.res.once('close', this.onClientClose);
    const auth = await this.authorise('create');
    const { raw = Buffer.alloc(0), json } = await this.visit.readBody();
    const body = (await (tracing ? traced('validation', () => route.validate!(json)) : route.validate!(json))) as Record<string, unknown>;
    this.body = body;
    const model = route.model?.(body);
    this.model = typeof model === 'string' ? model : undefined;
    if (route.pricer) {
      this.price = this.model === undefined ? undefined : route.pricer.priceOf(this.model);
      if (!this.price) {
        throw new GatewayError(2003, `The model ${JSON.stringify(this.model)} is not offered here; GET /v1/models lists the models you can use.`, {
          errors: [{ pointer: '/model', detail: 'is not an offered model', code: 2003 }],
        });
      }
    }
    // Rate limits, daily spend, funds: one round trip to the stores, not three (they matter
    // with Redis); the first refusal in this order is the answer.
    const checks = [this.gw.limits.checkRequest({ tenantId: auth.tenantId, keyId: auth.keyId, model: this.limitKey() })];
    if (route.pricer) checks.push(this.gw.limits.checkSpend(auth.tenantId), this.gw.billing.ensureCanSpend(auth.tenantId));
    for (const r of await Promise.allSettled(checks)) if (r.status === 'rejected') throw r.reason;
    const streaming = route.stream !== undefined && route.stream.flag(body) === true;
    const needUsage = streaming && route.stream!.usageOption !== undefined && route.stream!.usageOptionValue!(body) !== true;
    const needDrop = route.dropMedia !== undefined && raw.length > route.dropMedia.minBodyBytes;
    let out = raw;
    if (needUsage || needDrop) {
      const rw = rewriteBody(raw, body, { setTrue: needUsage ? route.stream!.usageOption : undefined, drop: needDrop ? route.dropMedia : undefined });
      out = rw.body;
      this.dropped = rw.dropped;
    }
    if (this.clientGone) {
      this.outcome = 'client_closed';
      return;
    }
    const end = await this.exchangeWithFailover(out, streaming);
    let usage: TokenUsage | undefined;
    try {
      usage = await this.answer(end);
    } finally {
      await this.charge(usage);
    }
  }

  /**
   * The exchange on the vendor's pool. A member that fails before anything reached the client
   * (no connection, no answer head in time, a 5xx or 429 answer: buffered, never relayed) hands
   * the request to the next member; once a stream's head is out there is no going back, and a
   * stream that breaks off is the client's to see.
   */
  private async exchangeWithFailover(out: Buffer, streaming: boolean): Promise<ExchangeEnd> {
    const up = this.route.upstream;
    const pool = up.pool;
    const tried = new Set<string>();
    let member = await pool.pick(tried);
    for (;;) {
      const m = member!;
      tried.add(m.id);
      const ex = new UpstreamExchange(this.route, this, up.targets.get(m.id));
      this.exchange = ex;
      const end = await ex.send(out, streaming, this.visit.trace.traceparent);
      const reason = end.kind === 'answer' ? statusReason(end.status) : end.kind === 'failed' && !end.tap && ex.upstreamStatus === 0 ? failureReason(end.failure) : undefined;
      if (reason) await pool.failed(m, 'proxy', reason);
      else if (end.kind === 'answer' || end.kind === 'stream') await pool.succeeded(m, 'proxy');
      else pool.count(m, 'proxy');
      if (!reason || this.clientGone || this.streamed || !(member = await pool.pick(tried, { healthyOnly: true }))) return end;
      memberFailovers.inc({ vendor: this.route.vendor, stage: 'proxy' });
      this.gw.logger.warn({ trace_id: this.visit.trace.traceId, route: this.route.key, member: m.id, reason }, 'proxied call failed over to the next pool member');
    }
  }

  /** The model scope of rate limits: `<vendor>/<model>` (async routes use `<vendor>/<route id>`). */
  private limitKey(): string | undefined {
    return this.model === undefined ? undefined : `${this.route.vendor}/${this.model}`;
  }

  private readonly onClientClose = (): void => {
    if (this.res.writableFinished) return;
    this.clientGone = true;
    this.exchange?.abort();
  };

  // ---- the stream sink ---------------------------------------------------------------

  startStream(status: number, headers: IncomingHttpHeaders): void {
    const ex = this.exchange!;
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

  writeStream(chunk: Buffer): boolean {
    this.cork();
    return this.res.write(chunk);
  }

  whenDrained(resume: () => void): void {
    this.res.once('drain', resume);
  }

  endStream(): void {
    this.res.end();
  }

  /**
   * Stream writes made while undici hands over one read from the upstream (headers, events,
   * often the end) leave in one write(2) instead of one each: the socket is corked until the
   * current callback returns (process.nextTick), which adds no latency. The socket, not the
   * response: a corked response writes end()'s last chunk ahead of the chunks it holds (node 24).
   * end() uncorks the socket fully, so an ended response leaves it alone.
   */
  private cork(): void {
    const socket = this.res.socket;
    if (this.corked || !socket) return;
    this.corked = true;
    socket.cork();
    process.nextTick(this.uncork);
  }

  private readonly uncork = (): void => {
    this.corked = false;
    if (!this.res.writableEnded) this.res.socket?.uncork();
  };

  // ---- answers -----------------------------------------------------------------------

  /** Answers the client as the exchange ended; returns the usage to charge. */
  private async answer(end: ExchangeEnd): Promise<TokenUsage | undefined> {
    switch (end.kind) {
      case 'answer':
        return end.status >= 200 && end.status < 300 ? this.answerBuffered(end.status, end.headers, end.body) : this.answerUpstreamError(end.status, end.headers, end.body);
      case 'stream':
        return this.streamUsage(end.tap);
      case 'aborted':
        this.outcome = 'client_closed';
        return end.tap && end.tap.events > 0 ? this.streamUsage(end.tap) : undefined;
      case 'failed':
        if (!end.tap) throw new GatewayError(end.failure.code, end.failure.message);
        // Headers are out: end the stream with one error event the client SDKs understand.
        this.outcome = 'upstream_dropped';
        this.res.end(`data: ${JSON.stringify({ error: errorObjectFor(new GatewayError(end.failure.code, `The provider's stream broke off: ${end.failure.message}`)) })}\n\n`);
        this.gw.logger.warn({ trace_id: this.visit.trace.traceId, route: this.route.key, err: end.failure.message }, 'upstream stream broke off');
        return end.tap.events > 0 ? this.streamUsage(end.tap) : undefined;
    }
  }

  private answerBuffered(status: number, headers: IncomingHttpHeaders, text: Buffer): TokenUsage {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text.toString('utf8'));
    } catch {
      throw new GatewayError(3003, `The provider's answer (HTTP ${status}) is not JSON.`);
    }
    this.completionId = completionIdOf(parsed);
    // The completion is done upstream: it is billed even if the client left meanwhile.
    this.usage = this.usageFrom(parsed) ?? estimatedUsage(this.body, Math.ceil(text.length / 4));
    if (this.clientGone) return this.usage;
    this.upHeaders = headers;
    const ex = this.exchange!;
    const h = this.answerHeaders();
    h['content-type'] = (headers['content-type'] as string | undefined) ?? 'application/json';
    h['content-length'] = String(text.length);
    this.gatewayMs = ex.tDispatch - this.visit.t0 + (performance.now() - ex.tHeaders);
    h['server-timing'] = this.serverTiming(ex.tHeaders - ex.tDispatch);
    this.res.writeHead(status, h).end(text);
    return this.usage;
  }

  private async answerUpstreamError(status: number, headers: IncomingHttpHeaders, text: Buffer): Promise<undefined> {
    this.upHeaders = headers;
    const { error, own } = await proxiedUpstreamError(this.route, status, text);
    this.outcome = 'upstream_error';
    this.sendProblem(error, own);
    return undefined;
  }

  private async list(): Promise<void> {
    const auth = await this.authorise('read');
    await this.gw.limits.checkRequest({ tenantId: auth.tenantId, keyId: auth.keyId });
    const body = await this.gw.listCache(this.route).get(this.visit.trace.traceparent);
    const h = this.answerHeaders();
    h['content-type'] = 'application/json';
    h['content-length'] = String(body.length);
    this.gatewayMs = performance.now() - this.visit.t0;
    h['server-timing'] = `gateway;dur=${this.gatewayMs.toFixed(3)}`;
    this.res.writeHead(200, h).end(body);
  }

  private answerHeaders(): Record<string, string> {
    const h: Record<string, string> = {};
    const up = this.upHeaders;
    if (up) {
      for (const name of this.route.passHeaders) {
        const v = up[name];
        if (typeof v === 'string') h[name] = v;
      }
    }
    if (this.dropped) h['x-gateway-dropped-media'] = String(this.dropped);
    return h;
  }

  private serverTiming(upstreamMs: number): string {
    return `gateway;dur=${this.gatewayMs.toFixed(3)}, upstream;dur=${upstreamMs.toFixed(3)}`;
  }

  private fail(err: unknown): void {
    // An upstream failure keeps its code; anything else as every route maps it (./answer.ts).
    const e = err instanceof UpstreamFailure ? new GatewayError(err.code, err.message) : toGatewayError(err, this.gw.logger);
    if (this.outcome === 'ok') this.outcome = e.code >= 3000 && e.code < 4000 ? 'upstream_error' : 'refused';
    if (this.res.headersSent) {
      this.res.destroy();
      return;
    }
    if (this.clientGone || this.res.destroyed) return;
    this.sendProblem(e);
  }

  private sendProblem(err: GatewayError, upstreamError?: ClientErrorObject): void {
    const ex = this.exchange;
    const now = performance.now();
    this.gatewayMs = ex?.tDispatch ? ex.tDispatch - this.visit.t0 + (ex.tHeaders ? now - ex.tHeaders : 0) : now - this.visit.t0;
    const h = this.answerHeaders();
    h['server-timing'] = ex?.tHeaders ? this.serverTiming(ex.tHeaders - ex.tDispatch) : `gateway;dur=${this.gatewayMs.toFixed(3)}`;
    sendProxyProblem(this.res, err, this.visit.path, this.visit.trace.traceId, h, upstreamError);
  }

  // ---- usage and billing -------------------------------------------------------------

  private usageFrom(answer: unknown): TokenUsage | undefined {
    const usage = reportedUsage(this.route, answer);
    if (usage) this.completionId = completionIdOf(answer) ?? this.completionId;
    return usage;
  }

  /** A stream's usage: its usage event's, else estimated from the events relayed. */
  private streamUsage(tap: SseTap): TokenUsage {
    return this.usageFrom(tap.usageEvent) ?? estimatedUsage(this.body, tap.events);
  }

  /** The exchange is over: charge its usage (exactly once: proxy() calls this once). */
  private async charge(usage: TokenUsage | undefined): Promise<void> {
    const u = usage ?? this.usage;
    this.usage = u;
    if (!u || !this.route.pricer || !this.price || !this.auth) return;
    const { ref, milli, note } = usageCharge(this.route, this.price, this.model, u, this.completionId, this.visit.trace.traceparent);
    this.charged = milli;
    try {
      await this.gw.billing.charge(this.auth.tenantId, ref, milli, note);
    } catch (err) {
      // The answer is out; the charge must not be lost silently: this line is the reconciliation record.
      this.gw.logger.error({ err, trace_id: this.visit.trace.traceId, tenant_id: this.auth.tenantId, ref, milli, note }, 'usage charge failed');
    }
  }

  private log(): void {
    const u = this.usage;
    const extra: Record<string, unknown> = {
      gateway_ms: Math.round(this.gatewayMs * 1000) / 1000,
      model: this.model,
      outcome: this.clientGone && this.outcome === 'ok' ? 'client_closed' : this.outcome,
    };
    if (this.streamed) {
      extra.stream = true;
      extra.ttfb_ms = Math.round((this.exchange!.tHeaders - this.visit.t0) * 1000) / 1000;
    }
    if (u) {
      extra.tokens_in = u.input;
      extra.tokens_cached = u.cachedInput;
      extra.tokens_out = u.output;
      extra.tokens_estimated = u.estimated;
      extra.charged_milli = this.charged;
    }
    if (this.dropped) extra.dropped_media = this.dropped;
    const code = problemCodeOf(this.res);
    const ex = this.exchange;
    if (ex?.tDispatch) {
      const vendor = this.route.vendor;
      upstreamRequests.inc({ vendor, stage: 'proxy', status_class: ex.upstreamStatus ? statusClass(ex.upstreamStatus) : 'error' });
      upstreamDuration.observe({ vendor, stage: 'proxy' }, (performance.now() - ex.tDispatch) / 1000);
      if (this.streamed) upstreamTtfb.observe({ vendor }, (ex.tHeaders - ex.tDispatch) / 1000);
      if (code !== undefined && code >= 3000 && code < 4000) upstreamErrors.inc({ vendor, stage: 'proxy', code: String(code) });
    }
    logRequest(this.gw.accessLog, { traceId: this.visit.trace.traceId, method: this.req.method, route: this.route.key, path: this.visit.path, status: this.res.statusCode, latencyMs: performance.now() - this.visit.t0, tenantId: this.auth?.tenantId, code }, extra);
  }
}
