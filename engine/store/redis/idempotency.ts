// Redis adapter of the idempotency store: one hash per (tenant, Idempotency-Key),
// `<p>{t:<tenant>}:idem:<key>` (the tenant's slot), changed by one script per method. Liveness
// (lease, expiry) is decided on the caller's clock (`now`, `expiresAt`), exactly like the memory
// adapter; Redis TTLs only collect the garbage: a record in progress lives ttlMs (its owner may
// have created a task, so the key stays bound to its request), an answer until its expiry.
// Fields: fp (fingerprint), tok (owner's token), st ('p' in progress / 'd' done), lu (lease
// until), ea (expires at), n (the claim's now: TTLs are computed relative to it), task (the id
// the key's create takes), res (JSON).
import type { BeginResult, ClaimRequest, IdempotencyStore, StoredResponse } from '../../idempotency/store.ts';
import { Keys, type RedisStoreOptions } from './keys.ts';
import { lua } from './script.ts';

// KEYS: record. ARGV: fingerprint, token, task id, now, leaseMs, ttlMs.
const BEGIN = lua(`
local r = redis.call('HMGET', KEYS[1], 'fp', 'st', 'lu', 'ea', 'res', 'task')
local now = tonumber(ARGV[4])
if not r[1] or tonumber(r[4]) <= now then
  redis.call('DEL', KEYS[1])
  redis.call('HSET', KEYS[1], 'fp', ARGV[1], 'tok', ARGV[2], 'st', 'p', 'lu', num(now + tonumber(ARGV[5])), 'ea', num(now + tonumber(ARGV[6])), 'n', ARGV[4], 'task', ARGV[3])
  redis.call('PEXPIRE', KEYS[1], math.max(1, tonumber(ARGV[6])))
  return { 'proceed', ARGV[3], '0' }
end
if r[1] ~= ARGV[1] then return { 'conflict' } end
if r[2] == 'd' then return { 'replay', r[5] } end
if tonumber(r[3]) > now then return { 'in_progress' } end
redis.call('HSET', KEYS[1], 'tok', ARGV[2], 'lu', num(now + tonumber(ARGV[5])))
return { 'proceed', r[6], '1' }
`);

// KEYS: record. ARGV: token, field, value. Sets the field of the claim `token` still in progress.
const SET_OWNED = lua(`
local r = redis.call('HMGET', KEYS[1], 'tok', 'st')
if r[1] ~= ARGV[1] or r[2] ~= 'p' then return 0 end
redis.call('HSET', KEYS[1], ARGV[2], ARGV[3])
return 1
`);

// KEYS: record. ARGV: token, response JSON, expiresAt.
const COMPLETE = lua(`
local r = redis.call('HMGET', KEYS[1], 'tok', 'st', 'n')
if r[1] ~= ARGV[1] or r[2] ~= 'p' then return 0 end
redis.call('HSET', KEYS[1], 'st', 'd', 'res', ARGV[2], 'ea', ARGV[3])
redis.call('PEXPIRE', KEYS[1], math.max(1, tonumber(ARGV[3]) - tonumber(r[3])))
return 1
`);

// KEYS: record. ARGV: token.
const ABANDON = lua(`
local r = redis.call('HMGET', KEYS[1], 'tok', 'st')
if r[1] ~= ARGV[1] or r[2] ~= 'p' then return 0 end
redis.call('DEL', KEYS[1])
return 1
`);

export class RedisIdempotencyStore implements IdempotencyStore {
  private readonly client: RedisStoreOptions['client'];
  private readonly keys: Keys;

  constructor(opts: RedisStoreOptions) {
    this.client = opts.client;
    this.keys = new Keys(opts.prefix);
  }

  async begin(tenantId: string, key: string, c: ClaimRequest): Promise<BeginResult> {
    const args = [c.fingerprint, c.token, c.taskId, String(c.now), String(c.leaseMs), String(c.ttlMs)];
    const [kind, a, b] = (await BEGIN.run(this.client, [this.k(tenantId, key)], args)) as [BeginResult['kind'], string | undefined, string | undefined];
    if (kind === 'replay') return { kind, response: JSON.parse(a!) as StoredResponse };
    if (kind === 'proceed') return { kind, taskId: a!, recovered: b === '1' };
    return { kind } as BeginResult;
  }

  async renew(tenantId: string, key: string, token: string, now: number, leaseMs: number): Promise<boolean> {
    return (await SET_OWNED.run(this.client, [this.k(tenantId, key)], [token, 'lu', String(now + leaseMs)])) === 1;
  }

  async relink(tenantId: string, key: string, token: string, taskId: string): Promise<boolean> {
    return (await SET_OWNED.run(this.client, [this.k(tenantId, key)], [token, 'task', taskId])) === 1;
  }

  async complete(tenantId: string, key: string, token: string, response: StoredResponse, expiresAt: number): Promise<boolean> {
    return (await COMPLETE.run(this.client, [this.k(tenantId, key)], [token, JSON.stringify(response), String(expiresAt)])) === 1;
  }

  async abandon(tenantId: string, key: string, token: string): Promise<boolean> {
    return (await ABANDON.run(this.client, [this.k(tenantId, key)], [token])) === 1;
  }

  private k(tenantId: string, key: string): string {
    return `${this.keys.tenant(tenantId)}idem:${key}`;
  }
}
