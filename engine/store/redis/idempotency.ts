// Redis adapter of the idempotency store: one hash per (tenant, Idempotency-Key),
// `<p>{t:<tenant>}:idem:<key>`, changed by one script per method. Liveness is decided on the
// caller's clock (`now`, `expiresAt`), exactly like the memory adapter; Redis TTLs only collect
// the garbage: a claim lives lockMs + CLAIM_GRACE_MS (so a slow owner can still complete it, as
// in memory, while a newcomer may take it over after lockMs), an answer until its expiry.
// Fields: fp (fingerprint), tok (claim token), st ('p' in progress / 'd' done), lu (locked
// until), ea (expires at), n (the claim's now: TTLs are computed relative to it), res (JSON).
import type { BeginResult, IdempotencyStore, StoredResponse } from '../../idempotency/store.ts';
import { Keys, type RedisStoreOptions } from './keys.ts';
import { lua } from './script.ts';

const CLAIM_GRACE_MS = 60_000;

// KEYS: record. ARGV: fingerprint, token, now, lockMs, grace ms.
const BEGIN = lua(`
local r = redis.call('HMGET', KEYS[1], 'fp', 'st', 'lu', 'ea', 'res')
local now = tonumber(ARGV[3])
local live = false
if r[1] then
  if r[2] == 'd' then live = tonumber(r[4]) > now else live = tonumber(r[3]) > now end
end
if not live then
  local until_ = now + tonumber(ARGV[4])
  redis.call('DEL', KEYS[1])
  redis.call('HSET', KEYS[1], 'fp', ARGV[1], 'tok', ARGV[2], 'st', 'p', 'lu', num(until_), 'ea', num(until_), 'n', ARGV[3])
  redis.call('PEXPIRE', KEYS[1], math.max(1, tonumber(ARGV[4]) + tonumber(ARGV[5])))
  return { 'proceed' }
end
if r[1] ~= ARGV[1] then return { 'conflict' } end
if r[2] == 'd' then return { 'replay', r[5] } end
return { 'in_progress' }
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

  async begin(tenantId: string, key: string, fingerprint: string, token: string, now: number, lockMs: number): Promise<BeginResult> {
    const [kind, response] = (await BEGIN.run(this.client, [this.k(tenantId, key)], [fingerprint, token, String(now), String(lockMs), String(CLAIM_GRACE_MS)])) as [
      BeginResult['kind'],
      string | undefined,
    ];
    if (kind === 'replay') return { kind, response: JSON.parse(response!) as StoredResponse };
    return { kind } as BeginResult;
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
