// Key names of the Redis adapters (the full layout is in docs/redis-layout.md). Everything sits
// under the configured prefix. Per-tenant state shares the hash tag `{t:<tenantId>}`, so Redis
// Cluster keeps a tenant's wallet, ledger, limits, idempotency records and webhook data in one
// slot and each script touches one slot. Records read by id alone (tasks, deliveries,
// endpoints' pacing) carry their own tag.
import type { Cluster, Redis } from 'ioredis';

/**
 * A connection to one Redis or to a Redis Cluster: the adapters use only commands and scripts
 * whose keys share one slot, so both serve them alike.
 */
export type RedisClient = Redis | Cluster;

/** What every Redis adapter is constructed with. */
export interface RedisStoreOptions {
  client: RedisClient;
  /** e.g. `gw:`; no braces (the adapters add the hash tags). */
  prefix: string;
}

/** Key prefixes must not contain hash-tag braces: the adapters place the tags themselves. */
export function checkPrefix(prefix: string): string {
  if (/[{}]/.test(prefix)) throw new Error(`redis key prefix ${JSON.stringify(prefix)} must not contain '{' or '}'`);
  return prefix;
}

export class Keys {
  readonly prefix: string;

  constructor(prefix: string) {
    this.prefix = checkPrefix(prefix);
  }

  /** `<prefix>{t:<tenantId>}:` — the start of every per-tenant key. */
  tenant(tenantId: string): string {
    return `${this.prefix}{t:${tenantId}}:`;
  }

  /** The tenant/key directory: one small slot (global lookups by key hash need one index). */
  dir(name: string): string {
    return `${this.prefix}{dir}:${name}`;
  }

  /** The channel every directory write is announced on (./directory-feed.ts): not a key. */
  dirChanges(): string {
    return `${this.prefix}dir:changes`;
  }

  task(id: string): string {
    return `${this.prefix}{task:${id}}`;
  }

  /** delivery id -> tenant id (written before the delivery, immutable). */
  deliveryOwner(id: string): string {
    return `${this.prefix}{wd:${id}}`;
  }

  /** endpoint id -> tenant id (immutable; kept after deletion so stats stay readable). */
  endpointOwner(id: string): string {
    return `${this.prefix}{we:${id}}`;
  }

  /** The endpoint's send-slot reservations (reserveSendSlot). */
  endpointSlots(id: string): string {
    return `${this.prefix}{we:${id}}:slots`;
  }

  /** Tenants that have (had) webhook deliveries: what the retention purge walks. */
  webhookTenants(): string {
    return `${this.prefix}wh:tenants`;
  }

  /** The hash of a rate counter that belongs to no tenant (./rate.ts; a tenant's are `<tenant>rate`). */
  rate(name: string, id: string): string {
    return `${this.prefix}{rl:${name}:${id}}`;
  }

  /** Unsettled tasks (a sorted set the sweep pages through). */
  unsettledTasks(): string {
    return `${this.prefix}tasks:unsettled`;
  }

  /** An upstream pool member's circuit breaker (its own tag: shared by every process). */
  breaker(vendor: string, member: string): string {
    return `${this.prefix}{ub:${vendor}/${member}}`;
  }

  /** Uploaded media bytes, by content hash, on their way to the process that submits the task. */
  media(hash: string): string {
    return `${this.prefix}{media:${hash}}`;
  }

  /** A console session, by the hash of its token. */
  session(hash: string): string {
    return `${this.prefix}{sess:${hash}}`;
  }

  /** A session owner's index of sessions. */
  sessionOwner(owner: string): string {
    return `${this.prefix}{sess-owner:${owner}}`;
  }

  /** /readyz's write probe: one key, or on a cluster `tag` picks a slot per master. */
  readyProbe(tag?: number): string {
    return tag === undefined ? `${this.prefix}ready-probe` : `${this.prefix}{ready-probe-${tag}}`;
  }
}
