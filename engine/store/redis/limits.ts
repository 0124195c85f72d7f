// Redis adapter of the limits store (concurrent-task slots and daily spend): one script per
// method on the tenant's keys. Request-rate counters are in rate.ts; what a chat asks of the
// limits (its rates, its day's spend, its spend record) runs in its admission and settlement
// scripts (./wallet-batches.ts).
//   <p>{t:<id>}:active        hash   taskId -> acquired at (ms); HLEN = active tasks. A task's create
//                                    takes it with its spend reservation (ADMIT_TASK), its end frees it
//                                    with the reservation's close (CLOSE_TASK): one script each
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
import type { AcquireResult, LimitsStore, SpendRequest, SpendReservation, TaskAdmission } from '../../limits/store.ts';
import { KeyedBatches } from './batch.ts';
import { Keys, type RedisStoreOptions } from './keys.ts';
import { lua } from './script.ts';
import { WalletBatches } from './wallet-batches.ts';
import { cutoff, RETAIN_DAYS, SPEND_LIB } from './wallet-lib.ts';

const REF_TTL_S = (RETAIN_DAYS + 1) * 86_400;

// A task's slot: 'already' when it holds one, 'full' when the tenant has `limit` ('' = none) active.
const SLOT_LIB = `
local function slot_take(A, id, limit, now)
  if redis.call('HEXISTS', A, id) == 1 then return 'already' end
  if limit ~= '' and redis.call('HLEN', A) >= tonumber(limit) then return 'full' end
  redis.call('HSET', A, id, now)
  return 'acquired'
end
`;

// A spend reservation of milli for the ref R on day unless past limit ('' = none): status, the day's spend.
const RESERVE_LIB = SPEND_LIB + `
local function spend_reserve(W, R, S, day, milli, limit, cutoff_day, ttl)
  local sd, s = day_get(W, S, day)
  if redis.call('EXISTS', R) == 1 then return 'duplicate', s end
  milli = tonumber(milli)
  if limit ~= '' and s + milli > tonumber(limit) then return 'refused', s end
  redis.call('SET', R, day .. '|' .. num(milli) .. '|0', 'EX', ttl)
  day_put(W, sd, day, s + milli, cutoff_day)
  return 'reserved', s + milli
end
`;

// KEYS: wallet, ref, old spend. ARGV: day, milli, limit ('' = none), cutoff day, ref ttl (s).
const RESERVE = lua(RESERVE_LIB + `
local status, s = spend_reserve(KEYS[1], KEYS[2], KEYS[3], ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5])
return { status, num(s) }
`);

// A task's admission (its slot, then reserveSpend of its id unless the slot is full) in one
// script and one round trip: the same two steps, on keys of the tenant's slot.
// KEYS: active, wallet, ref, old spend. ARGV: task id, slot limit, now, day, milli, spend limit,
// cutoff day, ref ttl (s).
const ADMIT_TASK = lua(SLOT_LIB + RESERVE_LIB + `
local slot = slot_take(KEYS[1], ARGV[1], ARGV[2], ARGV[3])
if slot == 'full' then return { slot } end
local status, s = spend_reserve(KEYS[2], KEYS[3], KEYS[4], ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8])
return { slot, status, num(s) }
`);

// KEYS: wallet, old spend. ARGV: day, milli, cutoff day. Post-paid spend keeps no ref (see LimitsStore.recordSpend).
const RECORD = lua(SPEND_LIB + `
local sd, s = day_get(KEYS[1], KEYS[2], ARGV[1])
day_put(KEYS[1], sd, ARGV[1], s + tonumber(ARGV[2]), ARGV[3])
return 1
`);

// The reservation R closed: '' actual = cancel (undo it all and forget the ref), else lowered to
// min(actual, reserved) and marked final, its record kept ttl ms at most ('' = keep its TTL).
// 1 when closed, 0 when unknown or already final.
const CLOSE_LIB = SPEND_LIB + `
local function spend_close(W, R, S, actual, ttl, cutoff_day)
  local r = redis.call('GET', R)
  if not r then return 0 end
  local day, amount, final = string.match(r, '^(.*)|(-?%d+)|([01])$')
  if final == '1' then return 0 end
  amount = tonumber(amount)
  local sd, s = day_get(W, S, day)
  if actual == '' then
    day_put(W, sd, day, s - amount, cutoff_day)
    redis.call('DEL', R)
    return 1
  end
  local kept = math.min(math.max(tonumber(actual), 0), amount)
  day_put(W, sd, day, s - (amount - kept), cutoff_day)
  if ttl ~= '' and redis.call('PTTL', R) > tonumber(ttl) then
    redis.call('SET', R, day .. '|' .. num(kept) .. '|1', 'PX', ttl)
  else
    redis.call('SET', R, day .. '|' .. num(kept) .. '|1', 'KEEPTTL')
  end
  return 1
end
`;

// KEYS: wallet, ref, old spend. ARGV: actual ('' = cancel), ttl ms of the final record ('' = keep its TTL), cutoff day.
const CLOSE = lua(CLOSE_LIB + 'return spend_close(KEYS[1], KEYS[2], KEYS[3], ARGV[1], ARGV[2], ARGV[3])');

// A task's end (CLOSE of its reservation, then its slot's HDEL) in one script: one command and
// one round trip less per task life than the two. KEYS: wallet, ref, old spend, active.
// ARGV: as CLOSE's, then the task id. Returns { closed (1/0), slot freed (1/0) }.
const CLOSE_TASK = lua(CLOSE_LIB + `
local closed = spend_close(KEYS[1], KEYS[2], KEYS[3], ARGV[1], ARGV[2], ARGV[3])
return { closed, redis.call('HDEL', KEYS[4], ARGV[4]) }
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

  async admitTask(tenantId: string, taskId: string, limit: number | null, now: number, spend: SpendRequest): Promise<TaskAdmission> {
    const [slot, status, spent] = (await ADMIT_TASK.run(this.client, [this.k(tenantId, 'active'), ...this.spendKeys(tenantId, taskId)], [
      taskId,
      limit === null ? '' : String(limit),
      String(now),
      spend.day,
      String(spend.milli),
      spend.limit === null ? '' : String(spend.limit),
      cutoff(spend.day),
      String(REF_TTL_S),
    ])) as [AcquireResult, SpendReservation['status']?, string?];
    return slot === 'full' ? { slot } : { slot, spend: { status: status!, spent: Number(spent) } };
  }

  async releaseTask(tenantId: string, taskId: string): Promise<boolean> {
    return (await this.client.hdel(this.k(tenantId, 'active'), taskId)) === 1;
  }

  async closeTask(tenantId: string, taskId: string, actual: Milli | null): Promise<{ spend: boolean; slot: boolean }> {
    const keys = [...this.spendKeys(tenantId, taskId), this.k(tenantId, 'active')];
    const args = actual === null ? ['', '', cutoff(utcDay()), taskId] : [String(actual), this.finalTtl, cutoff(utcDay()), taskId];
    const [spend, slot] = (await CLOSE_TASK.run(this.client, keys, args)) as [number, number];
    return { spend: spend === 1, slot: slot === 1 };
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
  spent(tenantId: string, day: string, refusedAbove?: Milli): Promise<Milli> {
    return this.slot.spent(tenantId, day, refusedAbove);
  }

  /** The steps `run` asks go in one STEPS run, the hold judged by the counts and the spend (WalletBatches.gate). */
  gate(tenantId: string, run: () => void): void {
    this.slot.gate(tenantId, run);
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
