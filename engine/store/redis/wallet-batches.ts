// A tenant's admission and settlement, each ONE script in the tenant's slot, run as groups
// (./batch.ts): every admission step asked while the tenant's previous admission script is in
// flight goes in the next one, and settlements likewise. An admission script counts the rate
// windows (./rate.ts: fields of the wallet hash), reads the day's spend (./limits.ts: wallet
// fields too) and takes the holds; a settlement closes holds (settle, release), adds the chat's
// spend to its day and appends the ledger lines. Each call is handled in order exactly as alone
// (duplicates, insufficient funds, the up-to rule, the rate counts): the wallet hash (balance,
// open holds, rate counters, day totals) read once and written once, the ledger lines in one
// RPUSH. So a group of any size costs what one call does (docs/redis-layout.md, *A sync chat's
// commands*, counts them). The rate adapter, the limits adapter and the wallet adapter of one
// client and prefix share one WalletBatches (WalletBatches.of), so a request's three admission
// steps, asked in the same turn, go in one script.
import type { RateCount } from '../../limits/store.ts';
import { KeyedBatches } from './batch.ts';
import { Keys, type RedisClient } from './keys.ts';
import { lua } from './script.ts';
import { cutoff, SPEND_LIB, WALLET_LIB, WINDOWS_LIB } from './wallet-lib.ts';

// A hold or close call's answer: its status, the hold record, and the wallet after it.
const BATCH_LIB = WALLET_LIB + `
local function answer(out, status, item, w)
  for _, v in ipairs({ status, item, num(w.b), num(w.h), num(w.seq) }) do out[#out + 1] = v end
end
-- The answer of a group: one text, its values one a line (th, as, la, then the calls'), not an
-- array of them: ioredis decodes each value of an array reply on its own (about 0.2 µs each in
-- the gateway, some 20 a chat), one bulk string at once, and the gateway splits it. No value
-- holds a line break: numbers, statuses and hold records (whose time is the gateway's ISO time).
local function reply(w, out)
  return w.th .. '\\n' .. w.as .. '\\n' .. w.la .. '\\n' .. table.concat(out, '\\n')
end
`;

// KEYS: wallet, ledger, holds (closed ones), old spend (./limits.ts). ARGV, in three sections
// (each kind touches fields of its own, so a kind's calls keep their order and nothing else
// depends on it): the number of rate fields, then per field its name (w:<name>:<id>, WINDOWS_LIB)
// and the window n counted in each of its three slots ('' none; negative: give one back); the
// number of spend reads, then per read its day; then per hold: ref, amount, note, at, entry id,
// flags (the sum of 1: up to, hold min(amount, available), refused only when nothing is
// available; 2: a new ref, HoldOptions.newRef). Sections rather than a kind tag per call and a
// delta per count: a chat's nine counts are 12 arguments, each encoded one by one by ioredis. A new hold's
// record is the wallet's field o:<ref> until it closes. Returns th, as, la, then the counts, the
// spends, and per hold status, item, b, h, seq (lines of one text: reply above).
const ADMIT = lua(BATCH_LIB + WINDOWS_LIB + `
-- The fields each section asks for, in ARGV's order: no table per call (a chat with every limit
-- counts nine windows, and a table each was some 2 µs of the script).
local nr = tonumber(ARGV[1])
local fields = {}
for j = 1, nr do fields[j] = ARGV[4 * j - 2] end
local s0 = 3 + 4 * nr
local spends = tonumber(ARGV[s0 - 1])
for j = 0, spends - 1 do fields[#fields + 1] = 's:' .. ARGV[s0 + j] end
local h0 = s0 + spends
local holds = (#ARGV - h0 + 1) / 6
for j = 0, holds - 1 do fields[#fields + 1] = 'o:' .. ARGV[h0 + 6 * j] end
fields[#fields + 1] = 'sd'
local w, v = wget(KEYS[1], fields)
-- The fields as the calls see them: each sees the writes of the calls before it.
local cur, dirty = {}, {}
for j, f in ipairs(fields) do if cur[f] == nil then cur[f] = v[j] end end
local out, lines, rs, gone = {}, {}, {}, {}
-- A rate field not in the wallet yet: an older gateway's per-window fields are moved in (once).
local old, olds = {}, {}
for j = 1, nr do
  local f = fields[j]
  if not cur[f] and not old[f] then
    old[f] = true
    olds[#olds + 1] = f
    for _, o in ipairs(win_old(f)) do gone[#gone + 1] = o end
  end
end
if #gone > 0 then
  local v = redis.call('HMGET', KEYS[1], unpack(gone))
  for i, f in ipairs(olds) do
    local r = win_parse(false)
    for k = 1, 3 do
      local a, c = string.match(v[3 * (i - 1) + k] or '', '^(%d+)|(%d+)$')
      if a then r[2 * k - 1], r[2 * k] = a, tonumber(c) end
    end
    rs[f] = r
  end
end
for j = 1, nr do
  local f = fields[j]
  local r = rs[f]
  if not r then
    r = win_parse(cur[f])
    rs[f] = r
  end
  for k = 0, 2 do
    local ns = ARGV[4 * j - 1 + k]
    if ns ~= '' then
      local give = string.byte(ns, 1) == 45
      if give then ns = string.sub(ns, 2) end
      out[#out + 1] = string.format('%d', win_count(r, k, ns, give))
    end
  end
  dirty[f] = r
end
if spends > 0 then
  local old = {}
  if not cur['sd'] then
    local o = redis.call('HGETALL', KEYS[4])
    for j = 1, #o, 2 do old['s:' .. o[j]] = o[j + 1] end
  end
  for j = nr + 1, nr + spends do out[#out + 1] = cur[fields[j]] or old[fields[j]] or '0' end
end
-- A ref closed a while ago is only in the holds hash: read for the holds not in the wallet
-- whose ref is not new (flag 2: a request's own ref, never held twice), so a chat's costs none.
local ex, refs = {}, {}
for j = 0, holds - 1 do
  local a = h0 + 6 * j
  if not cur[fields[nr + spends + j + 1]] and tonumber(ARGV[a + 5]) < 2 then refs[#refs + 1] = ARGV[a] end
end
if #refs > 0 then
  local e = redis.call('HMGET', KEYS[3], unpack(refs))
  for j, r in ipairs(refs) do ex[r] = e[j] end
end
for j = 0, holds - 1 do
  local a = h0 + 6 * j - 1
  local f = fields[nr + spends + j + 1]
  local ref, amount, at = ARGV[a + 1], tonumber(ARGV[a + 2]), ARGV[a + 4]
  local status, item = 'held', cur[f] or ex[ref]
  if item then
    status = 'duplicate'
  else
    item = ''
    if tonumber(ARGV[a + 6]) % 2 == 1 and amount > 0 then
      if w.b - w.h <= 0 then status = 'insufficient' else amount = math.min(amount, w.b - w.h) end
    end
    if status == 'held' and amount > 0 and amount > w.b - w.h then status = 'insufficient' end
    if status == 'held' then
      lines[#lines + 1] = line(w, ARGV[a + 5], at, 'hold', amount, ref, ARGV[a + 3])
      item = hold_str({ state = 'open', amount = amount, settled = 0, released = 0, charge = '0', seq = w.seq, at = at })
      cur[f] = item
      dirty[f] = true
      w.h = w.h + amount
    end
  end
  answer(out, status, item, w)
end
-- dirty[f]: true (a hold's field, its text in cur) or a rate field's counts.
local sets = {}
for f, d in pairs(dirty) do
  sets[#sets + 1] = f
  if d == true then sets[#sets + 1] = cur[f] else sets[#sets + 1] = win_text(d) end
end
if #gone > 0 then redis.call('HDEL', KEYS[1], unpack(gone)) end
if #lines > 0 then
  redis.call('RPUSH', KEYS[2], unpack(lines))
  wsave(KEYS[1], w, sets)
elseif #sets > 0 then
  redis.call('HSET', KEYS[1], unpack(sets))
end
return reply(w, out)
`);

// KEYS: wallet, ledger, holds, open, closed, old spend. ARGV: now ms, closed-hold ttl ms, the
// oldest spend day kept, then per close: ref, actual ('' = release everything), note, at, id1,
// id2, spend day ('' = none: a settlement whose spend is recorded here, in the same step, names
// the UTC day it counts on; the day's total is the wallet's field s:<day>).
// Returns th, as, la, then status, item, b, h, seq per close (lines of one text: reply above).
const CLOSE = lua(BATCH_LIB + SPEND_LIB + `
local n = (#ARGV - 3) / 7
local refs, fields = {}, {}
for i = 1, n do
  refs[i] = ARGV[3 + (i - 1) * 7 + 1]
  fields[i] = 'o:' .. refs[i]
end
for i = 1, n do
  local day = ARGV[3 + (i - 1) * 7 + 7]
  if day ~= '' then fields[#fields + 1] = 's:' .. day end
end
fields[#fields + 1] = 'sd'
local w, v = wget(KEYS[1], fields)
local now, ttl = tonumber(ARGV[1]), tonumber(ARGV[2])
local cur = {}
for j, f in ipairs(fields) do if cur[f] == nil then cur[f] = v[j] end end
-- The shelf moves first (its forgetting may drop a hold this group asks about): a ref moved is
-- looked for in the holds hash, as a hold closed long ago.
local gone, shelved = {}, false
if shelf_due(w, now, ttl) then
  local moved = shelve(KEYS[1], KEYS[3], KEYS[5], w, now, ttl, gone)
  for i = 1, n do if moved[refs[i]] then v[i] = false end end
  shelved = true
end
-- A ref not in the wallet: closed a while ago (a duplicate), unknown, or a hold taken before open
-- holds moved into the wallet (open in the holds hash and the open set).
local miss = {}
for i = 1, n do if not v[i] then miss[#miss + 1] = refs[i] end end
local ex = {}
if #miss > 0 then
  local e = redis.call('HMGET', KEYS[3], unpack(miss))
  for j, r in ipairs(miss) do ex[r] = e[j] end
end
local out, lines, sets, wsets, made, days, old, adds = {}, {}, {}, {}, {}, {}, {}, {}
for i = 1, n do
  local o = 3 + (i - 1) * 7
  local ref, note, at = ARGV[o + 1], ARGV[o + 3], ARGV[o + 4]
  local status, item = 'closed', made[ref] or v[i] or ex[ref]
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
      made[ref] = item
      if v[i] then
        -- On the shelf: the record stays in its wallet field, closed.
        wsets[#wsets + 1] = fields[i]
        wsets[#wsets + 1] = item
        shelf_add(w, wsets, ref, now)
      else
        -- Open in the holds hash (an older gateway's hold): closed there.
        sets[#sets + 1] = ref
        sets[#sets + 1] = item
        old[#old + 1] = ref
        adds[#adds + 1] = num(now + ttl) .. '|' .. ref
      end
      w.h = w.h - h.amount
      w.b = w.b - settled
    end
  end
  answer(out, status, item, w)
end
if #lines > 0 then
  redis.call('RPUSH', KEYS[2], unpack(lines))
  if #sets > 0 then redis.call('HSET', KEYS[3], unpack(sets)) end
  if #old > 0 then redis.call('SREM', KEYS[4], unpack(old)) end
  forget(KEYS[3], KEYS[5], w, adds, now, ttl)
  if next(days) then
    local sd, totals = cur['sd'], {}
    if not sd then sd, totals = spend_moved(KEYS[6], wsets) end
    for day, milli in pairs(days) do
      local f = 's:' .. day
      sd = day_set(sd, day, tonumber(cur[f] or totals[day] or '0') + milli, ARGV[3], wsets, gone)
    end
  end
end
if #gone > 0 then redis.call('HDEL', KEYS[1], unpack(gone)) end
if #lines > 0 or shelved then wsave(KEYS[1], w, wsets) end
return reply(w, out)
`);

/** One call's outcome: its status, the hold record ('' when none), the wallet after it (b, h, th, as, la, seq). */
export interface WalletStep {
  status: string;
  item: string;
  wallet: string[];
}

/** A hold: ref, amount, note, at, entry id, flags (1: up to, 2: a new ref; HoldOptions). */
export type HoldArgs = [string, string, string, string, string, string];
/** A close: ref, actual ('' = release), note, at, id1, id2, spend day ('' = none). */
export type CloseArgs = [string, string, string, string, string, string, string];

/** One admission step: a request's rate counts (delta 1) or their giving back (-1), a day's spend read, or a hold. */
type AdmitCall = { kind: 'r'; counts: readonly RateCount[]; delta: 1 | -1 } | { kind: 's'; day: string } | { kind: 'h'; args: HoldArgs };
/** A close with the closed-hold retention of the wallet adapter that asked (now ms, ttl ms). */
interface CloseCall {
  args: CloseArgs;
  forget: [string, string];
}

/** One WalletBatches per client and prefix: the adapters that share them share their groups. */
const shared = new WeakMap<RedisClient, Map<string, WalletBatches>>();

export class WalletBatches {
  private readonly admits: KeyedBatches<AdmitCall, number[] | string | WalletStep>;
  private readonly closes: KeyedBatches<CloseCall, WalletStep>;

  /** The WalletBatches of `client` and `prefix` (the wallet, limits and rate adapters of one store share it). */
  static of(client: RedisClient, prefix: string): WalletBatches {
    let byPrefix = shared.get(client);
    if (!byPrefix) shared.set(client, (byPrefix = new Map()));
    let b = byPrefix.get(prefix);
    if (!b) byPrefix.set(prefix, (b = new WalletBatches(client, new Keys(prefix))));
    return b;
  }

  private constructor(client: RedisClient, keys: Keys) {
    const k = (tenantId: string, ...names: string[]) => names.map((n) => keys.tenant(tenantId) + n);
    // A request's admission is up to three calls (its rate counts, its day's spend, its hold): a
    // group of 192 calls holds the admissions of 64 requests, as a group of closes holds 64 closes.
    this.admits = new KeyedBatches(async (tenantId, calls) => {
      // ADMIT's three sections: the rate counts, the spend reads, the holds; its answer likewise.
      const rates: string[] = [];
      const days: string[] = [];
      const holds: string[] = [];
      for (const c of calls) {
        if (c.kind === 'r') {
          // A request's counts, consecutive per scope in window order, share their scope's field.
          let field = '';
          let at = 0;
          let last = 3;
          for (const r of c.counts) {
            const [name, slot] = windowOf(r.name);
            const f = `w:${name}:${r.id}`;
            if (f !== field || slot <= last) {
              field = f;
              at = rates.length;
              rates.push(f, '', '', '');
            }
            rates[at + 1 + slot] = String(c.delta * r.n);
            last = slot;
          }
        }
        else if (c.kind === 's') days.push(c.day);
        else for (const a of c.args) holds.push(a);
      }
      const args = [String(rates.length / 4)].concat(rates, String(days.length), days, holds);
      const out = ((await ADMIT.run(client, k(tenantId, 'wallet', 'ledger', 'holds', 'spend'), args)) as string).split('\n');
      const all: (number[] | string | WalletStep)[] = [];
      let r = 3;
      let s = r;
      for (const c of calls) if (c.kind === 'r') s += c.counts.length;
      let h = s + days.length;
      for (const c of calls) {
        if (c.kind === 'r') {
          const counts = new Array<number>(c.counts.length);
          for (let j = 0; j < counts.length; j++) counts[j] = Number(out[r++]);
          all.push(counts);
        } else if (c.kind === 's') all.push(out[s++]!);
        else {
          all.push(step(out, h));
          h += 5;
        }
      }
      return all;
    }, 3 * 64);
    this.closes = new KeyedBatches(async (tenantId, calls) => {
      const [now, ttl] = calls[0]!.forget;
      const today = new Date(Number(now)).toISOString().slice(0, 10);
      const keys = k(tenantId, 'wallet', 'ledger', 'holds', 'open', 'closed', 'spend');
      const args = [now, ttl, cutoff(today)];
      for (const c of calls) for (const a of c.args) args.push(a);
      const out = ((await CLOSE.run(client, keys, args)) as string).split('\n');
      return calls.map((_, j) => step(out, 3 + j * 5));
    });
  }

  /** Count (1) or give back (-1) one request in each of the tenant's counters (a scope's windows in one field `w:<name>:<id>`): the counts after it. */
  rate(tenantId: string, counts: readonly RateCount[], delta: 1 | -1): Promise<number[]> {
    return this.admits.call(tenantId, { kind: 'r', counts, delta }) as Promise<number[]>;
  }

  /** The tenant's spend of `day` (milli). */
  spent(tenantId: string, day: string): Promise<number> {
    return this.admits.call(tenantId, { kind: 's', day }).then(Number);
  }

  hold(tenantId: string, args: HoldArgs): Promise<WalletStep> {
    return this.admits.call(tenantId, { kind: 'h', args }) as Promise<WalletStep>;
  }

  /** `forget`: now ms and the closed-hold ttl ms of the asking wallet adapter. */
  close(tenantId: string, args: CloseArgs, forget: [string, string]): Promise<WalletStep> {
    return this.closes.call(tenantId, { args, forget });
  }
}

/** A rate counter's wallet field name and slot (WINDOWS_LIB): rl_key_per_minute → ['rl_key', 1]; another name has a field of its own (slot 0). */
const windows = new Map<string, [string, number]>();
const SLOT: Record<string, number> = { per_second: 0, per_minute: 1, per_day: 2 };
function windowOf(name: string): [string, number] {
  let w = windows.get(name);
  if (!w) {
    const m = /^(.*)_(per_second|per_minute|per_day)$/.exec(name);
    windows.set(name, (w = m ? [m[1]!, SLOT[m[2]!]!] : [name, 0]));
  }
  return w;
}

/** The call whose values start at line i of a group's answer (lines 0-2: the wallet's th, as, la). */
function step(out: string[], i: number): WalletStep {
  return { status: out[i]!, item: out[i + 1]!, wallet: [out[i + 2]!, out[i + 3]!, out[0]!, out[1]!, out[2]!, out[i + 4]!] };
}
