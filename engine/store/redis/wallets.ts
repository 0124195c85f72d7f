// Redis adapter of the wallet store: every method is ONE Lua script on the tenant's wallet keys
// (all in the tenant's slot), mirroring engine/store/memory/wallets.ts step for step, so a hold,
// settle, release, charge or credit happens exactly once per ref however many processes race.
// Holds and closes (settle, release) of one tenant made while its previous one is in flight go
// together in one script run (./wallet-batches.ts). The shared Lua is in ./wallet-lib.ts.
//   <p>{t:<id>}:wallet   hash  b (balance), h (held), th (threshold, absent = default),
//                              as (alert state), la (last alert ms, absent = none), seq,
//                              o:<ref> -> an open hold's record (moved to holds when it closes);
//                              also the tenant's rate counters w:<scope>:<id> (./rate.ts) and
//                              day totals s:<day>, sd (./limits.ts), read and written by the
//                              chat's admission and settlement scripts (./wallet-batches.ts)
//   <p>{t:<id>}:ledger   list  one entry per ledger line kept, JSON [id, at, kind, amount, ref, note];
//                              read, archived and trimmed by ./ledger.ts (seq = lo + index + 1)
//   <p>{t:<id>}:holds    hash  ref -> "state|amount|settled|released|charge|seq|at" (closed holds)
//   <p>{t:<id>}:credits  hash  "<kind>:<ref>" -> seq of the credit entry (idempotent credits)
//   <p>{t:<id>}:closed   list  "<forget at ms>|<ref>" per closed hold, in closing order; only with
//                              a closedHoldTtlMs, like the memory adapter's closed-hold retention
import type { Milli } from '../../util/money.ts';
import type {
  AlertState,
  ArchiveBatch,
  ArchiveClaim,
  CloseResult,
  CreditResult,
  HoldRecord,
  HoldOptions,
  HoldResult,
  HoldState,
  LedgerPage,
  LowBalanceDecision,
  LowBalanceInput,
  SettleOptions,
  WalletRecord,
  WalletSnapshot,
  WalletStore,
  TrimRequest,
} from '../../billing/store.ts';
import { systemClock, type Clock } from '../../util/clock.ts';
import { prefixedId } from '../../util/ids.ts';
import { Keys, type RedisStoreOptions } from './keys.ts';
import { lua } from './script.ts';
import { RedisLedger, toEntry } from './ledger.ts';
import { WALLET_LIB } from './wallet-lib.ts';
import { WalletBatches } from './wallet-batches.ts';

const wlua = (body: string, readOnly = false) => lua(WALLET_LIB + body, { readOnly });

// KEYS: wallet, ledger, credits. ARGV: kind, ref, amount, note, at, entry id.
const CREDIT = wlua(`
local w = wget(KEYS[1])
local ck = ARGV[1] .. ':' .. ARGV[2]
local seq = redis.call('HGET', KEYS[3], ck)
-- "<seq>\\n<line>" once the line has moved to the archive (redis/ledger.ts TRIM), else the seq.
if seq and string.find(seq, '\\n', 1, true) then return result('duplicate', seq, w) end
if seq then return result('duplicate', seq .. '\\n' .. redis.call('LINDEX', KEYS[2], tonumber(seq) - 1 - tonumber(redis.call('HGET', KEYS[1], 'lo') or '0')), w) end
local s, e = append(KEYS[2], w, ARGV[6], ARGV[5], ARGV[1], tonumber(ARGV[3]), ARGV[2], ARGV[4])
redis.call('HSET', KEYS[3], ck, num(s))
w.b = w.b + tonumber(ARGV[3])
wsave(KEYS[1], w)
return result('credited', num(s) .. '\\n' .. e, w)
`);

// KEYS: wallet, ledger, holds, open, closed. ARGV: ref, amount, note, at, id1, id2, now ms,
// closed-hold ttl ms.
const CHARGE = wlua(`
local w, open = wget(KEYS[1], { 'o:' .. ARGV[1] })
if open[1] then return result('duplicate', open[1], w) end
local ex = redis.call('HGET', KEYS[3], ARGV[1])
if ex then return result('duplicate', ex, w) end
local amount, now, ttl = tonumber(ARGV[2]), tonumber(ARGV[7]), tonumber(ARGV[8])
-- A due shelf moves first: its holds closed before this one, so the forget list stays in order.
local gone = {}
if shelf_due(w, now, ttl) then shelve(KEYS[1], KEYS[3], KEYS[5], w, now, ttl, gone) end
local seq = append(KEYS[2], w, ARGV[5], ARGV[4], 'hold', amount, ARGV[1], ARGV[3])
append(KEYS[2], w, ARGV[6], ARGV[4], 'settle', amount, ARGV[1], ARGV[3])
local h = { state = 'settled', amount = amount, settled = amount, released = 0, charge = '1', seq = seq, at = ARGV[4] }
redis.call('HSET', KEYS[3], ARGV[1], hold_str(h))
forget(KEYS[3], KEYS[5], w, { num(now + ttl) .. '|' .. ARGV[1] }, now, ttl)
if #gone > 0 then redis.call('HDEL', KEYS[1], unpack(gone)) end
w.b = w.b - amount
wsave(KEYS[1], w)
return result('closed', hold_str(h), w)
`);

// KEYS: wallet. ARGV: threshold ('' = back to the default).
const SET_THRESHOLD = wlua(`
if ARGV[1] == '' then redis.call('HDEL', KEYS[1], 'th') else redis.call('HSET', KEYS[1], 'th', ARGV[1]) end
return result('', '', wget(KEYS[1]))
`);

// KEYS: wallet. ARGV: trigger, default threshold, subscribed (1/0), now, throttle ms.
// The Lua twin of applyLowBalance() in billing/store.ts.
const LOW_BALANCE = wlua(`
local w = wget(KEYS[1])
local available = w.b - w.h
local threshold = tonumber(ARGV[2])
if w.th ~= '' then threshold = tonumber(w.th) end
local alert, state, la, recovered = 0, w.as, w.la, 0
if available >= threshold then
  state = 'NORMAL'
  if w.as == 'ALERTED' then recovered = 1 end
elseif ARGV[1] ~= 'settlement' or ARGV[3] ~= '1' then
  -- unchanged: credits never alert, and without a subscriber the edge is not consumed
elseif w.as == 'NORMAL' then
  alert, state, la = 1, 'ALERTED', ARGV[4]
elseif w.la == '' or tonumber(ARGV[4]) - tonumber(w.la) >= tonumber(ARGV[5]) then
  alert, state, la = 1, 'ALERTED', ARGV[4]
end
redis.call('HSET', KEYS[1], 'as', state)
if la ~= '' then redis.call('HSET', KEYS[1], 'la', la) end
return { alert, state, recovered, num(available), num(threshold) }
`);

const HOLD_STATE: Record<string, HoldState> = { open: 'open', settled: 'settled', released: 'released' };

export interface RedisWalletStoreOptions extends RedisStoreOptions {
  /** Settled and released holds are forgotten this long after they closed; 0 (the default): kept. */
  closedHoldTtlMs?: number;
  /** Decides when a closed hold is due (the callers' clock, as in the memory adapter). */
  clock?: Clock;
  /**
   * The RedisLimitsStore on the same client and prefix keeps the daily spend: a settlement with a
   * spendDay adds to it in its own script (SettleOptions). Off: the caller records spend.
   */
  recordsSpend?: boolean;
}

export class RedisWalletStore implements WalletStore {
  private readonly client: RedisStoreOptions['client'];
  private readonly keys: Keys;
  private readonly closedHoldTtlMs: number;
  private readonly clock: Clock;
  private readonly recordsSpend: boolean;
  private readonly ledger: RedisLedger;
  /** Holds and closes, grouped per tenant (./wallet-batches.ts). */
  private readonly batches: WalletBatches;

  constructor(opts: RedisWalletStoreOptions) {
    this.client = opts.client;
    this.keys = new Keys(opts.prefix);
    this.closedHoldTtlMs = opts.closedHoldTtlMs ?? 0;
    if (!Number.isSafeInteger(this.closedHoldTtlMs) || this.closedHoldTtlMs < 0) throw new Error('closedHoldTtlMs must be a non-negative integer');
    this.clock = opts.clock ?? systemClock;
    this.recordsSpend = opts.recordsSpend ?? false;
    this.ledger = new RedisLedger(this.client, (t, name) => this.k(t, name));
    this.batches = WalletBatches.of(this.client, opts.prefix);
  }

  async get(tenantId: string): Promise<WalletRecord> {
    const v = await this.client.hmget(this.k(tenantId, 'wallet'), 'b', 'h', 'th', 'as', 'la', 'seq');
    return toWallet(tenantId, v.map((x) => x ?? ''));
  }

  async credit(tenantId: string, kind: 'topup' | 'adjustment', ref: string, amount: Milli, note: string, at: string): Promise<CreditResult> {
    const r = await this.script(CREDIT, tenantId, 'credits', [kind, ref, String(amount), note, at, prefixedId('led_')]);
    const nl = r.item.indexOf('\n');
    return { status: r.status as CreditResult['status'], entry: toEntry(r.item.slice(nl + 1), Number(r.item.slice(0, nl))), wallet: toWallet(tenantId, r.wallet) };
  }

  // hold, settle and release are not async functions: a chat makes one of each, and each layer
  // of promises on its path costs (docs/performance.md, Redis-mode chat CPU).
  hold(tenantId: string, ref: string, amount: Milli, note: string, at: string, opts: HoldOptions = {}): Promise<HoldResult> {
    return this.batches.hold(tenantId, [ref, String(amount), note, at, prefixedId('led_'), String((opts.upTo ? 1 : 0) + (opts.newRef ? 2 : 0))]).then((r) => {
      const out: HoldResult = { status: r.status as HoldResult['status'], wallet: toWallet(tenantId, r.wallet) };
      if (r.item !== '') out.hold = toHold(ref, r.item).hold;
      return out;
    });
  }

  settle(tenantId: string, ref: string, actual: Milli, note: string, at: string, opts: SettleOptions = {}): Promise<CloseResult> {
    const day = this.recordsSpend ? (opts.spendDay ?? '') : '';
    return this.batches.close(tenantId, [ref, String(actual), note, at, prefixedId('led_'), prefixedId('led_'), day], this.forgetArgs()).then((step) => {
      const r = closeResult(tenantId, ref, step);
      if (day !== '') r.spendRecorded = true;
      return r;
    });
  }

  release(tenantId: string, ref: string, note: string, at: string): Promise<CloseResult> {
    return this.batches.close(tenantId, [ref, '', note, at, prefixedId('led_'), prefixedId('led_'), ''], this.forgetArgs()).then((step) => closeResult(tenantId, ref, step));
  }

  async charge(tenantId: string, ref: string, amount: Milli, note: string, at: string): Promise<CloseResult> {
    return closeResult(tenantId, ref, await this.script(CHARGE, tenantId, 'holds', [ref, String(amount), note, at, prefixedId('led_'), prefixedId('led_'), ...this.forgetArgs()]));
  }

  list(tenantId: string, limit: number, beforeSeq?: number): Promise<LedgerPage> {
    return this.ledger.list(tenantId, limit, beforeSeq);
  }

  claimArchive(tenantId: string, claim: ArchiveClaim): Promise<ArchiveBatch> {
    return this.ledger.claimArchive(tenantId, claim);
  }

  trimArchived(tenantId: string, trim: TrimRequest): Promise<boolean> {
    return this.ledger.trimArchived(tenantId, trim);
  }

  async setThreshold(tenantId: string, threshold: Milli | null): Promise<WalletRecord> {
    const r = (await SET_THRESHOLD.run(this.client, [this.k(tenantId, 'wallet')], [threshold === null ? '' : String(threshold)])) as string[];
    return toWallet(tenantId, r.slice(2));
  }

  async lowBalance(tenantId: string, input: LowBalanceInput): Promise<LowBalanceDecision> {
    const [alert, state, recovered, available, threshold] = (await LOW_BALANCE.run(this.client, [this.k(tenantId, 'wallet')], [
      input.trigger,
      String(input.defaultThreshold),
      input.subscribed ? '1' : '0',
      String(input.now),
      String(input.throttleMs),
    ])) as [number, string, number, string, string];
    return { alert: alert === 1, state: state as AlertState, recovered: recovered === 1, available: Number(available), threshold: Number(threshold) };
  }

  async openHolds(tenantId: string): Promise<HoldRecord[]> {
    const holds = openInWallet(await this.client.hgetall(this.k(tenantId, 'wallet'))).map((h) => h.hold);
    // Holds taken before open holds moved into the wallet: the open set and the holds hash.
    const refs = await this.client.smembers(this.k(tenantId, 'open'));
    const values = refs.length ? await this.client.hmget(this.k(tenantId, 'holds'), ...refs) : [];
    refs.forEach((ref, i) => values[i] && holds.push(toHold(ref, values[i]!).hold));
    return holds.filter((h) => h.state === 'open' && h.amount > 0);
  }

  async snapshot(tenantId: string): Promise<WalletSnapshot> {
    const { w, entries, holds, opening, wallet } = await this.ledger.snapshot(tenantId);
    const hs: { seq: number; hold: HoldRecord }[] = [];
    for (let i = 0; i < holds.length; i += 2) hs.push(toHold(holds[i]!, holds[i + 1]!));
    hs.push(...openInWallet(wallet));
    hs.sort((a, b) => a.seq - b.seq); // creation order, like the memory adapter
    return {
      wallet: toWallet(tenantId, w),
      entries,
      holds: hs.map((h) => h.hold),
      ...(opening ? { opening } : {}),
    };
  }

  /** now and the closed-hold ttl, the last two ARGV of CHARGE (and the first two of the batched CLOSE). */
  private forgetArgs(): [string, string] {
    return [String(this.clock.now()), String(this.closedHoldTtlMs)];
  }

  private async script(script: typeof CHARGE, tenantId: string, third: 'holds' | 'credits', args: string[]): Promise<{ status: string; item: string; wallet: string[] }> {
    const r = (await script.run(this.client, this.walletKeys(tenantId, third), args)) as string[];
    return { status: r[0]!, item: r[1]!, wallet: r.slice(2) };
  }

  private walletKeys(tenantId: string, third: 'holds' | 'credits'): string[] {
    const keys = [this.k(tenantId, 'wallet'), this.k(tenantId, 'ledger'), this.k(tenantId, third)];
    if (third === 'holds') keys.push(this.k(tenantId, 'open'), this.k(tenantId, 'closed'));
    return keys;
  }

  private k(tenantId: string, name: string): string {
    return this.keys.tenant(tenantId) + name;
  }
}

function closeResult(tenantId: string, ref: string, r: { status: string; item: string; wallet: string[] }): CloseResult {
  const out: CloseResult = { status: r.status as CloseResult['status'], wallet: toWallet(tenantId, r.wallet) };
  if (r.item !== '') out.hold = toHold(ref, r.item).hold;
  return out;
}

/** [b, h, th, as, la, seq] as the scripts return them ('' = absent). */
function toWallet(tenantId: string, v: readonly string[]): WalletRecord {
  const [b, h, th, as, la, seq] = v;
  return {
    tenantId,
    balance: Number(b || 0),
    held: Number(h || 0),
    threshold: th ? Number(th) : null,
    alertState: (as || 'NORMAL') as AlertState,
    lastAlertAt: la ? Number(la) : null,
    seq: Number(seq || 0),
  };
}


/** The open holds among a wallet hash's fields (o:<ref> → record). */
function openInWallet(fields: Record<string, string>): { seq: number; hold: HoldRecord }[] {
  return Object.entries(fields).flatMap(([f, v]) => (f.startsWith('o:') ? [toHold(f.slice(2), v)] : []));
}

function toHold(ref: string, s: string): { seq: number; hold: HoldRecord } {
  const m = /^([a-z]+)\|(-?\d+)\|(-?\d+)\|(-?\d+)\|([01])\|(\d+)\|(.*)$/s.exec(s);
  if (!m) throw new Error(`malformed hold record for ${ref}`);
  const state = HOLD_STATE[m[1]!];
  if (!state) throw new Error(`malformed hold state for ${ref}`);
  return {
    seq: Number(m[6]),
    hold: { ref, amount: Number(m[2]), state, settled: Number(m[3]), released: Number(m[4]), at: m[7]!, charge: m[5] === '1' },
  };
}
