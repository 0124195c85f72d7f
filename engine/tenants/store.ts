// The tenant/key store port.
import type { TenantLimitsInput } from '../limits/config.ts';
import type { ApiKeyRecord, TenantRecord } from './types.ts';

/**
 * How a store shared by several processes tells each of them that its directory (keys, tenants)
 * changed, so a process may cache what it read (engine/tenants/credential-cache.ts). A cached
 * read is valid while the feed is `live` and its `generation` has not moved since the read
 * began; every change anywhere, and every moment the feed could have missed one, moves it.
 * A store read by one process alone has none (nothing to cache: it is memory already).
 */
export interface ChangeFeed {
  readonly live: boolean;
  readonly generation: number;
}

export interface TenantStore {
  /** See ChangeFeed; absent: every read goes to the store. */
  readonly changes?: ChangeFeed;
  createTenant(t: TenantRecord): Promise<void>;
  getTenant(id: string): Promise<TenantRecord | undefined>;
  listTenants(): Promise<TenantRecord[]>;
  setTenantDisabled(id: string, disabled: boolean): Promise<TenantRecord | undefined>;
  /** Replace the tenant's own limits (undefined: back to the config's). */
  setTenantLimits(id: string, limits: TenantLimitsInput | undefined): Promise<TenantRecord | undefined>;
  createKey(k: ApiKeyRecord): Promise<void>;
  getKey(id: string): Promise<ApiKeyRecord | undefined>;
  findKeyByHash(hash: string): Promise<ApiKeyRecord | undefined>;
  listKeys(tenantId: string): Promise<ApiKeyRecord[]>;
  /** Marks the key revoked (first revocation time wins); returns it, or undefined if unknown. */
  revokeKey(id: string, at: string): Promise<ApiKeyRecord | undefined>;
}

/**
 * A console session (engine/tenants/sessions.ts). Stored under the SHA-256 of its opaque id, so
 * a store dump holds nothing a browser could present. `owner` groups the sessions a cap counts:
 * `key:<key id>` for a tenant session, `operator` for an admin-token session.
 */
export interface SessionRecord {
  hash: string;
  kind: 'tenant' | 'operator';
  owner: string;
  tenant_id?: string;
  key_id?: string;
  /** An operator session: a digest of the admin token it was opened with (a new token ends it). */
  admin_tag?: string;
  /** Epoch ms. */
  created_at: number;
  /** Epoch ms of the last use that slid the expiry. */
  seen_at: number;
  /** Epoch ms: gone after this (sliding: seen_at + ttl, never past created_at + the absolute cap). */
  expires_at: number;
}

/** The session store port. A session is read by its hash alone; its owner's index bounds how many it has. */
export interface SessionStore {
  /** Store the session, then drop its owner's oldest sessions beyond `maxPerOwner`. */
  create(s: SessionRecord, maxPerOwner: number): Promise<void>;
  /** The session, or undefined when unknown or expired. */
  get(hash: string): Promise<SessionRecord | undefined>;
  /** Slide the expiry (seen_at, expires_at); no-op when the session is gone. */
  touch(hash: string, seenAt: number, expiresAt: number): Promise<void>;
  delete(s: Pick<SessionRecord, 'hash' | 'owner'>): Promise<void>;
  /** Delete every session of the owner (a revoked key); returns how many. */
  deleteOwner(owner: string): Promise<number>;
}
