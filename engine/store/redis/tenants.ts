// Redis adapter of the tenant/key store. Tenants and keys form a small, read-mostly directory
// that needs global lookups (an API key by its hash, a tenant by id), so it lives in one hash
// slot `{dir}`; each write is one script there. Records use the field-lines codec.
import type { TenantLimitsInput } from '../../limits/config.ts';
import type { ChangeFeed, TenantStore } from '../../tenants/store.ts';
import type { ApiKeyRecord, TenantRecord } from '../../tenants/types.ts';
import { decodeRecord, encodePatch, encodeRecord } from './codec.ts';
import { Keys, type RedisClient, type RedisStoreOptions } from './keys.ts';
import { lua } from './script.ts';

// KEYS: hash, list. ARGV: id, record, channel. Insert unless the id exists; keep creation order.
const INSERT = lua(`
if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 0 then return 0 end
redis.call('RPUSH', KEYS[2], ARGV[1])
redis.call('PUBLISH', ARGV[3], ARGV[1])
return 1
`);

// The patch of one field-lines record in a hash: the patched record, or false when there is none.
// onlyAbsent ('1'): set only the fields the record lacks.
const PATCH_LIB = `
local function patch_field(H, id, patch, onlyAbsent)
  local s = redis.call('HGET', H, id)
  if not s then return false end
  local r, order = rec_decode(s)
  if onlyAbsent == '1' then
    local p, porder = rec_decode(patch)
    for _, k in ipairs(porder) do
      if r[k] == nil or r[k] == 'null' then rec_patch(r, order, k .. '\\t' .. p[k]) end
    end
  else
    rec_patch(r, order, patch)
  end
  local out = rec_encode(r, order)
  redis.call('HSET', H, id, out)
  return out
end
`;

// The directory's writes announce themselves on the change channel (ARGV[#ARGV]) in the same
// script, so no process can write and die before telling the others (./directory-feed.ts):
// every process's cache of keys and tenants is dropped when the message arrives.
// KEYS: hash. ARGV: id, patch, onlyAbsent, channel. (Also the webhook endpoints' patch: they are
// cached under the same feed.)
export const DIR_PATCH = lua(`${PATCH_LIB}
local out = patch_field(KEYS[1], ARGV[1], ARGV[2], ARGV[3])
if out then redis.call('PUBLISH', ARGV[4], ARGV[1]) end
return out
`);

// KEYS: keys hash, hash index, tenant's key list. ARGV: key id, key hash, record, channel.
const CREATE_KEY = lua(`
if redis.call('HSETNX', KEYS[2], ARGV[2], ARGV[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
redis.call('RPUSH', KEYS[3], ARGV[1])
redis.call('PUBLISH', ARGV[4], ARGV[1])
return 1
`);

export class RedisTenantStore implements TenantStore {
  /** This process's subscription to the directory's changes (./directory-feed.ts), if it has one. */
  readonly changes: ChangeFeed | undefined;
  private readonly client: RedisClient;
  private readonly keys: Keys;
  private readonly channel: string;

  constructor(opts: RedisStoreOptions & { changes?: ChangeFeed }) {
    this.client = opts.client;
    this.keys = new Keys(opts.prefix);
    this.channel = this.keys.dirChanges();
    this.changes = opts.changes;
  }

  async createTenant(t: TenantRecord): Promise<void> {
    const ok = await INSERT.run(this.client, [this.k('tenants'), this.k('tenant_ids')], [t.id, encodeRecord(t), this.channel]);
    if (ok !== 1) throw new Error(`tenant ${t.id} exists`);
  }

  async getTenant(id: string): Promise<TenantRecord | undefined> {
    const s = await this.client.hget(this.k('tenants'), id);
    return s === null ? undefined : decodeRecord<TenantRecord>(s);
  }

  async listTenants(): Promise<TenantRecord[]> {
    const ids = await this.client.lrange(this.k('tenant_ids'), 0, -1);
    return this.many(this.k('tenants'), ids);
  }

  async setTenantDisabled(id: string, disabled: boolean): Promise<TenantRecord | undefined> {
    return this.patch(this.k('tenants'), id, { disabled }, false);
  }

  async setTenantLimits(id: string, limits: TenantLimitsInput | undefined): Promise<TenantRecord | undefined> {
    return this.patch(this.k('tenants'), id, { limits }, false);
  }

  async createKey(k: ApiKeyRecord): Promise<void> {
    const ok = await CREATE_KEY.run(this.client, [this.k('keys'), this.k('key_hash'), this.k(`tkeys:${k.tenant_id}`)], [k.id, k.hash, encodeRecord(k), this.channel]);
    if (ok !== 1) throw new Error('key exists');
  }

  async getKey(id: string): Promise<ApiKeyRecord | undefined> {
    const s = await this.client.hget(this.k('keys'), id);
    return s === null ? undefined : decodeRecord<ApiKeyRecord>(s);
  }

  async findKeyByHash(hash: string): Promise<ApiKeyRecord | undefined> {
    const id = await this.client.hget(this.k('key_hash'), hash);
    return id === null ? undefined : this.getKey(id);
  }

  async listKeys(tenantId: string): Promise<ApiKeyRecord[]> {
    const ids = await this.client.lrange(this.k(`tkeys:${tenantId}`), 0, -1);
    return this.many(this.k('keys'), ids);
  }

  async revokeKey(id: string, at: string): Promise<ApiKeyRecord | undefined> {
    return this.patch(this.k('keys'), id, { revoked_at: at }, true);
  }

  private k(name: string): string {
    return this.keys.dir(name);
  }

  private async many<T>(hash: string, ids: string[]): Promise<T[]> {
    if (ids.length === 0) return [];
    const recs = await this.client.hmget(hash, ...ids);
    return recs.filter((s): s is string => s !== null).map((s) => decodeRecord<T>(s));
  }

  private async patch<T>(hash: string, id: string, patch: object, onlyAbsent: boolean): Promise<T | undefined> {
    const s = await DIR_PATCH.run(this.client, [hash], [id, encodePatch(patch), onlyAbsent ? '1' : '0', this.channel]);
    return typeof s === 'string' ? decodeRecord<T>(s) : undefined;
  }
}
