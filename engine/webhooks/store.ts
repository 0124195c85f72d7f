// The webhook storage port. Every method is ONE atomic operation (memory: one synchronous
// step; Redis: one Lua script or MULTI), so several gateway processes can share a store
// without read-modify-write races in the services.
import type { EventType } from '../events/types.ts';

/**
 * A registered endpoint. Shown to clients without `tenant_id` and `secret`.
 *  - `disabled_reason`: null while enabled; `disabled_by_user` (PATCH enabled=false) or
 *    `endpoint_gone` (the receiver answered 410 Gone). Re-enabling clears it.
 *  - `secret_preview`: `whsec_...` + the last 4 characters of `secret`.
 */
export interface EndpointRecord {
  id: string; // we_...
  tenant_id: string;
  url: string;
  events: EventType[];
  description: string | null;
  enabled: boolean;
  disabled_reason: DisabledReason | null;
  secret: string; // whsec_ + 32 base62
  secret_preview: string;
  created_at: string;
  updated_at: string;
}

export type DisabledReason = 'disabled_by_user' | 'endpoint_gone';

export type EndpointPatch = Partial<Pick<EndpointRecord, 'url' | 'events' | 'description' | 'enabled' | 'disabled_reason' | 'secret' | 'secret_preview'>> & {
  updated_at: string;
};

export type DeliveryStatus = 'pending' | 'succeeded' | 'failed';

/**
 * One event for one endpoint. `id` (whd_...) is the X-Service-Webhook-Id header: unique per
 * (event, endpoint), the same on every attempt and on manual re-sends. `body` is the exact
 * JSON sent, serialized once when the event fanned out.
 *  - `series`: 1 for the automatic attempts, +1 for each manual re-send (each series has up
 *    to 1 + retry_schedule_ms.length attempts, numbered from 1).
 *  - `attempt_count`: attempts made, all series together.
 *  - `failure_reason`: why the delivery ended `failed` (null otherwise): the last attempt's
 *    HTTP status or network error and the attempt count ("HTTP 500 after 6 attempts"), a 410
 *    that disabled the endpoint, or an endpoint deleted or disabled meanwhile.
 */
export interface DeliveryRecord {
  id: string;
  tenant_id: string;
  endpoint_id: string;
  event_id: string;
  event_type: EventType;
  test: boolean;
  truncated: boolean;
  body: string;
  status: DeliveryStatus;
  series: number;
  attempt_count: number;
  last_status_code: number | null;
  last_error: string | null;
  next_attempt_at: string | null;
  failure_reason: string | null;
  created_at: string;
  updated_at: string;
}

/** One HTTP attempt, as the delivery log shows it. */
export interface AttemptRecord {
  delivery_id: string;
  series: number;
  attempt: number;
  at: string;
  status_code: number | null;
  latency_ms: number;
  error: string | null;
  next_attempt_at: string | null;
}

/** What an attempt's outcome does to its delivery (applied only if the series still matches). */
export interface AttemptOutcome {
  status: DeliveryStatus;
  next_attempt_at: string | null;
  updated_at: string;
  /** Set when the outcome is `failed`: the delivery's failure_reason. */
  failure_reason?: string;
}

export interface Page<T> {
  data: T[];
  has_more: boolean;
}

export interface PageRequest {
  limit: number;
  /** Id of the last item of the previous page (newest first). */
  starting_after?: string;
}

/** Per endpoint; the ledger always balances: created = pending + succeeded + failed + purged. */
export interface DeliveryStats {
  /** Deliveries ever created for the endpoint (a counter, independent of the records). */
  created: number;
  pending: number;
  succeeded: number;
  failed: number;
  /** Removed by the retention purge (a counter). */
  purged: number;
}

export interface WebhookStore {
  // Endpoints
  /** Insert unless the tenant already has `max` endpoints; false when at the limit. */
  createEndpointIfUnderLimit(record: EndpointRecord, max: number): Promise<boolean>;
  getEndpoint(tenantId: string, id: string): Promise<EndpointRecord | null>;
  listEndpoints(tenantId: string): Promise<EndpointRecord[]>;
  /** Apply the patch to the tenant's endpoint; null when there is none. */
  updateEndpoint(tenantId: string, id: string, patch: EndpointPatch): Promise<EndpointRecord | null>;
  deleteEndpoint(tenantId: string, id: string): Promise<boolean>;

  // Deliveries
  /** Insert, unless (event_id, endpoint_id) already has a delivery: then return that one. */
  createDelivery(record: DeliveryRecord): Promise<{ delivery: DeliveryRecord; created: boolean }>;
  getDelivery(id: string): Promise<DeliveryRecord | null>;
  /** Append the attempt and apply its outcome, if the delivery is still `pending` in `attempt.series`. */
  recordAttempt(attempt: AttemptRecord, outcome: AttemptOutcome): Promise<DeliveryRecord | null>;
  /** Mark a pending delivery failed without an attempt (endpoint deleted/disabled meanwhile). */
  failDelivery(id: string, series: number, reason: string, updatedAt: string): Promise<DeliveryRecord | null>;
  /** Start a new series on a delivery that is not pending; null when it is pending or unknown. */
  beginResend(tenantId: string, id: string, updatedAt: string): Promise<DeliveryRecord | null>;
  listDeliveriesByEndpoint(tenantId: string, endpointId: string, page: PageRequest): Promise<Page<DeliveryRecord>>;
  listDeliveriesByEvent(tenantId: string, eventId: string, page: PageRequest): Promise<Page<DeliveryRecord>>;
  listAttempts(deliveryId: string): Promise<AttemptRecord[]>;
  deliveryStats(endpointId: string): Promise<DeliveryStats>;
  /** Delete deliveries created before `cutoff` (ms) with their attempts; returns how many. */
  purgeDeliveriesBefore(cutoffMs: number): Promise<number>;

  // Rate limit
  /**
   * Reserve the earliest send time >= `nowMs` for the endpoint such that no window of
   * `windowMs` holds more than `max` reservations and consecutive reservations are at least
   * `minGapMs` apart; reservations are handed out in order. `lateMs`: how much later than its
   * window margin this send may start (a send that missed an earlier slot, see dispatcher.ts);
   * the reservations after it keep the window from its latest start (but the next slot is still
   * `minGapMs` after its slot).
   */
  reserveSendSlot(endpointId: string, nowMs: number, windowMs: number, max: number, minGapMs: number, lateMs?: number): Promise<number>;
}
