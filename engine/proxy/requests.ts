// What a tenant asks of the sync and stream proxy routes (chat completions) and model lists,
// after the HTTP edge has matched the route: the counterpart of engine/tasks/requests.ts. The
// HTTP side (engine/http/proxy-handler.ts) only moves bytes: it is this call's stream sink, and
// writes the answer's head, problems and the access line.
//   admit    caller and scope (engine/tenants/admission.ts)
//   prepare  body validation → model and its price (2003 when not offered) → rates, daily spend
//            and funds in one round trip → the body rewrite (stream usage option, dropped media)
//   send     the exchange (./exchange.ts) on the vendor's pool: UpstreamPool.call fails over to
//            the next member while nothing has reached the client
//   usage    what the answer or the stream reported (else an estimate)
//   hold     with the funds check: the request's largest possible charge, held before the
//            upstream (docs/decisions.md, "No answer without its charge"); a hold the store
//            cannot write is a fast 503, the provider is not called
//   charge   the usage, settled once against the hold (or the hold released); a settlement the
//            store refuses is made again until written (engine/billing/request-charges.ts)
// Route plans are compiled at start-up: the hot path does no descriptor work.
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import type { VendorPlan } from '../descriptors/compile.ts';
import type { ProxyRoutePlan } from '../descriptors/proxy-route.ts';
import type { ModelPrice, TokenUsage } from '../descriptors/token-prices.ts';
import { GatewayError } from '../errors/gateway-error.ts';
import { statusClass, upstreamDuration, upstreamErrors, upstreamRequests, upstreamTtfb } from '../metrics/metrics.ts';
import type { Admission, Seen } from '../tenants/admission.ts';
import type { AuthContext } from '../tenants/auth-context.ts';
import { traced, tracing } from '../tracing/tracing.ts';
import { failureReason, statusReason, type FailoverAttempt, type FailureReason, type MemberTry, type PoolMember } from '../upstream/pool.ts';
import type { Milli } from '../util/money.ts';
import { rewriteBody } from './body.ts';
import { UpstreamExchange, type ExchangeEnd, type StreamSink } from './exchange.ts';
import { ListCache } from './model-list.ts';
import type { ProxyBilling } from './ports.ts';
import type { SseTap } from './sse-tap.ts';
import { holdFor } from './hold.ts';
import { chargeRef, completionIdOf, estimatedUsage, reportedUsage, usageCharge } from './usage.ts';

/** The most priced models per route whose strings are kept (ProxyService.stringsOf). */
const MODEL_STRINGS = 1000;

/** A priced model's strings on one route. */
export interface ModelStrings {
  /** The rate limits' model scope: `<vendor>/<model>`. */
  readonly scope: string;
  /** The note of the hold written before the upstream call. */
  readonly holdNote: string;
}

export interface ProxyServiceDeps {
  admission: Admission;
  billing: ProxyBilling;
  logger: Logger;
}

export class ProxyService {
  readonly routes: readonly ProxyRoutePlan[];
  readonly admission: Admission;
  readonly billing: ProxyBilling;
  readonly logger: Logger;
  private readonly lists = new Map<string, ListCache>();
  /**
   * Each priced model's strings, per route, built once: the rate limits' model scope
   * (`<vendor>/<model>`: a new string per chat was flattened and hashed again by each lookup)
   * and the hold's note (kept with its ledger line, and flattened again when the line is
   * archived). A prefix or default price prices any model name a client sends, so at most
   * MODEL_STRINGS per route are kept; past them a request builds its own, as before.
   */
  private readonly modelStrings = new WeakMap<ProxyRoutePlan, Map<string, ModelStrings>>();

  constructor(vendors: readonly VendorPlan[], deps: ProxyServiceDeps) {
    this.admission = deps.admission;
    this.billing = deps.billing;
    this.logger = deps.logger;
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

  /** The model scope and hold note of a priced `model` on `route` (kept for the first MODEL_STRINGS models of a route). */
  stringsOf(route: ProxyRoutePlan, model: string): ModelStrings {
    let known = this.modelStrings.get(route);
    if (!known) this.modelStrings.set(route, (known = new Map()));
    let strings = known.get(model);
    if (strings) return strings;
    strings = { scope: `${route.vendor}/${model}`, holdNote: `${model}: held before the upstream call` };
    if (known.size < MODEL_STRINGS) known.set(model, strings);
    return strings;
  }

  /** Every (method, client path) served, aliases included. */
  paths(): { method: 'GET' | 'POST'; path: string; route: ProxyRoutePlan }[] {
    return this.routes.flatMap((r) => [r.path, ...r.aliases].map((path) => ({ method: r.method, path, route: r })));
  }

  /** A model list (GET): the caller with a read scope, its request rate, then the route's cached list. */
  async list(route: ProxyRoutePlan, authorization: string | undefined, seen: Seen, traceparent: string): Promise<Buffer> {
    await this.admission.admit(authorization, route.vendor, 'read', seen);
    return this.lists.get(route.key)!.get(traceparent);
  }
}

/** The request's trace: its id (logs) and the traceparent passed upstream (and into the charge's ref). */
export interface CallTrace {
  readonly traceId: string;
  readonly traceparent: string;
}

/** The client's request as the HTTP edge has it: who sent it (admission), and its body, read under the route's body policy. */
export interface ClientRequest extends Seen {
  readBody(): Promise<{ raw?: Buffer; json?: unknown }>;
}

/** One proxied completion, from admission to its charge; the HTTP side asks it at each step. */
export class ProxyCall implements FailoverAttempt<ExchangeEnd> {
  readonly route: ProxyRoutePlan;
  readonly stage = 'proxy';
  /** The model the body names (the access line shows it). */
  model: string | undefined;
  /** Inline media left out of the forwarded body (X-Gateway-Dropped-Media). */
  dropped = 0;
  /** What the completion used, once known, and what it was charged (milli-credits). */
  usage: TokenUsage | undefined;
  charged: Milli | undefined;
  /** The exchange under way (the last member's, after a failover). */
  exchange: UpstreamExchange | undefined;
  private readonly service: ProxyService;
  private readonly trace: CallTrace;
  private auth: AuthContext | undefined;
  private body: Record<string, unknown> | undefined;
  private price: ModelPrice | undefined;
  /** A priced model's scope and hold note (ProxyService.stringsOf). */
  private strings: ModelStrings | undefined;
  private completionId: string | undefined;
  /** The ref of the hold written before the upstream call (priced routes), until it is closed. */
  private holdRef: string | undefined;
  /** What prepare() made of the request: the body to send, and whether the answer streams. */
  private out: Buffer | undefined;
  streaming = false;
  /** Where the answer goes (send()). */
  private sink: StreamSink | undefined;

  constructor(service: ProxyService, route: ProxyRoutePlan, trace: CallTrace) {
    this.service = service;
    this.route = route;
    this.trace = trace;
  }

  /**
   * Everything before the upstream (see the header), from the caller (a create scope for the
   * route's vendor) on: the body to send (kept for send()), and whether the answer streams.
   */
  async prepare(authorization: string | undefined, client: ClientRequest): Promise<void> {
    const route = this.route;
    this.auth = await this.service.admission.caller(authorization, route.vendor, 'create', client);
    const { raw = Buffer.alloc(0), json } = await client.readBody();
    const body = (await (tracing ? traced('validation', () => route.validate!(json)) : route.validate!(json))) as Record<string, unknown>;
    this.body = body;
    const model = route.model?.(body);
    this.model = typeof model === 'string' ? model : undefined;
    if (route.pricer) {
      this.price = this.model === undefined ? undefined : route.pricer.priceOf(this.model);
      if (!this.price) {
        throw new GatewayError('invalidParameterValue', `The model ${JSON.stringify(this.model)} is not offered here; GET /v1/models lists the models you can use.`, {
          errors: [{ pointer: '/model', detail: 'is not an offered model', code: 2003 }],
        });
      }
      this.strings = this.service.stringsOf(route, this.model!);
    }
    // The model scope of rate limits: `<vendor>/<model>` (async routes use `<vendor>/<route id>`).
    // A priced request's funds check is its hold (see the header).
    const scope = this.strings?.scope ?? (this.model === undefined ? undefined : `${route.vendor}/${this.model}`);
    await this.service.admission.limits(this.auth!, { model: scope, hold: route.pricer ? () => this.hold(body) : undefined });
    const streaming = (this.streaming = route.stream !== undefined && route.stream.flag(body) === true);
    const needUsage = streaming && route.stream!.usageOption !== undefined && route.stream!.usageOptionValue!(body) !== true;
    const needDrop = route.dropMedia !== undefined && raw.length > route.dropMedia.minBodyBytes;
    if (!needUsage && !needDrop) {
      this.out = raw;
      return;
    }
    const rw = rewriteBody(raw, body, { setTrue: needUsage ? route.stream!.usageOption : undefined, drop: needDrop ? route.dropMedia : undefined });
    this.dropped = rw.dropped;
    this.out = rw.body;
  }

  /**
   * The exchange on the vendor's pool, of the body prepare() made. A member that fails before
   * anything reached the client (no connection, no answer head in time, a 5xx or 429 answer:
   * buffered, never relayed) hands the request to the next member; once a stream's head is out,
   * or the client left (the sink is `committed()`), there is no going back, and a stream that
   * breaks off is the client's to see. This call is the pool's FailoverAttempt (its methods below).
   */
  send(sink: StreamSink): Promise<ExchangeEnd> {
    this.sink = sink;
    return this.route.upstream.pool.call(this);
  }

  /** One try at pool member `m` (UpstreamPool.call). */
  async attempt(m: PoolMember): Promise<MemberTry<ExchangeEnd>> {
    const up = this.route.upstream;
    const ex = new UpstreamExchange(this.route, this.sink!, up.targets.get(m.id));
    this.exchange = ex;
    const end = await ex.send(this.out!, this.streaming, this.trace.traceparent);
    const reason = end.kind === 'answer' ? statusReason(end.status) : end.kind === 'failed' && !end.tap && ex.upstreamStatus === 0 ? failureReason(end.failure) : undefined;
    const recorded = up.pool.record(m, 'proxy', reason ?? (end.kind === 'answer' || end.kind === 'stream' ? 'usable' : 'neutral'));
    if (recorded) await recorded;
    return { outcome: end, reason };
  }

  final(): boolean {
    return this.sink!.committed();
  }

  failedOver(m: PoolMember, reason: FailureReason): void {
    this.service.logger.warn({ trace_id: this.trace.traceId, route: this.route.key, member: m.id, reason }, 'proxied call failed over to the next pool member');
  }

  /** A 2xx JSON answer's usage (estimated from its size when it reports none); 3003 when it is not JSON. */
  answerUsage(status: number, text: Buffer): TokenUsage {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text.toString('utf8'));
    } catch {
      throw new GatewayError('upstreamResponseError', `The provider's answer (HTTP ${status}) is not JSON.`);
    }
    this.completionId = completionIdOf(parsed);
    this.usage = this.reported(parsed) ?? estimatedUsage(this.body, Math.ceil(text.length / 4));
    return this.usage;
  }

  /** A stream's usage: its usage event's, else estimated from the events relayed. */
  streamUsage(tap: SseTap): TokenUsage {
    return this.reported(tap.usageEvent) ?? estimatedUsage(this.body, tap.events);
  }

  private reported(answer: unknown): TokenUsage | undefined {
    const usage = reportedUsage(this.route, answer);
    if (usage) this.completionId = completionIdOf(answer) ?? this.completionId;
    return usage;
  }

  /**
   * Before the upstream: hold the request's largest possible charge (./hold.ts). A hold the store
   * cannot write refuses the request with 503 / 4003, and the provider is not called.
   */
  private hold(body: Record<string, unknown>): Promise<void> {
    const ref = chargeRef(this.route, this.trace.traceparent);
    return this.service.billing.reserve(this.auth!.tenantId, ref, holdFor(this.route, this.price!, body), this.strings!.holdNote).then(() => {
      this.holdRef = ref;
    });
  }

  /**
   * The request is over (answered, refused or failed): settle its usage against its hold, or
   * release the hold when nothing billable was served. Exactly once: the HTTP side calls this
   * once. A write the store refuses is not lost (ProxyBilling.close makes it again).
   */
  // Neither this nor hold() is async: one promise fewer each, on every priced request.
  charge(): Promise<void> | undefined {
    const ref = this.holdRef;
    if (!ref) return;
    this.holdRef = undefined;
    const tenantId = this.auth!.tenantId;
    if (!this.usage) return this.service.billing.close(tenantId, ref, undefined, `${this.model}: nothing served`);
    const { milli, note } = usageCharge(this.route, this.price!, this.model, this.usage, this.completionId);
    this.charged = milli;
    return this.service.billing.close(tenantId, ref, milli, note);
  }

  /** The upstream metrics of the call, once it is over (`code`: the problem answered, if any). */
  observe(code: number | undefined, streamed: boolean): void {
    const ex = this.exchange;
    if (!ex?.tDispatch) return;
    const vendor = this.route.vendor;
    upstreamRequests.inc({ vendor, stage: 'proxy', status_class: ex.upstreamStatus ? statusClass(ex.upstreamStatus) : 'error' });
    upstreamDuration.observe({ vendor, stage: 'proxy' }, (performance.now() - ex.tDispatch) / 1000);
    if (streamed) upstreamTtfb.observe({ vendor }, (ex.tHeaders - ex.tDispatch) / 1000);
    if (code !== undefined && code >= 3000 && code < 4000) upstreamErrors.inc({ vendor, stage: 'proxy', code: String(code) });
  }
}
