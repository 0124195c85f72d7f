// Serves `kind: sync|stream` routes on plain node requests: auth → scope → body (raw) →
// validation → limits → funds → upstream (undici keep-alive pool, raw dispatch) → answer
// passed back unchanged → usage charged once → one log line.
//
// The hot path does no descriptor work (route plans are compiled at start-up) and sits in
// front of express: `tryHandle` answers the exact paths of proxy routes and leaves everything
// else to the express app (which also mounts these routes, for the odd path spelling).
//
// Answers:
//  - 2xx JSON: buffered (it is small), its usage read, passed through with its status and
//    bytes; Traceparent, Server-Timing (gateway;dur = the gateway's own time) added.
//  - 2xx text/event-stream: relayed chunk by chunk as it arrives (writeHead + flush at the
//    upstream's first byte, no compression, X-Accel-Buffering: no); the usage event read as it
//    passes. Client disconnect aborts the upstream request; an upstream failure mid-stream
//    ends the stream with one `data: {"error": ...}` event and a clean end.
//  - upstream errors: see upstreamError() below.
import { accessLogger } from '../log/logger.ts';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import type { Dispatcher } from 'undici';
import type { VendorPlan } from '../descriptors/compile.ts';
import type { ProxyRoutePlan } from '../descriptors/proxy-route.ts';
import { GatewayError } from '../errors/gateway-error.ts';
import { requireScope, type AuthContext } from '../http/context.ts';
import { toGatewayError } from '../http/problem.ts';
import { continueTrace, type Trace } from '../http/traceparent.ts';
import type { TenantService } from '../tenants/service.ts';
import { mapUpstreamError, UpstreamFailure } from '../upstream/failure.ts';
import { inlineBytes, rewriteBody } from './body.ts';
import { parseJson, readJsonBody } from '../http/raw-body.ts';
import { setPath } from './json-path.ts';
import { noBilling, noLimits, type ProxyBilling, type ProxyLimits } from './ports.ts';
import { errorObjectFor, sanitiseErrorObject, sendProxyProblem, type ClientErrorObject } from './respond.ts';
import { SseTap } from './sse-tap.ts';
import type { ModelPrice, TokenUsage } from './token-prices.ts';

export interface ProxyGatewayDeps {
  tenants: TenantService;
  logger: Logger;
  billing?: ProxyBilling;
  limits?: ProxyLimits;
}

/** Upstream statuses that mean "this request was refused as it is" and keep their status. */
const CLIENT_STATUSES = new Set([400, 404, 409, 413, 415, 422]);
const MAX_JSON_ANSWER = 64 * 1024 * 1024;

export class ProxyGateway {
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
  private readonly exact = new Map<string, ProxyRoutePlan>();
  private readonly lists = new Map<string, ListCache>();

  constructor(vendors: readonly VendorPlan[], deps: ProxyGatewayDeps) {
    this.tenants = deps.tenants;
    this.logger = deps.logger;
    this.accessLog = accessLogger(deps.logger);
    this.billing = deps.billing ?? noBilling;
    this.limits = deps.limits ?? noLimits;
    const routes: ProxyRoutePlan[] = [];
    for (const v of vendors) {
      for (const r of v.routes) {
        if (r.kind !== 'sync' && r.kind !== 'stream') continue;
        routes.push(r);
        for (const path of [r.path, ...r.aliases]) {
          const key = `${r.method} ${path}`;
          const other = this.exact.get(key);
          if (other) throw new Error(`${key} is served by two routes: ${other.key} and ${r.key}`);
          this.exact.set(key, r);
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

  /** Fast path for raw node requests: true when the request was ours (it is then answered). */
  tryHandle(req: IncomingMessage, res: ServerResponse): boolean {
    const route = this.exact.get(`${req.method} ${pathOf(req.url)}`);
    if (!route) return false;
    const trace = continueTrace(req.headers.traceparent as string | undefined);
    res.setHeader('Traceparent', trace.traceparent);
    void new Exchange(this, req, res, route, trace, true).run();
    return true;
  }

  /** For a request express routed here (its middleware already traced and logs it). */
  handle(req: IncomingMessage, res: ServerResponse, route: ProxyRoutePlan, trace: Trace): Promise<void> {
    return new Exchange(this, req, res, route, trace, false).run();
  }

  listCache(route: ProxyRoutePlan): ListCache {
    return this.lists.get(route.key)!;
  }
}

type Mode = 'none' | 'buffer' | 'sse';

/** One proxied request; also the undici dispatch handler of its upstream call. */
class Exchange implements Dispatcher.DispatchHandler {
  private readonly gw: ProxyGateway;
  private readonly req: IncomingMessage;
  private readonly res: ServerResponse;
  private readonly route: ProxyRoutePlan;
  private readonly trace: Trace;
  private readonly ownLog: boolean;
  private readonly t0 = performance.now();
  private tDispatch = 0;
  private tUpHeaders = 0;
  private gatewayMs = 0;
  private auth: AuthContext | undefined;
  private body: Record<string, unknown> | undefined;
  private model: string | undefined;
  private price: ModelPrice | undefined;
  private controller: Dispatcher.DispatchController | undefined;
  private mode: Mode = 'none';
  private upStatus = 0;
  private upHeaders: IncomingHttpHeaders | undefined;
  private chunks: Buffer[] = [];
  private size = 0;
  private tap: SseTap | undefined;
  private clientGone = false;
  private corked = false;
  private done = false;
  private settle: (() => void) | undefined;
  private outcome = 'ok';
  private usage: TokenUsage | undefined;
  private charged: number | undefined;
  private dropped = 0;
  private completionId: string | undefined;

  constructor(gw: ProxyGateway, req: IncomingMessage, res: ServerResponse, route: ProxyRoutePlan, trace: Trace, ownLog: boolean) {
    this.gw = gw;
    this.req = req;
    this.res = res;
    this.route = route;
    this.trace = trace;
    this.ownLog = ownLog;
  }

  async run(): Promise<void> {
    try {
      if (this.route.list) await this.list();
      else await this.proxy();
    } catch (err) {
      this.fail(err);
    }
    if (this.ownLog) this.log();
  }

  // ---- before the upstream -------------------------------------------------------------

  private async authorise(action: 'create' | 'read'): Promise<AuthContext> {
    const auth = await this.gw.tenants.authenticate(this.req.headers.authorization);
    this.auth = auth;
    if (!this.ownLog) (this.res as unknown as { locals: Record<string, unknown> }).locals.auth = auth;
    requireScope(auth, this.route.vendor, action);
    return auth;
  }

  private async proxy(): Promise<void> {
    const route = this.route;
    if (!this.ownLog) (this.res as unknown as { locals: Record<string, unknown> }).locals.routeKey = route.key;
    this.res.once('close', this.onClientClose);
    const auth = await this.authorise('create');
    const raw = await readJsonBody(this.req, route.maxBodyBytes);
    const body = (await route.validate!(parseJson(raw))) as Record<string, unknown>;
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
    await this.dispatch(out, streaming);
  }

  /** The model scope of rate limits: `<vendor>/<model>` (async routes use `<vendor>/<route id>`). */
  private limitKey(): string | undefined {
    return this.model === undefined ? undefined : `${this.route.vendor}/${this.model}`;
  }

  private async dispatch(body: Buffer, streaming: boolean): Promise<void> {
    const up = this.route.upstream;
    const authHeaders = up.auth.headers();
    const headers: Record<string, string> = {
      ...up.headers,
      ...(authHeaders instanceof Promise ? await authHeaders : authHeaders),
      'content-type': 'application/json',
      accept: streaming ? 'text/event-stream' : 'application/json',
      traceparent: this.trace.traceparent,
    };
    const finished = new Promise<void>((resolve) => (this.settle = resolve));
    this.tDispatch = performance.now();
    up.dispatcher.dispatch(
      { origin: up.origin, path: up.path, method: this.route.method, headers, body, headersTimeout: up.timeoutMs, bodyTimeout: up.timeoutMs, idempotent: false },
      this,
    );
    await finished;
  }

  private readonly onClientClose = (): void => {
    if (this.res.writableFinished) return;
    this.clientGone = true;
    if (this.controller && !this.done) this.controller.abort(new Error('the client closed the connection'));
  };

  // ---- undici dispatch handler -------------------------------------------------------

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.clientGone) controller.abort(new Error('the client closed the connection'));
  }

  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders): void {
    this.tUpHeaders = performance.now();
    this.upStatus = statusCode;
    this.upHeaders = headers;
    const type = headers['content-type'];
    if (statusCode >= 200 && statusCode < 300 && typeof type === 'string' && type.startsWith('text/event-stream')) {
      this.mode = 'sse';
      this.tap = new SseTap(this.route.usage?.key ?? 'usage');
      const h = this.answerHeaders();
      h['content-type'] = type;
      h['cache-control'] = 'no-cache';
      h['x-accel-buffering'] = 'no';
      this.gatewayMs = this.tDispatch - this.t0 + (performance.now() - this.tUpHeaders);
      h['server-timing'] = this.serverTiming(this.tUpHeaders - this.tDispatch);
      this.cork();
      this.res.writeHead(statusCode, h);
      this.res.flushHeaders();
    } else {
      this.mode = 'buffer';
    }
    if (this.clientGone) controller.abort(new Error('the client closed the connection'));
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.mode === 'sse') {
      this.tap!.feed(chunk);
      this.cork();
      if (!this.res.write(chunk) && !controller.paused) {
        controller.pause();
        this.res.once('drain', () => controller.resume());
      }
      return;
    }
    this.size += chunk.length;
    if (this.size > MAX_JSON_ANSWER) {
      controller.abort(new UpstreamFailure(3003, 'The provider answer is too large.', 'submit'));
      return;
    }
    this.chunks.push(chunk);
  }

  /** End the client's response. */
  private endAnswer(last?: string): void {
    this.res.end(last);
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

  onResponseEnd(): void {
    if (this.mode === 'sse') {
      this.endAnswer();
      this.finish(this.usageFrom(this.tap!.usageEvent) ?? this.estimate(this.tap!.events));
      return;
    }
    this.answerBuffered().then(
      () => this.finish(undefined),
      (err) => {
        this.fail(err);
        this.finish(undefined);
      },
    );
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error): void {
    if (this.clientGone) {
      this.outcome = 'client_closed';
      this.finish(this.mode === 'sse' && this.tap!.events > 0 ? (this.usageFrom(this.tap!.usageEvent) ?? this.estimate(this.tap!.events)) : undefined);
      return;
    }
    const failure = classifyNetworkError(err);
    if (this.mode === 'sse') {
      // Headers are out: end the stream with one error event the client SDKs understand.
      this.outcome = 'upstream_dropped';
      const e = new GatewayError(failure.code, `The provider's stream broke off: ${failure.message}`);
      this.endAnswer(`data: ${JSON.stringify({ error: errorObjectFor(e) })}\n\n`);
      this.gw.logger.warn({ trace_id: this.trace.traceId, route: this.route.key, err: failure.message }, 'upstream stream broke off');
      this.finish(this.tap!.events > 0 ? (this.usageFrom(this.tap!.usageEvent) ?? this.estimate(this.tap!.events)) : undefined);
      return;
    }
    this.fail(new GatewayError(failure.code, failure.message));
    this.finish(undefined);
  }

  // ---- answers -----------------------------------------------------------------------

  private async answerBuffered(): Promise<void> {
    const text = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks, this.size);
    this.chunks = [];
    const status = this.upStatus;
    if (status < 200 || status >= 300) return this.upstreamError(status, text);
    let parsed: unknown;
    try {
      parsed = JSON.parse(text.toString('utf8'));
    } catch {
      throw new GatewayError(3003, `The provider's answer (HTTP ${status}) is not JSON.`);
    }
    const id = (parsed as { id?: unknown } | null)?.id;
    if (typeof id === 'string') this.completionId = id;
    // The completion is done upstream: it is billed even if the client left meanwhile.
    this.usage = this.usageFrom(parsed) ?? this.estimate(Math.ceil(text.length / 4));
    if (this.clientGone) return;
    const h = this.answerHeaders();
    h['content-type'] = (this.upHeaders!['content-type'] as string | undefined) ?? 'application/json';
    h['content-length'] = String(text.length);
    const now = performance.now();
    this.gatewayMs = this.tDispatch - this.t0 + (now - this.tUpHeaders);
    h['server-timing'] = this.serverTiming(this.tUpHeaders - this.tDispatch);
    this.res.writeHead(status, h).end(text);
  }

  /**
   * The upstream answered with an error. The rule, for OpenAI-compatible clients:
   *  - its own error object ({message, type, param, code}) is kept, sanitised, as the `error`
   *    member of our problem body (a gateway-made one otherwise);
   *  - the service code is the engine's one mapping (descriptor rules, then 429/5xx → 3001,
   *    504 → 3004, other 4xx → 3002, nothing usable → 3003);
   *  - a refusal of the request as it is (400, 404, 409, 413, 415, 422 with an error object,
   *    mapped to 3002) keeps the upstream's HTTP status, so clients raise BadRequest/NotFound
   *    and do not retry; everything else answers with the code's status (500).
   */
  private async upstreamError(status: number, text: Buffer): Promise<void> {
    let parsed: unknown;
    try {
      parsed = text.length ? JSON.parse(text.toString('utf8')) : undefined;
    } catch {
      parsed = undefined;
    }
    const own = this.route.errorObject ? sanitiseErrorObject(this.route.errorObject(parsed)) : undefined;
    const mapped = await mapUpstreamError(this.route.errorRules, { stage: 'submit', http_status: status, body: parsed, message: own?.message });
    const keep = own !== undefined && mapped.code === 3002 && CLIENT_STATUSES.has(status);
    // The engine's default wording names async stages; a descriptor rule's own detail is kept.
    const detail = mapped.detail.startsWith('The provider answered the submit request')
      ? `The provider answered HTTP ${status}${own ? `: ${own.message}` : '.'}`
      : mapped.detail;
    const err = new GatewayError(mapped.code, detail, keep ? { status } : {});
    this.outcome = 'upstream_error';
    this.sendProblem(err, own);
  }

  private async list(): Promise<void> {
    if (!this.ownLog) (this.res as unknown as { locals: Record<string, unknown> }).locals.routeKey = this.route.key;
    const auth = await this.authorise('read');
    await this.gw.limits.checkRequest({ tenantId: auth.tenantId, keyId: auth.keyId });
    const body = await this.gw.listCache(this.route).get(this.trace.traceparent);
    const h = this.answerHeaders();
    h['content-type'] = 'application/json';
    h['content-length'] = String(body.length);
    this.gatewayMs = performance.now() - this.t0;
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
    const e = failureToGatewayError(err, this.gw.logger);
    if (this.outcome === 'ok') this.outcome = e.code >= 3000 && e.code < 4000 ? 'upstream_error' : 'refused';
    if (this.res.headersSent) {
      this.res.destroy();
      return;
    }
    if (this.clientGone || this.res.destroyed) return;
    this.sendProblem(e);
  }

  private sendProblem(err: GatewayError, upstreamError?: ClientErrorObject): void {
    this.gatewayMs = this.tDispatch ? this.tDispatch - this.t0 + (this.tUpHeaders ? performance.now() - this.tUpHeaders : 0) : performance.now() - this.t0;
    const h = this.answerHeaders();
    h['server-timing'] = this.tUpHeaders ? this.serverTiming(this.tUpHeaders - this.tDispatch) : `gateway;dur=${this.gatewayMs.toFixed(3)}`;
    sendProxyProblem(this.res, err, pathOf(this.req.url), this.trace?.traceId, h, upstreamError);
  }

  // ---- usage and billing -------------------------------------------------------------

  private usageFrom(answer: unknown): TokenUsage | undefined {
    const u = this.route.usage;
    if (!u || answer === undefined) return undefined;
    const input = u.input(answer);
    const output = u.output(answer);
    if (typeof input !== 'number' || typeof output !== 'number') return undefined;
    const cached = u.cachedInput?.(answer);
    const id = (answer as { id?: unknown }).id;
    if (typeof id === 'string') this.completionId = id;
    return { input: count(input), output: count(output), cachedInput: typeof cached === 'number' ? count(cached) : 0, estimated: false };
  }

  /**
   * No usage reported (a stream cut short, an upstream that does not report it): input ≈ a
   * quarter of the request's text characters (inline media left out), output ≈ `outputTokens`
   * (one per relayed stream event, or a quarter of a JSON answer's bytes).
   */
  private estimate(outputTokens: number): TokenUsage {
    let chars = 0;
    const walk = (v: unknown): void => {
      if (typeof v === 'string') chars += inlineBytes(v) > 1024 ? 0 : v.length;
      else if (Array.isArray(v)) v.forEach(walk);
      else if (v !== null && typeof v === 'object') Object.values(v).forEach(walk);
    };
    walk(this.body);
    return { input: Math.ceil(chars / 4), output: outputTokens, cachedInput: 0, estimated: true };
  }

  /** The exchange is over: charge its usage exactly once, then let run() finish. */
  private finish(usage: TokenUsage | undefined): void {
    if (this.done) return;
    this.done = true;
    const u = usage ?? this.usage;
    this.usage = u;
    const resolve = this.settle;
    if (!u || !this.route.pricer || !this.price || !this.auth) {
      resolve?.();
      return;
    }
    const milli = this.route.pricer.cost(this.price, u);
    this.charged = milli;
    const ref = `${this.route.key}:${this.trace.traceparent.slice(3, 52)}`;
    const note = `${this.model} ${u.input} in (${u.cachedInput} cached) ${u.output} out${u.estimated ? ' (estimated)' : ''}${this.completionId ? ` ${this.completionId}` : ''}`;
    this.gw.billing.charge(this.auth.tenantId, ref, milli, note).then(resolve, (err: unknown) => {
      // The answer is out; the charge must not be lost silently: this line is the reconciliation record.
      this.gw.logger.error({ err, trace_id: this.trace.traceId, tenant_id: this.auth!.tenantId, ref, milli, note }, 'usage charge failed');
      resolve?.();
    });
  }

  private log(): void {
    const u = this.usage;
    const line: Record<string, unknown> = {
      trace_id: this.trace.traceId,
      method: this.req.method,
      route: this.route.key,
      path: pathOf(this.req.url),
      status: this.res.statusCode,
      latency_ms: Math.round((performance.now() - this.t0) * 1000) / 1000,
      gateway_ms: Math.round(this.gatewayMs * 1000) / 1000,
      tenant_id: this.auth?.tenantId,
      model: this.model,
      outcome: this.clientGone && this.outcome === 'ok' ? 'client_closed' : this.outcome,
    };
    if (this.mode === 'sse') {
      line.stream = true;
      line.ttfb_ms = Math.round((this.tUpHeaders - this.t0) * 1000) / 1000;
    }
    if (u) {
      line.tokens_in = u.input;
      line.tokens_cached = u.cachedInput;
      line.tokens_out = u.output;
      line.tokens_estimated = u.estimated;
      line.charged_milli = this.charged;
    }
    if (this.dropped) line.dropped_media = this.dropped;
    this.gw.accessLog.info(line, 'request');
  }
}

const pathOf = (url: string | undefined): string => {
  const u = url ?? '/';
  const q = u.indexOf('?');
  return q === -1 ? u : u.slice(0, q);
};

const count = (n: number): number => (Number.isFinite(n) && n > 0 ? Math.floor(n) : 0);

function classifyNetworkError(err: unknown): UpstreamFailure {
  if (err instanceof UpstreamFailure) return err;
  const code = (err as { code?: string }).code ?? '';
  if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT' || code === 'UND_ERR_CONNECT_TIMEOUT' || code === 'ETIMEDOUT') {
    return new UpstreamFailure(3004, 'The provider did not answer in time.', 'submit');
  }
  return new UpstreamFailure(3001, `The provider could not be reached (${code || 'connection failed'}).`, 'submit');
}

/** An upstream failure keeps its code; anything else as every route maps it (http/problem.ts). */
function failureToGatewayError(err: unknown, logger: Logger): GatewayError {
  if (err instanceof UpstreamFailure) return new GatewayError(err.code, err.message);
  return toGatewayError(err, logger);
}

/** A list route's answer (filtered, serialised), reused for cache_ms; concurrent misses share one call. */
export class ListCache {
  private readonly route: ProxyRoutePlan;
  private readonly logger: Logger;
  private body: Buffer | undefined;
  private at = 0;
  private pending: Promise<Buffer> | undefined;

  constructor(route: ProxyRoutePlan, logger: Logger) {
    this.route = route;
    this.logger = logger;
  }

  get(traceparent: string): Promise<Buffer> {
    if (this.body && performance.now() - this.at < this.route.cacheMs) return Promise.resolve(this.body);
    this.pending ??= this.fetch(traceparent).finally(() => (this.pending = undefined));
    return this.pending;
  }

  private async fetch(traceparent: string): Promise<Buffer> {
    const route = this.route;
    try {
      const up = await route.upstream.client.call({ method: 'GET', path: route.upstream.relPath, traceparent, stage: 'submit' });
      if (up.status < 200 || up.status >= 300) {
        const own = route.errorObject ? sanitiseErrorObject(route.errorObject(up.body)) : undefined;
        throw await mapUpstreamError(route.errorRules, { stage: 'submit', http_status: up.status, body: up.body, message: own?.message });
      }
      const items = route.list!.items(up.body);
      if (!Array.isArray(items)) throw new GatewayError(3003, "The provider's list answer has no list.");
      const kept = items.filter((item) => {
        const id = route.list!.id(item);
        return typeof id === 'string' && route.list!.keep(id);
      });
      const answer = structuredClone(up.body) as Record<string, unknown>;
      setPath(answer, route.list!.itemsPath, kept);
      this.body = Buffer.from(JSON.stringify(answer));
      this.at = performance.now();
      return this.body;
    } catch (err) {
      // A stale list beats an error: the upstream's list rarely changes.
      if (this.body) {
        this.logger.warn({ err, route: route.key }, 'model list refresh failed; serving the cached list');
        return this.body;
      }
      throw err;
    }
  }
}
