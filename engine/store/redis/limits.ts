// Redis adapter of the limits store (concurrent-task slots and daily spend): one script per
// method on the tenant's keys. Request-rate counters are in rate.ts; what a chat asks of the
// limits (its rates, its day's spend, its spend record) runs in its admission and settlement
// scripts (./wallet-batches.ts).
//   <p>{t:<id>}:active        hash   taskId -> acquired at (ms); HLEN = active tasks
//   <p>{t:<id>}:wallet        hash   (./wallets.ts) also s:<YYYY-MM-DD> -> milli-credits spent
//                                    that UTC day, and sd -> the days kept (space-separated):
//                                    days more than RETAIN_DAYS before a day being started are
//                                    dropped. In the wallet hash, so a chat's admission reads its
//                                    day with the wallet's own HMGET and settlement writes it
//                                    with its HSET (no command of its own)
//   <p>{t:<id>}:spend         hash   the days' totals of a gateway before that: moved into the
//                                    wallet (and deleted) by the first write of the new layout
//   <p>{t:<id>}:spend:<ref>   string "day|amount|final(0/1)", TTL REF_TTL_S: a late duplicate of
//                                    a hold's ref is recognised for at least RETAIN_DAYS + 1 days;
//                                    once final, only as long as the wallet remembers the closed
//                                    hold (finalRefTtlMs, store.hold_retention_hours) when shorter
//                                    (post-paid spend, a chat request's, keeps none)
import type { Milli } from '../../util/money.ts';
import type { AcquireResult, LimitsStore, SpendReservation } from '../../limits/store.ts';
import { KeyedBatches } from './batch.ts';
import { Keys, type RedisStoreOptions } from './keys.ts';
import { lua } from './script.ts';
import { WalletBatches } from './wallet-batches.ts';
import { cutoff, RETAIN_DAYS, SPEND_LIB } from './wallet-lib.ts';

const REF_TTL_S = (RETAIN_DAYS + 1) * 86_400;

// KEYS: active. ARGV: task id, limit ('' = none), now.
const ACQUIRE = lua(`
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then return 'already' end
if ARGV[2] ~= '' and redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[2]) then return 'full' end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
return 'acquired'
`);

// KEYS: wallet, ref, old spend. ARGV: day, milli, limit ('' = none), cutoff day, ref ttl (s).
const RESERVE = lua(SPEND_LIB + `
local sd, s = day_get(KEYS[1], KEYS[3], ARGV[1])
if redis.call('EXISTS', KEYS[2]) == 1 then return { 'duplicate', num(s) } end
local milli = tonumber(ARGV[2])
if ARGV[3] ~= '' and s + milli > tonumber(ARGV[3]) then return { 'refused', num(s) } end
redis.call('SET', KEYS[2], ARGV[1] .. '|' .. num(milli) .. '|0', 'EX', ARGV[5])
day_put(KEYS[1], sd, ARGV[1], s + milli, ARGV[4])
return { 'reserved', num(s + milli) }
`);

// KEYS: wallet, old spend. ARGV: day, milli, cutoff day. Post-paid spend keeps no ref (see LimitsStore.recordSpend).
const RECORD = lua(SPEND_LIB + `
local sd, s = day_get(KEYS[1], KEYS[2], ARGV[1])
day_put(KEYS[1], sd, ARGV[1], s + tonumber(ARGV[2]), ARGV[3])
return 1
`);

// KEYS: wallet, ref, old spend. ARGV: actual ('' = cancel: undo the whole reservation and forget
// the ref), ttl ms of the final record ('' = keep its TTL), cutoff day.
const CLOSE = lua(SPEND_LIB + `
local r = redis.call('GET', KEYS[2])
if not r then return 0 end
local day, amount, final = string.match(r, '^(.*)|(-?%d+)|([01])$')
if final == '1' then return 0 end
amount = tonumber(amount)
local sd, s = day_get(KEYS[1], KEYS[3], day)
if ARGV[1] == '' then
  day_put(KEYS[1], sd, day, s - amount, ARGV[3])
  redis.call('DEL', KEYS[2])
  return 1
end
local kept = math.min(math.max(tonumber(ARGV[1]), 0), amount)
day_put(KEYS[1], sd, day, s - (amount - kept), ARGV[3])
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
  /** The tenant's admission scripts, shared with the wallet and rate adapters on this client and prefix. */
  private readonly slot: WalletBatches;

  /**
   * Post-paid spend recorded apart from its settlement (a wallet store that does not record it)
   * per tenant and day: amounts recorded while the previous record is in flight are added up
   * and recorded as one (./batch.ts).
   */
  private readonly records: KeyedBatches<{ day: string; milli: Milli }, void>;

  constructor(opts: RedisLimitsStoreOptions) {
    this.client = opts.client;
    this.keys = new Keys(opts.prefix);
    this.finalTtl = opts.finalRefTtlMs ? String(Math.max(1, Math.round(opts.finalRefTtlMs))) : '';
    this.slot = WalletBatches.of(opts.client, opts.prefix);
    this.records = new KeyedBatches<{ day: string; milli: Milli }, void>(async (key, adds) => {
      const tenantId = key.slice(0, key.lastIndexOf('|'));
      const day = adds[0]!.day;
      const milli = adds.reduce((sum, a) => sum + a.milli, 0);
      await RECORD.run(this.client, [this.k(tenantId, 'wallet'), this.k(tenantId, 'spend')], [day, String(milli), cutoff(day)]);
      return adds.map((): void => undefined);
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
    return (await CLOSE.run(this.client, this.spendKeys(tenantId, ref), ['', '', cutoff(utcDay())])) === 1;
  }

  async finalizeSpend(tenantId: string, ref: string, actual: Milli): Promise<boolean> {
    return (await CLOSE.run(this.client, this.spendKeys(tenantId, ref), [String(actual), this.finalTtl, cutoff(utcDay())])) === 1;
  }

  recordSpend(tenantId: string, day: string, milli: Milli): Promise<void> {
    return this.records.call(`${tenantId}|${day}`, { day, milli });
  }

  /**
   * A day's spend (the daily-limit check before every priced chat): read in the tenant's next
   * admission script, with the request's rate counts and hold when asked in the same turn. Each
   * is answered by a script that started after it was asked, so none sees a value older than its call.
   */
  spent(tenantId: string, day: string): Promise<Milli> {
    return this.slot.spent(tenantId, day);
  }

  /** wallet (the day totals), ref, the old spend hash. */
  private spendKeys(tenantId: string, ref: string): string[] {
    return [this.k(tenantId, 'wallet'), this.k(tenantId, `spend:${ref}`), this.k(tenantId, 'spend')];
  }

  private k(tenantId: string, name: string): string {
    return this.keys.tenant(tenantId) + name;
  }
}

function utcDay(): string {
  return new Date().toISOString().slice(0, 10);
}
