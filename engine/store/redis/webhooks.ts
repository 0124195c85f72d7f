// Redis adapter of the webhook store. A tenant's endpoints, deliveries, attempt logs, indexes and
// counters share the tenant's slot, so each state change is one script there:
//   <p>{t:<id>}:we              hash   endpoint id -> endpoint (field-lines record)
//   <p>{t:<id>}:we_ids          list   endpoint ids, creation order
//   <p>{t:<id>}:wd:<did>        string delivery (field-lines record)
//   <p>{t:<id>}:wa:<did>        list   attempts, oldest first, each a compact JSON array
//                                      [series, attempt, at, status_code, latency_ms, error, next_attempt_at]
//   <p>{t:<id>}:wd_ep:<eid>     zset   delivery ids of an endpoint, score = creation seq
//   <p>{t:<id>}:wd_ev:<evt>     hash   endpoint id -> "<seq> <delivery id>": one delivery per
//                                      (event, endpoint), and the per-event listing
//   <p>{t:<id>}:wd_created      zset   delivery ids by created_at (ms): what the purge walks
//   <p>{t:<id>}:wd_seq          string creation counter (orders the listings)
//   <p>{t:<id>}:wst             hash   "<eid>|created|pending|succeeded|failed|purged" -> count
// Some methods name a delivery or endpoint by id alone, so two immutable pointers give the
// owner tenant; they are written (SET NX) before the records they point to and cached in
// process (an id never changes tenant):
//   <p>{wd:<did>} -> tenant id     <p>{we:<eid>} -> tenant id     <p>wh:tenants  set (purge)
// Send-slot pacing needs no tenant: <p>{we:<eid>}:slots (list of the last `max` slots).
// The endpoints themselves, and their per-process cache, are ./webhook-endpoints.ts.
import type { ChangeFeed } from '../../tenants/store.ts';
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
import { decodeRecord, encodePatch, encodeRecord } from './codec.ts';
import { Keys, type RedisStoreOptions } from './keys.ts';
import { lua } from './script.ts';
import { RedisWebhookEndpoints } from './webhook-endpoints.ts';

/** Deliveries removed per purge script call. */
const PURGE_BATCH = 200;
/** Owner pointers cached per process (cleared when full). */
const OWNER_CACHE = 10_000;
/** Slot lists outlive their last slot by the window plus this. */
const SLOT_GRACE_MS = 60_000;

// KEYS: event hash, record, endpoint zset, created zset, seq, stats.
// ARGV: endpoint id, delivery id, record, created ms, status. Returns {created 1/0, delivery id}.
const CREATE_DELIVERY = lua(`
local ex = redis.call('HGET', KEYS[1], ARGV[1])
if ex then return { 0, string.match(ex, '^%d+ (.*)$') } end
local seq = redis.call('INCR', KEYS[5])
redis.call('SET', KEYS[2], ARGV[3])
redis.call('ZADD', KEYS[3], seq, ARGV[2])
redis.call('ZADD', KEYS[4], ARGV[4], ARGV[2])
redis.call('HSET', KEYS[1], ARGV[1], seq .. ' ' .. ARGV[2])
redis.call('HINCRBY', KEYS[6], ARGV[1] .. '|created', 1)
redis.call('HINCRBY', KEYS[6], ARGV[1] .. '|' .. ARGV[5], 1)
return { 1, ARGV[2] }
`);

const DELIVERY_LIB = `
local function move(stats, r, to)
  local eid = cjson.decode(r.endpoint_id)
  local from = cjson.decode(r.status)
  if from == to then return end
  redis.call('HINCRBY', stats, eid .. '|' .. from, -1)
  redis.call('HINCRBY', stats, eid .. '|' .. to, 1)
end
`;

// KEYS: record, attempts, stats. ARGV: series, attempt JSON, patch, new status.
const RECORD_ATTEMPT = lua(DELIVERY_LIB + `
local s = redis.call('GET', KEYS[1])
if not s then return false end
local r, order = rec_decode(s)
if r.status ~= '"pending"' or tonumber(r.series) ~= tonumber(ARGV[1]) then return false end
redis.call('RPUSH', KEYS[2], ARGV[2])
move(KEYS[3], r, ARGV[4])
rec_patch(r, order, ARGV[3])
r.attempt_count = num(tonumber(r.attempt_count) + 1)
local out = rec_encode(r, order)
redis.call('SET', KEYS[1], out)
return out
`);

// KEYS: record, stats. ARGV: series, patch.
const FAIL_DELIVERY = lua(DELIVERY_LIB + `
local s = redis.call('GET', KEYS[1])
if not s then return false end
local r, order = rec_decode(s)
if r.status ~= '"pending"' or tonumber(r.series) ~= tonumber(ARGV[1]) then return false end
move(KEYS[2], r, 'failed')
rec_patch(r, order, ARGV[2])
local out = rec_encode(r, order)
redis.call('SET', KEYS[1], out)
return out
`);

// KEYS: record, stats. ARGV: patch (without series).
const BEGIN_RESEND = lua(DELIVERY_LIB + `
local s = redis.call('GET', KEYS[1])
if not s then return false end
local r, order = rec_decode(s)
if r.status == '"pending"' then return false end
move(KEYS[2], r, 'pending')
rec_patch(r, order, ARGV[1])
r.series = num(tonumber(r.series) + 1)
local out = rec_encode(r, order)
redis.call('SET', KEYS[1], out)
return out
`);

// KEYS: endpoint zset. ARGV: cursor id ('' = newest), limit + 1.
const PAGE_IDS = lua(`
local top = '+inf'
if ARGV[1] ~= '' then
  local sc = redis.call('ZSCORE', KEYS[1], ARGV[1])
  if not sc then return {} end
  top = '(' .. sc
end
return redis.call('ZREVRANGEBYSCORE', KEYS[1], top, '-inf', 'LIMIT', 0, tonumber(ARGV[2]))
`, { readOnly: true });

// KEYS: created zset, stats, then per delivery: record, attempts, endpoint zset, event hash.
// ARGV: per delivery: id, endpoint id ('' when the caller found no record). Returns the ids removed.
const PURGE = lua(`
local gone = {}
for i = 0, (#KEYS - 2) / 4 - 1 do
  local rk, ak, epk, evk = KEYS[3 + i * 4], KEYS[4 + i * 4], KEYS[5 + i * 4], KEYS[6 + i * 4]
  local id, eid = ARGV[1 + i * 2], ARGV[2 + i * 2]
  redis.call('ZREM', KEYS[1], id)
  local s = redis.call('GET', rk)
  if s and eid ~= '' then
    local r = rec_decode(s)
    redis.call('DEL', rk, ak)
    redis.call('ZREM', epk, id)
    local v = redis.call('HGET', evk, eid)
    if v and string.match(v, '^%d+ (.*)$') == id then redis.call('HDEL', evk, eid) end
    redis.call('HINCRBY', KEYS[2], eid .. '|' .. cjson.decode(r.status), -1)
    redis.call('HINCRBY', KEYS[2], eid .. '|purged', 1)
    gone[#gone + 1] = id
  end
end
return gone
`);

// KEYS: slot list. ARGV: now, window, max, min gap, grace, late. The memory adapter's algorithm:
// only the last \`max\` reservations matter. An entry is "<latest start>:<slot>" (a bare number,
// written before sends could be late, is both).
const RESERVE_SLOT = lua(`
local now, window, max, gap, late = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[6])
local function entry(i)
  local e = redis.call('LINDEX', KEYS[1], i)
  local start, slot = string.match(e, '^([^:]+):(.+)$')
  if start then return tonumber(start), tonumber(slot) end
  return tonumber(e), tonumber(e)
end
local n = redis.call('LLEN', KEYS[1])
local slot, start, last = now, -math.huge, nil
if n > 0 then start, last = entry(-1); slot = math.max(slot, last + gap) end
if n >= max then slot = math.max(slot, (entry(n - max)) + window) end
start = math.max(start, slot + late)
redis.call('RPUSH', KEYS[1], num(start) .. ':' .. num(slot))
redis.call('LTRIM', KEYS[1], -max, -1)
redis.call('PEXPIRE', KEYS[1], math.max(1, math.ceil(start - now + window + tonumber(ARGV[5]))))
return num(slot)
`);

const encodeAttempt = (x: AttemptRecord): string => JSON.stringify([x.series, x.attempt, x.at, x.status_code, x.latency_ms, x.error, x.next_attempt_at]);

function decodeAttempt(delivery_id: string, s: string): AttemptRecord {
  const [series, attempt, at, status_code, latency_ms, error, next_attempt_at] = JSON.parse(s) as [number, number, string, number | null, number, string | null, string | null];
  return { delivery_id, series, attempt, at, status_code, latency_ms, error, next_attempt_at };
}

const STAT_FIELDS = ['created', 'pending', 'succeeded', 'failed', 'purged'] as const;

export class RedisWebhookStore implements WebhookStore {
  private readonly client: RedisStoreOptions['client'];
  private readonly keys: Keys;
  private readonly owners = new Map<string, string>();
  private readonly endpoints: RedisWebhookEndpoints;

  /** `changes`: the directory's change feed (stores.ts); with it, endpoint lists are cached. */
  constructor(opts: RedisStoreOptions & { changes?: ChangeFeed }) {
    this.client = opts.client;
    this.keys = new Keys(opts.prefix);
    this.endpoints = new RedisWebhookEndpoints(opts);
  }

  // ---- endpoints (./webhook-endpoints.ts) ----

  createEndpointIfUnderLimit(record: EndpointRecord, max: number): Promise<boolean> {
    return this.endpoints.create(record, max);
  }

  getEndpoint(tenantId: string, id: string): Promise<EndpointRecord | null> {
    return this.endpoints.get(tenantId, id);
  }

  listEndpoints(tenantId: string): Promise<EndpointRecord[]> {
    return this.endpoints.list(tenantId);
  }

  updateEndpoint(tenantId: string, id: string, patch: EndpointPatch): Promise<EndpointRecord | null> {
    return this.endpoints.update(tenantId, id, patch);
  }

  deleteEndpoint(tenantId: string, id: string): Promise<boolean> {
    return this.endpoints.delete(tenantId, id);
  }

  // ---- deliveries ----

  async createDelivery(record: DeliveryRecord): Promise<{ delivery: DeliveryRecord; created: boolean }> {
    const t = record.tenant_id;
    const [ownDelivery] = await Promise.all([
      this.client.set(this.keys.deliveryOwner(record.id), t, 'NX'),
      this.client.set(this.keys.endpointOwner(record.endpoint_id), t, 'NX'),
      this.client.sadd(this.keys.webhookTenants(), t),
    ]);
    const encoded = encodeRecord(record);
    const createdMs = Date.parse(record.created_at);
    for (let tries = 0; ; tries++) {
      const [created, id] = (await CREATE_DELIVERY.run(
        this.client,
        [this.k(t, `wd_ev:${record.event_id}`), this.k(t, `wd:${record.id}`), this.k(t, `wd_ep:${record.endpoint_id}`), this.k(t, 'wd_created'), this.k(t, 'wd_seq'), this.k(t, 'wst')],
        [record.endpoint_id, record.id, encoded, String(Number.isFinite(createdMs) ? createdMs : 0), record.status],
      )) as [number, string];
      if (created === 1) {
        this.remember(record.id, t);
        return { delivery: decodeRecord<DeliveryRecord>(encoded), created: true };
      }
      // The pair already has a delivery: drop the pointer written for this unused id.
      if (ownDelivery === 'OK' && id !== record.id) await this.client.del(this.keys.deliveryOwner(record.id));
      const s = await this.client.get(this.k(t, `wd:${id}`));
      if (s !== null) return { delivery: decodeRecord<DeliveryRecord>(s), created: false };
      // Purged between the two calls: the pair is free again.
      if (tries >= 2) throw new Error(`delivery for event ${record.event_id} and endpoint ${record.endpoint_id} keeps vanishing`);
      if (ownDelivery === 'OK') await this.client.set(this.keys.deliveryOwner(record.id), t, 'NX');
    }
  }

  async getDelivery(id: string): Promise<DeliveryRecord | null> {
    const t = await this.deliveryOwner(id);
    if (t === null) return null;
    const s = await this.client.get(this.k(t, `wd:${id}`));
    return s === null ? null : decodeRecord<DeliveryRecord>(s);
  }

  async recordAttempt(attempt: AttemptRecord, outcome: AttemptOutcome): Promise<DeliveryRecord | null> {
    const id = attempt.delivery_id;
    const t = await this.deliveryOwner(id);
    if (t === null) return null;
    const patch = encodePatch({ ...outcome, last_status_code: attempt.status_code, last_error: attempt.error });
    const s = await RECORD_ATTEMPT.run(this.client, [this.k(t, `wd:${id}`), this.k(t, `wa:${id}`), this.k(t, 'wst')], [
      String(attempt.series),
      encodeAttempt(attempt),
      patch,
      outcome.status,
    ]);
    return typeof s === 'string' ? decodeRecord<DeliveryRecord>(s) : null;
  }

  async failDelivery(id: string, series: number, reason: string, updatedAt: string): Promise<DeliveryRecord | null> {
    const t = await this.deliveryOwner(id);
    if (t === null) return null;
    const patch = encodePatch({ status: 'failed', failure_reason: reason, next_attempt_at: null, updated_at: updatedAt });
    const s = await FAIL_DELIVERY.run(this.client, [this.k(t, `wd:${id}`), this.k(t, 'wst')], [String(series), patch]);
    return typeof s === 'string' ? decodeRecord<DeliveryRecord>(s) : null;
  }

  async beginResend(tenantId: string, id: string, updatedAt: string): Promise<DeliveryRecord | null> {
    const patch = encodePatch({ status: 'pending', failure_reason: null, next_attempt_at: updatedAt, updated_at: updatedAt });
    const s = await BEGIN_RESEND.run(this.client, [this.k(tenantId, `wd:${id}`), this.k(tenantId, 'wst')], [patch]);
    return typeof s === 'string' ? decodeRecord<DeliveryRecord>(s) : null;
  }

  async listDeliveriesByEndpoint(tenantId: string, endpointId: string, page: PageRequest): Promise<Page<DeliveryRecord>> {
    const ids = (await PAGE_IDS.run(this.client, [this.k(tenantId, `wd_ep:${endpointId}`)], [page.starting_after ?? '', String(page.limit + 1)])) as string[];
    return this.page(tenantId, ids, page.limit);
  }

  async listDeliveriesByEvent(tenantId: string, eventId: string, page: PageRequest): Promise<Page<DeliveryRecord>> {
    const all = await this.client.hvals(this.k(tenantId, `wd_ev:${eventId}`));
    let rows = all.map((v) => ({ seq: Number(v.slice(0, v.indexOf(' '))), id: v.slice(v.indexOf(' ') + 1) })).sort((a, b) => b.seq - a.seq);
    if (page.starting_after !== undefined) {
      const at = rows.findIndex((r) => r.id === page.starting_after);
      rows = at === -1 ? [] : rows.slice(at + 1);
    }
    return this.page(tenantId, rows.slice(0, page.limit + 1).map((r) => r.id), page.limit);
  }

  async listAttempts(deliveryId: string): Promise<AttemptRecord[]> {
    const t = await this.deliveryOwner(deliveryId);
    if (t === null) return [];
    const rows = await this.client.lrange(this.k(t, `wa:${deliveryId}`), 0, -1);
    return rows.map((r) => decodeAttempt(deliveryId, r));
  }

  async deliveryStats(endpointId: string): Promise<DeliveryStats> {
    const stats: DeliveryStats = { created: 0, pending: 0, succeeded: 0, failed: 0, purged: 0 };
    const t = await this.client.get(this.keys.endpointOwner(endpointId));
    if (t === null) return stats;
    const v = await this.client.hmget(this.k(t, 'wst'), ...STAT_FIELDS.map((f) => `${endpointId}|${f}`));
    STAT_FIELDS.forEach((f, i) => (stats[f] = Number(v[i] ?? 0)));
    return stats;
  }

  async purgeDeliveriesBefore(cutoffMs: number): Promise<number> {
    let removed = 0;
    const tenants = await this.client.smembers(this.keys.webhookTenants());
    for (const t of tenants) {
      for (;;) {
        const ids = await this.client.zrangebyscore(this.k(t, 'wd_created'), '-inf', `(${cutoffMs}`, 'LIMIT', 0, PURGE_BATCH);
        if (ids.length === 0) break;
        const recs = await this.client.mget(...ids.map((id) => this.k(t, `wd:${id}`)));
        const keys = [this.k(t, 'wd_created'), this.k(t, 'wst')];
        const args: string[] = [];
        ids.forEach((id, i) => {
          const s = recs[i];
          const d = s ? decodeRecord<DeliveryRecord>(s) : null;
          const rec = this.k(t, `wd:${id}`);
          keys.push(rec, this.k(t, `wa:${id}`), d ? this.k(t, `wd_ep:${d.endpoint_id}`) : rec, d ? this.k(t, `wd_ev:${d.event_id}`) : rec);
          args.push(id, d ? d.endpoint_id : '');
        });
        const gone = (await PURGE.run(this.client, keys, args)) as string[];
        removed += gone.length;
        await Promise.all(gone.map((id) => this.client.del(this.keys.deliveryOwner(id))));
        for (const id of gone) this.owners.delete(id);
        if (ids.length < PURGE_BATCH) break;
      }
    }
    return removed;
  }

  // ---- rate limit ----

  async reserveSendSlot(endpointId: string, nowMs: number, windowMs: number, max: number, minGapMs: number, lateMs = 0): Promise<number> {
    const slot = await RESERVE_SLOT.run(this.client, [this.keys.endpointSlots(endpointId)], [
      String(nowMs),
      String(windowMs),
      String(max),
      String(minGapMs),
      String(SLOT_GRACE_MS),
      String(lateMs),
    ]);
    return Number(slot);
  }

  // ---- helpers ----

  private async page(tenantId: string, ids: string[], limit: number): Promise<Page<DeliveryRecord>> {
    const has_more = ids.length > limit;
    const shown = ids.slice(0, limit);
    if (shown.length === 0) return { data: [], has_more };
    const recs = await this.client.mget(...shown.map((id) => this.k(tenantId, `wd:${id}`)));
    return { data: recs.filter((s): s is string => s !== null).map((s) => decodeRecord<DeliveryRecord>(s)), has_more };
  }

  private async deliveryOwner(id: string): Promise<string | null> {
    const cached = this.owners.get(id);
    if (cached !== undefined) return cached;
    const t = await this.client.get(this.keys.deliveryOwner(id));
    if (t !== null) this.remember(id, t);
    return t;
  }

  private remember(id: string, tenantId: string): void {
    if (this.owners.size >= OWNER_CACHE) this.owners.clear();
    this.owners.set(id, tenantId);
  }

  private k(tenantId: string, name: string): string {
    return this.keys.tenant(tenantId) + name;
  }
}
