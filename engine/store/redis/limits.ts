// Redis adapter of the limits store (concurrent-task slots and daily spend): one script per
// method on the tenant's keys. Request-rate counters are in rate.ts.
//   <p>{t:<id>}:active        hash   taskId -> acquired at (ms); HLEN = active tasks
//   <p>{t:<id>}:spend         hash   "YYYY-MM-DD" -> milli-credits spent that UTC day; days more
//                                    than RETAIN_DAYS before the day being written are dropped
//   <p>{t:<id>}:spend:<ref>   string "day|amount|final(0/1)", TTL REF_TTL_S: a late duplicate of
//                                    a hold's ref is recognised for at least RETAIN_DAYS + 1 days;
//                                    once final, only as long as the wallet remembers the closed
//                                    hold (finalRefTtlMs, store.hold_retention_hours) when shorter
//                                    (post-paid spend, a chat request's, keeps none)
//   <p>limits:overrides-version string   a counter bumped on every change of a tenant's limit
//                                    overrides; every process reads it a few times a second
import type { Milli } from '../../util/money.ts';
import type { AcquireResult, LimitsStore, SpendReservation } from '../../limits/store.ts';
import { KeyedBatches } from './batch.ts';
import { Keys, type RedisStoreOptions } from './keys.ts';
import { lua } from './script.ts';

const RETAIN_DAYS = 3;
const REF_TTL_S = (RETAIN_DAYS + 1) * 86_400;

// KEYS: active. ARGV: task id, limit ('' = none), now.
const ACQUIRE = lua(`
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then return 'already' end
if ARGV[2] ~= '' and redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[2]) then return 'full' end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
return 'acquired'
`);

// Also the wallet's CLOSE (./wallet-batches.ts), which records a chat's post-paid spend in the
// step that settles it. add_spend prunes only when it started a day's field (a new day): one
// HINCRBY per record otherwise.
export const SPEND_LIB = `
local function prune(D, cutoff)
  if redis.call('HLEN', D) > ${RETAIN_DAYS} then
    for _, d in ipairs(redis.call('HKEYS', D)) do
      if d < cutoff then redis.call('HDEL', D, d) end
    end
  end
end
local function spent(D, day) return tonumber(redis.call('HGET', D, day) or '0') end
local function add_spend(D, day, milli, cutoff)
  if redis.call('HINCRBY', D, day, milli) == milli then prune(D, cutoff) end
end
`;

// KEYS: days, ref. ARGV: day, milli, limit ('' = none), cutoff day, ref ttl (s).
const RESERVE = lua(SPEND_LIB + `
prune(KEYS[1], ARGV[4])
local s = spent(KEYS[1], ARGV[1])
if redis.call('EXISTS', KEYS[2]) == 1 then return { 'duplicate', num(s) } end
local milli = tonumber(ARGV[2])
if ARGV[3] ~= '' and s + milli > tonumber(ARGV[3]) then return { 'refused', num(s) } end
redis.call('SET', KEYS[2], ARGV[1] .. '|' .. num(milli) .. '|0', 'EX', ARGV[5])
redis.call('HSET', KEYS[1], ARGV[1], num(s + milli))
return { 'reserved', num(s + milli) }
`);

// KEYS: days. ARGV: day, milli, cutoff day. Post-paid spend keeps no ref (see LimitsStore.recordSpend).
const RECORD = lua(SPEND_LIB + `
add_spend(KEYS[1], ARGV[1], tonumber(ARGV[2]), ARGV[3])
return 1
`);

// KEYS: days, ref. ARGV: actual ('' = cancel: undo the whole reservation and forget the ref),
// ttl ms of the final record ('' = keep its TTL).
const CLOSE = lua(SPEND_LIB + `
local r = redis.call('GET', KEYS[2])
if not r then return 0 end
local day, amount, final = string.match(r, '^(.*)|(-?%d+)|([01])$')
if final == '1' then return 0 end
amount = tonumber(amount)
if ARGV[1] == '' then
  redis.call('HSET', KEYS[1], day, num(spent(KEYS[1], day) - amount))
  redis.call('DEL', KEYS[2])
  return 1
end
local kept = math.min(math.max(tonumber(ARGV[1]), 0), amount)
redis.call('HSET', KEYS[1], day, num(spent(KEYS[1], day) - (amount - kept)))
if ARGV[2] ~= '' and redis.call('PTTL', KEYS[2]) > tonumber(ARGV[2]) then
  redis.call('SET', KEYS[2], day .. '|' .. num(kept) .. '|1', 'PX', ARGV[2])
else
  redis.call('SET', KEYS[2], day .. '|' .. num(kept) .. '|1', 'KEEPTTL')
end
return 1
`);

export interface RedisLimitsStoreOptions extends RedisStoreOptions {
  /**
   * A finalized reservation is kept this long at most (a repeated finalize is a no-op meanwhile):
   * the wallet's closed-hold retention, past which a repeat would count again there anyway.
   * Default: its reservation's TTL (RETAIN_DAYS + 1 days).
   */
  finalRefTtlMs?: number;
}

export class RedisLimitsStore implements LimitsStore {
  private readonly client: RedisStoreOptions['client'];
  private readonly keys: Keys;
  private readonly finalTtl: string;

  /**
   * Post-paid spend (a chat's, at every settlement) per tenant and day: amounts recorded while the
   * previous record is in flight are added up and recorded as one (./batch.ts).
   */
  private readonly records: KeyedBatches<{ day: string; milli: Milli }, void>;

  /**
   * A day's spend (the daily-limit check before every priced chat): reads of a tenant's day made
   * while its previous read is in flight share the next HGET (./batch.ts). Each is answered by a
   * read that started after it was asked, so none sees a value older than its call.
   */
  private readonly reads: KeyedBatches<string, Milli>;

  constructor(opts: RedisLimitsStoreOptions) {
    this.client = opts.client;
    this.keys = new Keys(opts.prefix);
    this.finalTtl = opts.finalRefTtlMs ? String(Math.max(1, Math.round(opts.finalRefTtlMs))) : '';
    this.records = new KeyedBatches<{ day: string; milli: Milli }, void>(async (key, adds) => {
      const tenantId = key.slice(0, key.lastIndexOf('|'));
      const day = adds[0]!.day;
      const milli = adds.reduce((sum, a) => sum + a.milli, 0);
      await RECORD.run(this.client, [this.k(tenantId, 'spend')], [day, String(milli), cutoff(day)]);
      return adds.map((): void => undefined);
    });
    this.reads = new KeyedBatches<string, Milli>(async (key, days) => {
      const tenantId = key.slice(0, key.lastIndexOf('|'));
      const spent = Number((await this.client.hget(this.k(tenantId, 'spend'), days[0]!)) ?? 0);
      return days.map(() => spent);
    });
  }

  async acquireTask(tenantId: string, taskId: string, limit: number | null, now: number): Promise<AcquireResult> {
    return (await ACQUIRE.run(this.client, [this.k(tenantId, 'active')], [taskId, limit === null ? '' : String(limit), String(now)])) as AcquireResult;
  }

  async releaseTask(tenantId: string, taskId: string): Promise<boolean> {
    return (await this.client.hdel(this.k(tenantId, 'active'), taskId)) === 1;
  }

  async activeTasks(tenantId: string): Promise<number> {
    return this.client.hlen(this.k(tenantId, 'active'));
  }

  async reserveSpend(tenantId: string, ref: string, day: string, milli: Milli, limit: Milli | null): Promise<SpendReservation> {
    const [status, spent] = (await RESERVE.run(this.client, this.spendKeys(tenantId, ref), [
      day,
      String(milli),
      limit === null ? '' : String(limit),
      cutoff(day),
      String(REF_TTL_S),
    ])) as [SpendReservation['status'], string];
    return { status, spent: Number(spent) };
  }

  async cancelSpend(tenantId: string, ref: string): Promise<boolean> {
    return (await CLOSE.run(this.client, this.spendKeys(tenantId, ref), ['', ''])) === 1;
  }

  async finalizeSpend(tenantId: string, ref: string, actual: Milli): Promise<boolean> {
    return (await CLOSE.run(this.client, this.spendKeys(tenantId, ref), [String(actual), this.finalTtl])) === 1;
  }

  recordSpend(tenantId: string, day: string, milli: Milli): Promise<void> {
    return this.records.call(`${tenantId}|${day}`, { day, milli });
  }

  spent(tenantId: string, day: string): Promise<Milli> {
    return this.reads.call(`${tenantId}|${day}`, day);
  }

  private spendKeys(tenantId: string, ref: string): string[] {
    return [this.k(tenantId, 'spend'), this.k(tenantId, `spend:${ref}`)];
  }

  private k(tenantId: string, name: string): string {
    return this.keys.tenant(tenantId) + name;
  }

  async overridesVersion(): Promise<number> {
    return Number((await this.client.get(this.versionKey)) ?? 0);
  }

  async bumpOverridesVersion(): Promise<number> {
    return this.client.incr(this.versionKey);
  }

  private get versionKey(): string {
    return this.keys.limitOverridesVersion();
  }
}

/** The oldest day kept when writing `day` (as in the memory adapter). */
export function cutoff(day: string): string {
  return new Date(Date.parse(`${day}T00:00:00Z`) - RETAIN_DAYS * 86_400_000).toISOString().slice(0, 10);
}
