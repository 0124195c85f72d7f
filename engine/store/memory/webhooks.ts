// In-process adapter of the webhook store port. Each method runs synchronously to completion
// inside one call, which is what makes it atomic here; records are copied in and out so
// callers can never mutate stored state by accident.
import type {
  AttemptOutcome,
  AttemptRecord,
  DeliveryRecord,
  DeliveryStats,
  EndpointPatch,
  EndpointRecord,
  Page,
  PageRequest,
  WebhookStore,
} from '../../webhooks/store.ts';

const copy = <T>(x: T): T => structuredClone(x);

export class MemoryWebhookStore implements WebhookStore {
  private readonly endpoints = new Map<string, EndpointRecord>();
  private readonly endpointsByTenant = new Map<string, string[]>();
  private readonly deliveries = new Map<string, DeliveryRecord>();
  private readonly deliveriesByEndpoint = new Map<string, string[]>();
  private readonly deliveriesByEvent = new Map<string, string[]>(); // key: tenant + event id
  private readonly deliveryByPair = new Map<string, string>(); // key: event id + endpoint id
  private readonly attempts = new Map<string, AttemptRecord[]>();
  private readonly createdCount = new Map<string, number>();
  private readonly purgedCount = new Map<string, number>();
  private readonly slots = new Map<string, { slot: number; start: number }[]>();

  // ---- endpoints ----

  async createEndpointIfUnderLimit(record: EndpointRecord, max: number): Promise<boolean> {
    const ids = this.endpointsByTenant.get(record.tenant_id) ?? [];
    if (ids.length >= max) return false;
    this.endpoints.set(record.id, copy(record));
    this.endpointsByTenant.set(record.tenant_id, [...ids, record.id]);
    return true;
  }

  async getEndpoint(tenantId: string, id: string): Promise<EndpointRecord | null> {
    const e = this.endpoints.get(id);
    return e && e.tenant_id === tenantId ? copy(e) : null;
  }

  async listEndpoints(tenantId: string): Promise<EndpointRecord[]> {
    return (this.endpointsByTenant.get(tenantId) ?? []).map((id) => copy(this.endpoints.get(id)!));
  }

  async updateEndpoint(tenantId: string, id: string, patch: EndpointPatch): Promise<EndpointRecord | null> {
    const e = this.endpoints.get(id);
    if (!e || e.tenant_id !== tenantId) return null;
    const next = { ...e, ...copy(patch) };
    this.endpoints.set(id, next);
    return copy(next);
  }

  async deleteEndpoint(tenantId: string, id: string): Promise<boolean> {
    const e = this.endpoints.get(id);
    if (!e || e.tenant_id !== tenantId) return false;
    this.endpoints.delete(id);
    this.endpointsByTenant.set(tenantId, (this.endpointsByTenant.get(tenantId) ?? []).filter((x) => x !== id));
    this.slots.delete(id);
    return true;
  }

  // ---- deliveries ----

  async createDelivery(record: DeliveryRecord): Promise<{ delivery: DeliveryRecord; created: boolean }> {
    const pair = `${record.event_id}\u0000${record.endpoint_id}`;
    const existing = this.deliveryByPair.get(pair);
    if (existing) return { delivery: copy(this.deliveries.get(existing)!), created: false };
    this.deliveries.set(record.id, copy(record));
    this.deliveryByPair.set(pair, record.id);
    push(this.deliveriesByEndpoint, record.endpoint_id, record.id);
    push(this.deliveriesByEvent, eventKey(record.tenant_id, record.event_id), record.id);
    this.createdCount.set(record.endpoint_id, (this.createdCount.get(record.endpoint_id) ?? 0) + 1);
    return { delivery: copy(record), created: true };
  }

  async getDelivery(id: string): Promise<DeliveryRecord | null> {
    const d = this.deliveries.get(id);
    return d ? copy(d) : null;
  }

  async recordAttempt(attempt: AttemptRecord, outcome: AttemptOutcome): Promise<DeliveryRecord | null> {
    const d = this.deliveries.get(attempt.delivery_id);
    if (!d || d.status !== 'pending' || d.series !== attempt.series) return null;
    push(this.attempts, d.id, copy(attempt));
    const next: DeliveryRecord = {
      ...d,
      ...outcome,
      attempt_count: d.attempt_count + 1,
      last_status_code: attempt.status_code,
      last_error: attempt.error,
    };
    this.deliveries.set(d.id, next);
    return copy(next);
  }

  async failDelivery(id: string, series: number, reason: string, updatedAt: string): Promise<DeliveryRecord | null> {
    const d = this.deliveries.get(id);
    if (!d || d.status !== 'pending' || d.series !== series) return null;
    const next: DeliveryRecord = { ...d, status: 'failed', failure_reason: reason, next_attempt_at: null, updated_at: updatedAt };
    this.deliveries.set(id, next);
    return copy(next);
  }

  async beginResend(tenantId: string, id: string, updatedAt: string): Promise<DeliveryRecord | null> {
    const d = this.deliveries.get(id);
    if (!d || d.tenant_id !== tenantId || d.status === 'pending') return null;
    const next: DeliveryRecord = {
      ...d,
      status: 'pending',
      series: d.series + 1,
      failure_reason: null,
      next_attempt_at: updatedAt,
      updated_at: updatedAt,
    };
    this.deliveries.set(id, next);
    return copy(next);
  }

  async listDeliveriesByEndpoint(tenantId: string, endpointId: string, page: PageRequest): Promise<Page<DeliveryRecord>> {
    return this.page(this.deliveriesByEndpoint.get(endpointId) ?? [], tenantId, page);
  }

  async listDeliveriesByEvent(tenantId: string, eventId: string, page: PageRequest): Promise<Page<DeliveryRecord>> {
    return this.page(this.deliveriesByEvent.get(eventKey(tenantId, eventId)) ?? [], tenantId, page);
  }

  async listAttempts(deliveryId: string): Promise<AttemptRecord[]> {
    return copy(this.attempts.get(deliveryId) ?? []);
  }

  async deliveryStats(endpointId: string): Promise<DeliveryStats> {
    const stats: DeliveryStats = {
      created: this.createdCount.get(endpointId) ?? 0,
      pending: 0,
      succeeded: 0,
      failed: 0,
      purged: this.purgedCount.get(endpointId) ?? 0,
    };
    for (const id of this.deliveriesByEndpoint.get(endpointId) ?? []) stats[this.deliveries.get(id)!.status] += 1;
    return stats;
  }

  async purgeDeliveriesBefore(cutoffMs: number): Promise<number> {
    const gone = new Set<string>();
    for (const d of this.deliveries.values()) {
      if (Date.parse(d.created_at) < cutoffMs) gone.add(d.id);
    }
    if (gone.size === 0) return 0;
    for (const id of gone) {
      const d = this.deliveries.get(id)!;
      this.deliveries.delete(id);
      this.attempts.delete(id);
      this.deliveryByPair.delete(`${d.event_id}\u0000${d.endpoint_id}`);
      this.purgedCount.set(d.endpoint_id, (this.purgedCount.get(d.endpoint_id) ?? 0) + 1);
    }
    for (const index of [this.deliveriesByEndpoint, this.deliveriesByEvent]) {
      for (const [key, ids] of index) {
        const kept = ids.filter((id) => !gone.has(id));
        if (kept.length === 0) index.delete(key);
        else index.set(key, kept);
      }
    }
    return gone.size;
  }

  // ---- rate limit ----

  async reserveSendSlot(endpointId: string, nowMs: number, windowMs: number, max: number, minGapMs: number, lateMs = 0): Promise<number> {
    // Only the last `max` reservations matter: slot k+max must be >= start k + window, where a
    // reservation's start is its slot plus its lateness, kept non-decreasing (the latest start
    // so far), and each slot is at least minGap after the previous slot.
    const taken = this.slots.get(endpointId) ?? [];
    const last = taken[taken.length - 1];
    let slot = nowMs;
    if (last) slot = Math.max(slot, last.slot + minGapMs);
    if (taken.length >= max) slot = Math.max(slot, taken[taken.length - max]!.start + windowMs);
    taken.push({ slot, start: Math.max(slot + lateMs, last?.start ?? -Infinity) });
    if (taken.length > max) taken.splice(0, taken.length - max);
    this.slots.set(endpointId, taken);
    return slot;
  }

  // ---- helpers ----

  private page(ids: readonly string[], tenantId: string, req: PageRequest): Page<DeliveryRecord> {
    // Newest first; the cursor is the id of the last item already seen.
    let end = ids.length;
    if (req.starting_after !== undefined) {
      const at = ids.lastIndexOf(req.starting_after);
      end = at === -1 ? 0 : at;
    }
    const data: DeliveryRecord[] = [];
    let i = end - 1;
    for (; i >= 0 && data.length < req.limit; i--) {
      const d = this.deliveries.get(ids[i]!);
      if (d && d.tenant_id === tenantId) data.push(copy(d));
    }
    return { data, has_more: i >= 0 };
  }
}

function push<T>(map: Map<string, T[]>, key: string, value: T): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}

const eventKey = (tenantId: string, eventId: string): string => `${tenantId}\u0000${eventId}`;
