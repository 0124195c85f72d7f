// A tenant's chat wallet steps as ONE script in the tenant's slot (./wallet-batches.ts runs it
// for a group): the group's closes (settle, release: the close, the day's spend, the ledger
// lines), then its admissions (the rate windows, the day's spend read, the holds), each part
// exactly as it would run alone: it reads the wallet hash once and writes it once, its ledger
// lines in one RPUSH. One script for both kinds, not one each, because what a group costs the
// gateway is mostly fixed per script run (ioredis's command, its promise, a socket write, the
// reply): with a few chats of a tenant in flight the closes and the admissions that wait
// together go as one run, not two (docs/performance.md, Redis chat steps as one script).
import { lua } from './script.ts';
import { SPEND_LIB, WALLET_LIB, WINDOWS_LIB } from './wallet-lib.ts';

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

// The closes (KEYS as STEPS's). A, the close section of ARGV: now ms, closed-hold ttl ms, the
// oldest spend day kept, then per close: ref, actual ('' = release everything), note, at, id1,
// id2, spend day ('' = none: a settlement whose spend is recorded here, in the same step, names
// the UTC day it counts on; the day's total is the wallet's field s:<day>).
// Returns th, as, la, then status, item, b, h, seq per close (lines of one text: reply above).
const CLOSE_RUN = `
local function close_run(A)
  local n = (#A - 3) / 7
  local refs, fields = {}, {}
  for i = 1, n do
    refs[i] = A[3 + (i - 1) * 7 + 1]
    fields[i] = 'o:' .. refs[i]
  end
  for i = 1, n do
    local day = A[3 + (i - 1) * 7 + 7]
    if day ~= '' then fields[#fields + 1] = 's:' .. day end
  end
  fields[#fields + 1] = 'sd'
  local w, v = wget(KEYS[1], fields)
  local now, ttl = tonumber(A[1]), tonumber(A[2])
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
    local ref, note, at = A[o + 1], A[o + 3], A[o + 4]
    local status, item = 'closed', made[ref] or v[i] or ex[ref]
    if not item then
      status, item = 'unknown', ''
    else
      local h = hold_parse(item)
      if h.state ~= 'open' then
        status = 'duplicate'
      else
        local settle = A[o + 2] ~= ''
        local settled = 0
        if settle then settled = math.min(math.max(tonumber(A[o + 2]), 0), h.amount) end
        local released = h.amount - settled
        local ids = { A[o + 5], A[o + 6] }
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
        local day = A[o + 7]
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
        sd = day_set(sd, day, tonumber(cur[f] or totals[day] or '0') + milli, A[3], wsets, gone)
      end
    end
  end
  if #gone > 0 then redis.call('HDEL', KEYS[1], unpack(gone)) end
  if #lines > 0 or shelved then wsave(KEYS[1], w, wsets) end
  return reply(w, out)
end
`;

// The admissions (KEYS as STEPS's: the holds hash for the closed ones, the old spend of
// ./limits.ts). A, the admission section of ARGV, in three sections (each kind touches fields
// of its own, so a kind's calls keep their order and nothing else depends on it): the number of
// rate fields, then per field its name (w:<name>:<id>, WINDOWS_LIB), the window n counted in
// each of its three slots ('' none; negative: give one back) and its gate; the number of spend
// reads, then per read its day and its gate; then per hold: ref, amount, note, at, entry id,
// flags (the sum of 1: up to, hold min(amount, available), refused only when nothing is
// available; 2: a new ref, HoldOptions.newRef) and its gate. Sections rather than a kind tag per
// call and a delta per count: a chat's nine counts are 15 arguments, each encoded one by one by
// ioredis. A new hold's record is the wallet's field o:<ref> until it closes.
// The gates (LimitsStore.gate): one request's rate fields, spend read and hold carry the same
// gate number g ('' for a call asked outside a gate): a field's gate is g|<limit>|<limit>|<limit>
// (its three windows' limits, '' for a window not counted), a read's g|<spend past which its
// request is refused>, a hold's g. The counts and the reads go first, so a hold is judged by them:
// a request a count or its day's spend refuses is answered 'withheld' and takes nothing, so its
// funds never refuse a later request of the run (rates and spend before funds, strictly).
// Returns th, as, la, then the counts, the spends, and per hold status, item, b, h, seq (lines of
// one text: reply above).
const ADMIT_RUN = `
local function admit_run(A)
  -- The fields each section asks for, in A's order: no table per call (a chat with every limit
  -- counts nine windows, and a table each was some 2 µs of the script).
  local nr = tonumber(A[1])
  local fields = {}
  for j = 1, nr do fields[j] = A[5 * j - 3] end
  local s0 = 3 + 5 * nr
  local spends = tonumber(A[s0 - 1])
  for j = 0, spends - 1 do fields[#fields + 1] = 's:' .. A[s0 + 2 * j] end
  local h0 = s0 + 2 * spends
  local holds = (#A - h0 + 1) / 7
  for j = 0, holds - 1 do fields[#fields + 1] = 'o:' .. A[h0 + 7 * j] end
  fields[#fields + 1] = 'sd'
  local w, v = wget(KEYS[1], fields)
  -- The fields as the calls see them: each sees the writes of the calls before it.
  local cur, dirty = {}, {}
  for j, f in ipairs(fields) do if cur[f] == nil then cur[f] = v[j] end end
  local out, lines, rs, gone = {}, {}, {}, {}
  -- refused[g]: gate g's request is refused by a count or its day's spend: its hold is withheld.
  local refused = {}
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
    local g, l1, l2, l3
    if A[5 * j + 1] ~= '' then g, l1, l2, l3 = string.match(A[5 * j + 1], '^(%d+)|(%d*)|(%d*)|(%d*)$') end
    for k = 0, 2 do
      local ns = A[5 * j - 2 + k]
      if ns ~= '' then
        local give = string.byte(ns, 1) == 45
        if give then ns = string.sub(ns, 2) end
        local c = win_count(r, k, ns, give)
        out[#out + 1] = string.format('%d', c)
        if g then
          local l = l1
          if k == 1 then l = l2 elseif k == 2 then l = l3 end
          if l ~= '' and c > tonumber(l) then refused[g] = true end
        end
      end
    end
    dirty[f] = r
  end
  if spends > 0 then
    local old = {}
    if not cur['sd'] then
      local o = redis.call('HGETALL', KEYS[6])
      for j = 1, #o, 2 do old['s:' .. o[j]] = o[j + 1] end
    end
    for j = 1, spends do
      local f = fields[nr + j]
      local s = cur[f] or old[f] or '0'
      out[#out + 1] = s
      local gate = A[s0 + 2 * j - 1]
      if gate ~= '' then
        local g, above = string.match(gate, '^(%d+)|(-?%d+)$')
        if tonumber(s) > tonumber(above) then refused[g] = true end
      end
    end
  end
  -- A ref closed a while ago is only in the holds hash: read for the holds not in the wallet
  -- whose ref is not new (flag 2: a request's own ref, never held twice), so a chat's costs none.
  local ex, refs = {}, {}
  for j = 0, holds - 1 do
    local a = h0 + 7 * j
    if not cur[fields[nr + spends + j + 1]] and tonumber(A[a + 5]) < 2 and not refused[A[a + 6]] then refs[#refs + 1] = A[a] end
  end
  if #refs > 0 then
    local e = redis.call('HMGET', KEYS[3], unpack(refs))
    for j, r in ipairs(refs) do ex[r] = e[j] end
  end
  for j = 0, holds - 1 do
    local a = h0 + 7 * j - 1
    local f = fields[nr + spends + j + 1]
    local ref, amount, at = A[a + 1], tonumber(A[a + 2]), A[a + 4]
    local status, item = 'held', cur[f] or ex[ref]
    if refused[A[a + 7]] then
      status, item = 'withheld', ''
    elseif item then
      status = 'duplicate'
    else
      item = ''
      if tonumber(A[a + 6]) % 2 == 1 and amount > 0 then
        if w.b - w.h <= 0 then status = 'insufficient' else amount = math.min(amount, w.b - w.h) end
      end
      if status == 'held' and amount > 0 and amount > w.b - w.h then status = 'insufficient' end
      if status == 'held' then
        lines[#lines + 1] = line(w, A[a + 5], at, 'hold', amount, ref, A[a + 3])
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
end
`;

// KEYS: wallet, ledger, holds, open, closed, old spend (every key in the tenant's slot). ARGV:
// the number k of close arguments, then the close section (k arguments: none when the group has
// no close), then the admission section (to the end: none when the group has no admission).
// Returns the closes' answer, then the admissions' (each as above, th, as, la first; lines of one
// text: a part that did not run has no lines).
export const STEPS = lua(BATCH_LIB + SPEND_LIB + WINDOWS_LIB + CLOSE_RUN + ADMIT_RUN + `
local k = tonumber(ARGV[1])
local parts = {}
if k > 0 then parts[1] = close_run({ unpack(ARGV, 2, k + 1) }) end
if #ARGV > k + 1 then parts[#parts + 1] = admit_run({ unpack(ARGV, k + 2, #ARGV) }) end
return table.concat(parts, '\\n')
`);
