// Redis adapter of the pool breakers (engine/upstream/breaker-store.ts), shared by every process
// of the gateway. One hash per vendor and member, `<prefix>{ub:<vendor>/<member>}`, with its own
// hash tag: each script touches that one key, so Redis Cluster places it anywhere. Fields: f
// (consecutive failures), u (open until, epoch ms; 0 closed), p (1 while a trial call runs).
// Records expire a day after their last change, so members removed from config leave nothing.
import { CLOSED, type BreakerRecord, type BreakerStore } from '../../upstream/breaker-store.ts';
import { Keys, type RedisClient, type RedisStoreOptions } from './keys.ts';
import { lua } from './script.ts';

const TTL_MS = 86_400_000;

// KEYS: breaker. ARGV: threshold, now, cooldown, ttl. Returns {f, u, p}.
const FAILURE = lua(`
local f = redis.call('HINCRBY', KEYS[1], 'f', 1)
local u = tonumber(redis.call('HGET', KEYS[1], 'u') or '0')
local p = redis.call('HGET', KEYS[1], 'p') == '1'
if f >= tonumber(ARGV[1]) or p or u ~= 0 then
  u = tonumber(ARGV[2]) + tonumber(ARGV[3])
  redis.call('HSET', KEYS[1], 'u', num(u), 'p', '0')
  p = false
end
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return {f, num(u), p and 1 or 0}
`);

// KEYS: breaker. ARGV: now, cooldown, ttl. 1 when this caller runs the trial call.
const CLAIM = lua(`
local u = tonumber(redis.call('HGET', KEYS[1], 'u') or '0')
if u == 0 or u > tonumber(ARGV[1]) then return 0 end
redis.call('HSET', KEYS[1], 'u', num(tonumber(ARGV[1]) + tonumber(ARGV[2])), 'p', '1')
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
`);

export class RedisBreakerStore implements BreakerStore {
  private readonly client: RedisClient;
  private readonly keys: Keys;

  constructor(opts: RedisStoreOptions) {
    this.client = opts.client;
    this.keys = new Keys(opts.prefix);
  }

  private key(vendor: string, member: string): string {
    return this.keys.breaker(vendor, member);
  }

  async read(vendor: string, member: string): Promise<BreakerRecord> {
    const [f, u, p] = await this.client.hmget(this.key(vendor, member), 'f', 'u', 'p');
    if (f === null && u === null) return { ...CLOSED };
    return { failures: Number(f ?? 0), open_until: Number(u ?? 0), probing: p === '1' };
  }

  async failure(vendor: string, member: string, threshold: number, now: number, cooldownMs: number): Promise<BreakerRecord> {
    const [f, u, p] = (await FAILURE.run(this.client, [this.key(vendor, member)], [threshold, now, cooldownMs, TTL_MS])) as [number, string, number];
    return { failures: Number(f), open_until: Number(u), probing: Number(p) === 1 };
  }

  async success(vendor: string, member: string): Promise<void> {
    await this.client.del(this.key(vendor, member));
  }

  async claimProbe(vendor: string, member: string, now: number, cooldownMs: number): Promise<boolean> {
    return Number(await CLAIM.run(this.client, [this.key(vendor, member)], [now, cooldownMs, TTL_MS])) === 1;
  }
}
