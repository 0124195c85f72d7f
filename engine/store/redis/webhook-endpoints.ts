// A tenant's webhook endpoints on Redis (the endpoint half of ./webhooks.ts's store), in the
// tenant's slot:
//   <p>{t:<id>}:we              hash   endpoint id -> endpoint (field-lines record)
//   <p>{t:<id>}:we_ids          list   endpoint ids, creation order
//   <p>{we:<eid>}               string owner tenant id (immutable; see ./webhooks.ts)
//
// Every task event fans out to the tenant's endpoints (dispatcher.ts), so the endpoint list was
// read twice per task life (LRANGE, and HMGET when there are any). It is cached in the process
// like the directory's keys and tenants (./directory-feed.ts): each endpoint write (create,
// patch, delete) PUBLISHes on the directory's change channel in its own script, and a cached
// list is served only while the feed is live and has not moved since it was read. A process
// sees its own writes at once; another sees them when the message arrives (about a round trip:
// an event fanned out on that process in between uses the list as it was, as an event published
// just before the write would). Without a feed (a store built on its own) every list is read.
import type { ChangeFeed } from '../../tenants/store.ts';
import type { EndpointPatch, EndpointRecord } from '../../webhooks/store.ts';
import { decodeRecord, encodePatch, encodeRecord } from './codec.ts';
import { Keys, type RedisStoreOptions } from './keys.ts';
import { lua } from './script.ts';
import { DIR_PATCH } from './tenants.ts';

/** Tenants whose endpoint lists are cached per process (cleared when full). */
const ENDPOINT_CACHE = 10_000;

// KEYS: endpoints hash, endpoint id list. ARGV: id, record, max, change channel. 1 created, 0 at
// the limit, -1 id taken.
const CREATE_ENDPOINT = lua(`
if redis.call('LLEN', KEYS[2]) >= tonumber(ARGV[3]) then return 0 end
if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 0 then return -1 end
redis.call('RPUSH', KEYS[2], ARGV[1])
redis.call('PUBLISH', ARGV[4], ARGV[1])
return 1
`);

// KEYS: endpoints hash, endpoint id list. ARGV: id, change channel.
const DELETE_ENDPOINT = lua(`
if redis.call('HDEL', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('LREM', KEYS[2], 0, ARGV[1])
redis.call('PUBLISH', ARGV[2], ARGV[1])
return 1
`);

export class RedisWebhookEndpoints {
  private readonly client: RedisStoreOptions['client'];
  private readonly keys: Keys;
  private readonly changes: ChangeFeed | undefined;
  private readonly channel: string;
  /** Tenant id -> its endpoints as read while the feed stood at `feed` and this process at `local`. */
  private readonly endpoints = new Map<string, { feed: number; local: number; list: EndpointRecord[] }>();
  /** This process's own endpoint writes: each drops the cached lists at once (the feed's message follows). */
  private local = 0;

  constructor(opts: RedisStoreOptions & { changes?: ChangeFeed }) {
    this.client = opts.client;
    this.keys = new Keys(opts.prefix);
    this.changes = opts.changes;
    this.channel = this.keys.dirChanges();
  }

  async create(record: EndpointRecord, max: number): Promise<boolean> {
    const t = record.tenant_id;
    const r = await this.changing(CREATE_ENDPOINT.run(this.client, [this.k(t, 'we'), this.k(t, 'we_ids')], [record.id, encodeRecord(record), String(max), this.channel]));
    if (r === -1) throw new Error(`endpoint ${record.id} exists`);
    if (r !== 1) return false;
    await this.client.set(this.keys.endpointOwner(record.id), t, 'NX');
    return true;
  }

  async get(tenantId: string, id: string): Promise<EndpointRecord | null> {
    const s = await this.client.hget(this.k(tenantId, 'we'), id);
    return s === null ? null : decodeRecord<EndpointRecord>(s);
  }

  /** The tenant's endpoints, creation order: from the cache while the change feed vouches for it. Callers do not modify them. */
  async list(tenantId: string): Promise<EndpointRecord[]> {
    const feed = this.changes;
    const cached = this.endpoints.get(tenantId);
    if (feed?.live && cached && cached.feed === feed.generation && cached.local === this.local) return cached.list;
    // A read that began before a change (here or announced) may miss it: it serves its caller, uncached.
    const before = { feed: feed?.generation ?? 0, live: feed?.live === true, local: this.local };
    const ids = await this.client.lrange(this.k(tenantId, 'we_ids'), 0, -1);
    const recs = ids.length === 0 ? [] : await this.client.hmget(this.k(tenantId, 'we'), ...ids);
    const list = recs.filter((s): s is string => s !== null).map((s) => decodeRecord<EndpointRecord>(s));
    if (before.live && feed!.generation === before.feed && this.local === before.local) {
      if (this.endpoints.size >= ENDPOINT_CACHE) this.endpoints.clear();
      this.endpoints.set(tenantId, { feed: before.feed, local: before.local, list });
    }
    return list;
  }

  async update(tenantId: string, id: string, patch: EndpointPatch): Promise<EndpointRecord | null> {
    const s = await this.changing(DIR_PATCH.run(this.client, [this.k(tenantId, 'we')], [id, encodePatch(patch), '0', this.channel]));
    return typeof s === 'string' ? decodeRecord<EndpointRecord>(s) : null;
  }

  async delete(tenantId: string, id: string): Promise<boolean> {
    const r = await this.changing(DELETE_ENDPOINT.run(this.client, [this.k(tenantId, 'we'), this.k(tenantId, 'we_ids')], [id, this.channel]));
    if (r !== 1) return false;
    await this.client.del(this.keys.endpointSlots(id));
    return true;
  }

  /**
   * An endpoint write of this process: no list cached before it, or read while it runs, is
   * served again, whether it succeeded or not (a failed write may have run).
   */
  private async changing<T>(write: Promise<T>): Promise<T> {
    this.local++;
    try {
      return await write;
    } finally {
      this.local++;
    }
  }

  private k(tenantId: string, name: string): string {
    return this.keys.tenant(tenantId) + name;
  }
}
