// A tenant's holds and closes (settle, release) as groups (./batch.ts): every hold that waited
// for the tenant's previous hold script goes in the next one, and closes likewise. One script
// per group on the tenant's slot, each call handled in order exactly as alone (duplicates,
// insufficient funds, the up-to rule): the wallet read once and written once, the ledger lines
// in one RPUSH, the hold records in one HSET. So a group of any size costs the commands one call
// did (5 for holds; 8 for closes, the chat's spend record included; more when closed holds fall
// due, counted in docs/performance.md).
import { KeyedBatches } from './batch.ts';
import type { RedisClient } from './keys.ts';
import { cutoff, SPEND_LIB } from './limits.ts';
import { lua } from './script.ts';
import { WALLET_LIB } from './wallet-lib.ts';

// What both scripts do per call and at the end: the hold record kept (for a later call of the
// group with the same ref, and for the one HSET), the call's answer, and the lines and records written.
const BATCH_LIB = WALLET_LIB + `
local function keep(made, sets, ref, item)
  sets[#sets + 1] = ref
  sets[#sets + 1] = item
  made[ref] = item
end
local function answer(out, status, item, w)
  for _, v in ipairs({ status, item, num(w.b), num(w.h), num(w.seq) }) do out[#out + 1] = v end
end
local function write(L, H, lines, sets)
  redis.call('RPUSH', L, unpack(lines))
  redis.call('HSET', H, unpack(sets))
end
`;

// KEYS: wallet, ledger, holds (closed ones). ARGV: per hold: ref, amount, note, at, entry id, up
// to ('1': hold min(amount, available), refused only when nothing is available). The new hold's
// record is the wallet's field o:<ref> until it closes.
// Returns { th, as, la, { status, item, b, h, seq per hold } }.
const HOLD = lua(BATCH_LIB + `
local n = #ARGV / 6
local refs, ofs = {}, {}
for i = 1, n do
  refs[i] = ARGV[(i - 1) * 6 + 1]
  ofs[i] = 'o:' .. refs[i]
end
local w, open = wget(KEYS[1], ofs)
local ex = redis.call('HMGET', KEYS[3], unpack(refs))
local out, lines, osets, made = {}, {}, {}, {}
for i = 1, n do
  local o = (i - 1) * 6
  local ref, amount, at = ARGV[o + 1], tonumber(ARGV[o + 2]), ARGV[o + 4]
  local status, item = 'held', made[ref] or open[i] or ex[i]
  if item then
    status = 'duplicate'
  else
    item = ''
    if ARGV[o + 6] == '1' and amount > 0 then
      if w.b - w.h <= 0 then status = 'insufficient' else amount = math.min(amount, w.b - w.h) end
    end
    if status == 'held' and amount > 0 and amount > w.b - w.h then status = 'insufficient' end
    if status == 'held' then
      lines[#lines + 1] = line(w, ARGV[o + 5], at, 'hold', amount, ref, ARGV[o + 3])
      item = hold_str({ state = 'open', amount = amount, settled = 0, released = 0, charge = '0', seq = w.seq, at = at })
      osets[#osets + 1] = ofs[i]
      osets[#osets + 1] = item
      made[ref] = item
      w.h = w.h + amount
    end
  end
  answer(out, status, item, w)
end
if #lines > 0 then
  redis.call('RPUSH', KEYS[2], unpack(lines))
  wsave(KEYS[1], w, osets)
end
return { w.th, w.as, w.la, out }
`);

// KEYS: wallet, ledger, holds, open, closed, spend (the limits' days, ./limits.ts). ARGV: now ms,
// closed-hold ttl ms, the oldest spend day kept, then per close: ref, actual ('' = release
// everything), note, at, id1, id2, spend day ('' = none: a settlement whose spend is recorded
// here, in the same step, names the UTC day it counts on).
// Returns { th, as, la, { status, item, b, h, seq per close } }.
const CLOSE = lua(BATCH_LIB + SPEND_LIB + `
local n = (#ARGV - 3) / 7
local refs, ofs = {}, {}
for i = 1, n do
  refs[i] = ARGV[3 + (i - 1) * 7 + 1]
  ofs[i] = 'o:' .. refs[i]
end
local w, open = wget(KEYS[1], ofs)
-- A ref not open in the wallet: closed already (a duplicate), unknown, or a hold taken before open
-- holds moved into the wallet (open in the holds hash and the open set).
local miss = {}
for i = 1, n do if not open[i] then miss[#miss + 1] = refs[i] end end
local ex = {}
if #miss > 0 then
  local v = redis.call('HMGET', KEYS[3], unpack(miss))
  for j, r in ipairs(miss) do ex[r] = v[j] end
end
local out, lines, sets, shut, made, days, gone, old = {}, {}, {}, {}, {}, {}, {}, {}
for i = 1, n do
  local o = 3 + (i - 1) * 7
  local ref, note, at = ARGV[o + 1], ARGV[o + 3], ARGV[o + 4]
  local status, item = 'closed', made[ref] or open[i] or ex[ref]
  if not item then
    status, item = 'unknown', ''
  else
    local h = hold_parse(item)
    if h.state ~= 'open' then
      status = 'duplicate'
    else
      local settle = ARGV[o + 2] ~= ''
      local settled = 0
      if settle then settled = math.min(math.max(tonumber(ARGV[o + 2]), 0), h.amount) end
      local released = h.amount - settled
      local ids = { ARGV[o + 5], ARGV[o + 6] }
      local k = 0
      if settle then
        k = k + 1
        lines[#lines + 1] = line(w, ids[k], at, 'settle', settled, ref, note)
      end
      if (not settle) or released > 0 then
        k = k + 1
        lines[#lines + 1] = line(w, ids[k], at, 'release', released, ref, note)
      end
      if settle then h.state = 'settled' else h.state = 'released' end
      h.settled = settled
      h.released = released
      local day = ARGV[o + 7]
      if day ~= '' and settled > 0 then days[day] = (days[day] or 0) + settled end
      item = hold_str(h)
      if open[i] then gone[#gone + 1] = ofs[i] else old[#old + 1] = ref end
      keep(made, sets, ref, item)
      shut[#shut + 1] = ref
      w.h = w.h - h.amount
      w.b = w.b - settled
    end
  end
  answer(out, status, item, w)
end
if #lines > 0 then
  write(KEYS[2], KEYS[3], lines, sets)
  if #gone > 0 then redis.call('HDEL', KEYS[1], unpack(gone)) end
  if #old > 0 then redis.call('SREM', KEYS[4], unpack(old)) end
  forget(KEYS[3], KEYS[5], w, shut, tonumber(ARGV[1]), tonumber(ARGV[2]))
  wsave(KEYS[1], w)
  for day, milli in pairs(days) do add_spend(KEYS[6], day, milli, ARGV[3]) end
end
return { w.th, w.as, w.la, out }
`);

/** One call's outcome: its status, the hold record ('' when none), the wallet after it (b, h, th, as, la, seq). */
export interface WalletStep {
  status: string;
  item: string;
  wallet: string[];
}

/** A hold: ref, amount, note, at, entry id, up to ('1' / '0'). */
type HoldArgs = [string, string, string, string, string, string];
/** A close: ref, actual ('' = release), note, at, id1, id2, spend day ('' = none). */
type CloseArgs = [string, string, string, string, string, string, string];

export class WalletBatches {
  private readonly holds: KeyedBatches<HoldArgs, WalletStep>;
  private readonly closes: KeyedBatches<CloseArgs, WalletStep>;

  /** `keys(tenant)`: wallet, ledger, holds, open, closed, spend; `forget()`: now ms and the closed-hold ttl ms. */
  constructor(client: RedisClient, keys: (tenantId: string) => string[], forget: () => [string, string]) {
    this.holds = new KeyedBatches(async (tenantId, calls) => steps(await HOLD.run(client, keys(tenantId).slice(0, 3), calls.flat())));
    this.closes = new KeyedBatches(async (tenantId, calls) => {
      const [now, ttl] = forget();
      const today = new Date(Number(now)).toISOString().slice(0, 10);
      return steps(await CLOSE.run(client, keys(tenantId), [now, ttl, cutoff(today), ...calls.flat()]));
    });
  }

  hold(tenantId: string, args: HoldArgs): Promise<WalletStep> {
    return this.holds.call(tenantId, args);
  }

  close(tenantId: string, args: CloseArgs): Promise<WalletStep> {
    return this.closes.call(tenantId, args);
  }
}

function steps(reply: unknown): WalletStep[] {
  const [th, as, la, out] = reply as [string, string, string, string[]];
  const all: WalletStep[] = [];
  for (let i = 0; i < out.length; i += 5) all.push({ status: out[i]!, item: out[i + 1]!, wallet: [out[i + 2]!, out[i + 3]!, th, as, la, out[i + 4]!] });
  return all;
}
