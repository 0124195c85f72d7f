// The webhook dispatcher: turns bus events into durable deliveries and drives their attempts.
//
//   event ──fanOut──> one delivery per enabled endpoint of the tenant subscribed to the type
//                     (body serialized once, see payload.ts) ──> job `webhook.attempt`
//   attempt job ──> endpoint still there and enabled? ──> send pool started? (waited for)
//               ──> rate-limit slot free? (else the job is re-scheduled at the reserved slot:
//                   delayed, never dropped; bursts are paced at twice the average rate, see
//                   config.ts `scaled`)
//               ──> started later than its slot allows, here or in the pool's worker thread?
//                   (then nothing is sent and another slot is reserved, see runAttempt)
//               ──> sign with a fresh timestamp, POST, classify
//               ──> record the attempt; 2xx → succeeded; 410 → endpoint disabled, failed;
//                   otherwise retry after retry_schedule_ms[n] (scaled) or, after the last
//                   one, failed.
//
// Every timer is a JobScheduler job (BullMQ in redis mode), every state change one atomic
// store operation, so attempts survive a restart and several workers can share the work.
// The rate limit counts HTTP attempts (retries included): it protects the receiver.
import type { EventBus, GatewayEvent } from '../events/bus.ts';
import type { JobScheduler } from '../jobs/scheduler.ts';
import { isoNow, type Clock } from '../util/clock.ts';
import { prefixedId } from '../util/ids.ts';
import { GatewayError } from '../errors/gateway-error.ts';
import { maxAttempts, scaled, type WebhookConfig } from './config.ts';
import { serializeEvent } from './payload.ts';
import { buildTestEvent } from './test-event.ts';
import type { SendPool } from './pool.ts';
import type { SendResult } from './sender.ts';
import type { AttemptOutcome, DeliveryRecord, EndpointRecord, WebhookStore } from './store.ts';
import { ATTR_ERROR_TYPE, ATTR_HTTP_REQUEST_METHOD, ATTR_HTTP_RESPONSE_STATUS_CODE, ATTR_SERVER_ADDRESS, ATTR_URL_FULL } from '../tracing/attributes.ts';
import { activeSpan, SpanKind, SpanStatusCode, startSpan, traceparentOf, tracing, type Span } from '../tracing/tracing.ts';
import { webhookAttempts, webhookEndpointsDisabled, webhookFailures, webhookLatency, webhookSlotsMissed } from '../metrics/metrics.ts';

export const ATTEMPT_QUEUE = 'webhook.attempt';
export const PURGE_QUEUE = 'webhook.purge';
const DAY_MS = 86_400_000;

/** The subset of a pino logger the dispatcher uses. */
export interface WebhookLogger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

const silent: WebhookLogger = { info() {}, warn() {}, error() {} };

export interface DispatcherOptions {
  store: WebhookStore;
  scheduler: JobScheduler;
  clock: Clock;
  /** Resolved with resolveWebhookConfig(). */
  config: WebhookConfig;
  pool: SendPool;
  logger?: WebhookLogger;
}

interface AttemptJob {
  delivery_id: string;
  series: number;
  attempt: number;
  /** Set once a rate-limit slot is reserved for this attempt: send without asking again. */
  slot_at?: number;
  /** How much later than the window's margin this attempt may start after its slot (ms, 0 when absent). */
  late_ms?: number;
  /** Slots this attempt has missed (its job id names them). */
  misses?: number;
  /** Traced: the trace the attempts join (the event's, e.g. its task's creating request). */
  traceparent?: string;
}

export class WebhookDispatcher {
  private readonly store: WebhookStore;
  private readonly scheduler: JobScheduler;
  private readonly clock: Clock;
  private readonly config: WebhookConfig;
  private readonly pool: SendPool;
  private readonly log: WebhookLogger;
  private readonly timing: ReturnType<typeof scaled>;

  constructor(opts: DispatcherOptions) {
    this.store = opts.store;
    this.scheduler = opts.scheduler;
    this.clock = opts.clock;
    this.config = opts.config;
    this.pool = opts.pool;
    this.log = opts.logger ?? silent;
    this.timing = scaled(opts.config);
    this.scheduler.handle(ATTEMPT_QUEUE, (payload) => this.runAttempt(payload as unknown as AttemptJob));
    this.scheduler.handle(PURGE_QUEUE, () => this.runPurgeJob());
  }

  /** Subscribe to every event of the bus. */
  attach(bus: EventBus): void {
    bus.subscribe(async (event) => {
      await this.fanOut(event);
    });
  }

  /** Create (idempotently) and schedule one delivery per subscribed, enabled endpoint. */
  async fanOut(event: GatewayEvent): Promise<DeliveryRecord[]> {
    const endpoints = (await this.store.listEndpoints(event.tenant_id)).filter(
      (e) => e.enabled && e.events.includes(event.type),
    );
    if (endpoints.length === 0) return [];
    const serialized = serializeEvent(event, this.config.max_payload_bytes);
    return Promise.all(endpoints.map((e) => this.enqueue(event, e, serialized.body, serialized.truncated, false)));
  }

  /** Deliver a synthetic `task.succeeded` (evt_test_...) to this one endpoint. */
  async sendTestEvent(endpoint: EndpointRecord): Promise<{ event: GatewayEvent; delivery: DeliveryRecord }> {
    if (!endpoint.enabled) throw disabledConflict(endpoint);
    const event = buildTestEvent(endpoint.tenant_id, this.clock);
    const serialized = serializeEvent(event, this.config.max_payload_bytes);
    const delivery = await this.enqueue(event, endpoint, serialized.body, serialized.truncated, true);
    return { event, delivery };
  }

  /** Start a new attempt series (same delivery id, same body) for a finished delivery. */
  async resend(tenantId: string, deliveryId: string): Promise<DeliveryRecord> {
    const current = await this.store.getDelivery(deliveryId);
    if (!current || current.tenant_id !== tenantId) throw new GatewayError('resourceNotFound', `No webhook delivery ${deliveryId}.`);
    const endpoint = await this.store.getEndpoint(tenantId, current.endpoint_id);
    if (!endpoint) throw conflict(`The endpoint ${current.endpoint_id} of this delivery was deleted.`);
    if (!endpoint.enabled) throw disabledConflict(endpoint);
    const started = await this.store.beginResend(tenantId, deliveryId, isoNow(this.clock));
    if (!started) throw conflict('This delivery is still pending; it can be re-sent once it has succeeded or failed.');
    await this.scheduleAttempt(withTrace({ delivery_id: started.id, series: started.series, attempt: 1 }, undefined), 0);
    return started;
  }

  /** Remove deliveries (and their attempts) older than the retention period. */
  async purgeExpired(): Promise<number> {
    const cutoff = this.clock.now() - this.config.retention_days * DAY_MS;
    const removed = await this.store.purgeDeliveriesBefore(cutoff);
    if (removed > 0) this.log.info({ removed, cutoff: new Date(cutoff).toISOString() }, 'webhook deliveries purged');
    return removed;
  }

  /**
   * Run purgeExpired every `purge_interval_ms` (as a scheduler job) from now on. The job id
   * names the interval it runs in, so several processes (or calls) share one chain.
   */
  async startPurgeSchedule(): Promise<void> {
    const interval = this.config.purge_interval_ms;
    const next = Math.floor(this.clock.now() / interval) + 1;
    await this.scheduler.schedule(PURGE_QUEUE, `purge.${next}`, {}, next * interval - this.clock.now());
  }

  // ---- internals ----

  private async enqueue(event: GatewayEvent, endpoint: EndpointRecord, body: string, truncated: boolean, test: boolean): Promise<DeliveryRecord> {
    const now = isoNow(this.clock);
    const { delivery, created } = await this.store.createDelivery({
      id: prefixedId('whd_'),
      tenant_id: event.tenant_id,
      endpoint_id: endpoint.id,
      event_id: event.id,
      event_type: event.type,
      test,
      truncated,
      body,
      status: 'pending',
      series: 1,
      attempt_count: 0,
      last_status_code: null,
      last_error: null,
      next_attempt_at: now,
      failure_reason: null,
      created_at: now,
      updated_at: now,
    });
    if (created) await this.scheduleAttempt(withTrace({ delivery_id: delivery.id, series: 1, attempt: 1 }, event.traceparent), 0);
    else if (delivery.status === 'pending') {
      // An event published again (after a crash) maps onto the same delivery. Its next attempt
      // may have been lost with the process that created it: schedule it again under the job
      // id it would have had, which is a no-op while that job is still waiting or running.
      await this.scheduleAttempt(withTrace({ delivery_id: delivery.id, series: delivery.series, attempt: delivery.attempt_count + 1 }, event.traceparent), 0);
    }
    return delivery;
  }

  private scheduleAttempt(job: AttemptJob, delayMs: number): Promise<void> {
    // No ':' in job ids: BullMQ reserves it.
    const id = `${job.delivery_id}.${job.series}.${job.attempt}${job.misses ? `.m${job.misses}` : ''}${job.slot_at === undefined ? '' : '.slot'}`;
    return this.scheduler.schedule(ATTEMPT_QUEUE, id, { ...job }, delayMs);
  }

  private async runAttempt(job: AttemptJob): Promise<void> {
    const delivery = await this.store.getDelivery(job.delivery_id);
    // Purged, finished, or superseded by a manual re-send: this job is stale.
    if (!delivery || delivery.status !== 'pending' || delivery.series !== job.series) return;

    const endpoint = await this.store.getEndpoint(delivery.tenant_id, delivery.endpoint_id);
    if (!endpoint || !endpoint.enabled) {
      const reason = endpoint ? `endpoint disabled (${endpoint.disabled_reason ?? 'disabled'})` : 'endpoint deleted';
      await this.store.failDelivery(delivery.id, job.series, reason, isoNow(this.clock));
      return;
    }

    // The slot is reserved only once the pool can start a send at once: a fresh process's
    // threads take 100-300 ms to start, and that wait counted as lateness made its first send
    // miss its slot and go out after the events behind it.
    await this.pool.ready();
    const late = job.late_ms ?? 0;
    let slot = job.slot_at;
    if (slot === undefined) {
      const now = this.clock.now();
      const { rateWindowMs, rateMinGapMs } = this.timing;
      slot = await this.store.reserveSendSlot(endpoint.id, now, rateWindowMs, this.config.rate_limit_per_minute, rateMinGapMs, late);
      if (slot > now) return this.scheduleAttempt({ ...job, slot_at: slot }, slot - now);
    }

    // The window counts each reservation as starting at most the margin (+ late) after its slot.
    // A send that starts later (a stalled event loop or a backed-up pool fires the timers of one
    // window together with the next window's) would put more than the limit in one window at
    // the receiver, so it is not made: the attempt reserves another slot. A second miss means the
    // machine stays this busy: from then on the attempt is allowed the lateness it has shown (the
    // reservations after it allow for it too), so its delivery still goes out. One stall (a burst
    // of events taking the event loop) costs only the slots missed in it.
    const notAfter = slot + this.config.rate_limit_margin_ms + late;
    // Checked here first (the scheduler's timer fired late): such a send is neither traced nor
    // handed to the pool. The worker checks again where the send starts (the pool's queue).
    const lateBy = this.clock.now() - notAfter;
    if (lateBy > 0) return this.missedSlot(job, late, lateBy);
    // Traced: the attempt is a CLIENT span of the delivery's trace, and the receiver gets its traceparent.
    const span = tracing ? attemptSpan(endpoint, delivery, job) : undefined;
    const result = await this.send(endpoint, delivery, span && traceparentOf(span), notAfter);
    // A send the worker did not make (it waited in a backed-up pool past its slot) is no attempt:
    // its span is left unended, so never exported (the SDK keeps no list of open spans).
    if (result.missed_by_ms !== undefined) return this.missedSlot(job, late, result.missed_by_ms);
    if (span) endAttemptSpan(span, result);
    await this.settle(job, endpoint, delivery, result);
  }

  /** Plan a send not made again: a second miss allows the lateness shown (see runAttempt). */
  private missedSlot(job: AttemptJob, late: number, missedByMs: number): Promise<void> {
    webhookSlotsMissed.inc();
    const misses = (job.misses ?? 0) + 1;
    return this.scheduleAttempt({ ...job, slot_at: undefined, late_ms: misses > 1 ? late + missedByMs : 0, misses }, 0);
  }

  private async send(endpoint: EndpointRecord, delivery: DeliveryRecord, traceparent: string | undefined, notAfter: number): Promise<SendResult> {
    const queuedAt = this.clock.now();
    try {
      return await this.pool.run({
        url: endpoint.url,
        secret: endpoint.secret,
        deliveryId: delivery.id,
        body: delivery.body,
        clockOffsetMs: queuedAt - Date.now(),
        timeoutMs: this.timing.timeoutMs,
        traceparent,
        notAfter,
      });
    } catch (err) {
      // The worker itself failed (not the receiver): still an attempt, and it will be retried.
      this.log.error({ err, delivery_id: delivery.id }, 'webhook worker failed');
      return { ok: false, started_at: queuedAt, status_code: null, latency_ms: 0, error: 'internal: delivery worker failed' };
    }
  }

  private async settle(job: AttemptJob, endpoint: EndpointRecord, delivery: DeliveryRecord, result: SendResult): Promise<void> {
    const now = this.clock.now();
    let outcome: AttemptOutcome;
    let error = result.error;
    let retryDelay: number | null = null;

    if (result.ok) {
      outcome = { status: 'succeeded', next_attempt_at: null, updated_at: isoNow(this.clock) };
    } else if (result.status_code === 410) {
      // 410 Gone: the receiver says this URL is retired. Stop here and stop the endpoint.
      error = 'HTTP 410 Gone: endpoint disabled (endpoint_gone), no further attempts';
      await this.store.updateEndpoint(endpoint.tenant_id, endpoint.id, {
        enabled: false,
        disabled_reason: 'endpoint_gone',
        updated_at: isoNow(this.clock),
      });
      this.log.warn({ endpoint_id: endpoint.id, delivery_id: delivery.id, url: endpoint.url }, 'webhook endpoint answered 410 Gone; endpoint disabled');
      outcome = { status: 'failed', next_attempt_at: null, updated_at: isoNow(this.clock), failure_reason: 'the endpoint answered HTTP 410 Gone and was disabled (endpoint_gone)' };
    } else if (job.attempt < maxAttempts(this.config)) {
      retryDelay = this.timing.retryDelaysMs[job.attempt - 1]!;
      outcome = { status: 'pending', next_attempt_at: new Date(now + retryDelay).toISOString(), updated_at: isoNow(this.clock) };
    } else {
      // The log's reader sees why at once, without opening the attempts: the last answer or network error.
      const attempts = `after ${job.attempt} attempt${job.attempt === 1 ? '' : 's'}`;
      outcome = { status: 'failed', next_attempt_at: null, updated_at: isoNow(this.clock), failure_reason: `${error ?? 'no usable answer'} ${attempts}` };
    }

    const recorded = await this.store.recordAttempt(
      {
        delivery_id: delivery.id,
        series: job.series,
        attempt: job.attempt,
        at: new Date(result.started_at).toISOString(),
        status_code: result.status_code,
        latency_ms: result.latency_ms,
        error,
        next_attempt_at: outcome.next_attempt_at,
      },
      outcome,
    );
    if (!recorded) return; // purged meanwhile
    webhookAttempts.inc({ outcome: result.ok ? 'delivered' : result.status_code !== null ? 'http_error' : 'network_error' });
    if (result.ok) webhookLatency.observe(Math.max(0, now - Date.parse(delivery.created_at)) / 1000);
    else if (result.status_code === 410) webhookEndpointsDisabled.inc();
    else if (outcome.status === 'failed') webhookFailures.inc();
    if (outcome.status === 'failed') {
      this.log.warn({ delivery_id: delivery.id, endpoint_id: endpoint.id, attempts: job.attempt, error }, 'webhook delivery failed');
    }
    if (retryDelay !== null) {
      await this.scheduleAttempt(withTrace({ delivery_id: delivery.id, series: job.series, attempt: job.attempt + 1 }, job.traceparent), retryDelay);
    }
  }

  private async runPurgeJob(): Promise<void> {
    try {
      await this.purgeExpired();
    } finally {
      await this.startPurgeSchedule();
    }
  }
}

/**
 * Traced: the job carries the trace its attempts join: `traceparent` (an event's), else the
 * span this runs in (a test event or a re-send is part of the request that asked for it).
 */
function withTrace(job: AttemptJob, traceparent: string | undefined): AttemptJob {
  if (!tracing) return job;
  const within = activeSpan();
  const tp = traceparent ?? (within && traceparentOf(within));
  if (tp) job.traceparent = tp;
  return job;
}

function attemptSpan(endpoint: EndpointRecord, delivery: DeliveryRecord, job: AttemptJob): Span {
  const url = new URL(endpoint.url);
  return startSpan('webhook deliver', SpanKind.CLIENT, {
    [ATTR_HTTP_REQUEST_METHOD]: 'POST',
    // Without the query: a receiver's URL may carry a token there.
    [ATTR_URL_FULL]: `${url.origin}${url.pathname}`,
    [ATTR_SERVER_ADDRESS]: url.hostname,
    'gateway.webhook.delivery_id': delivery.id,
    'gateway.webhook.event_type': delivery.event_type,
    'gateway.webhook.attempt': job.attempt,
    'gateway.webhook.series': job.series,
  }, job.traceparent);
}

function endAttemptSpan(span: Span, result: SendResult): void {
  if (result.status_code !== null) span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, result.status_code);
  if (!result.ok) {
    span.setAttribute(ATTR_ERROR_TYPE, result.status_code === null ? 'network' : String(result.status_code));
    span.setStatus({ code: SpanStatusCode.ERROR, message: result.error ?? undefined });
  }
  span.end();
}

function conflict(detail: string): GatewayError {
  return new GatewayError('conflict', detail);
}

function disabledConflict(endpoint: EndpointRecord): GatewayError {
  return conflict(`The endpoint ${endpoint.id} is disabled (${endpoint.disabled_reason ?? 'disabled'}); enable it first.`);
}
