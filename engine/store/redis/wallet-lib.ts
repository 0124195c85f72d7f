// The Lua helpers every wallet script shares (./wallets.ts, ./wallet-batches.ts): the wallet
// hash (with the open holds) read once and written once per script, ledger lines, hold records
// and the closed-hold retention; the day totals of the daily spend (also ./limits.ts's scripts)
// and the rate counters (also ./rate.ts's), which live in the wallet hash too.

/** Days of spend kept before the day being written (as in the memory adapter). */
export const RETAIN_DAYS = 3;

export const WALLET_LIB = `
-- The wallet, and the fields \`extra\` read in the same HMGET (false where absent): a hold's
-- record while it is open, and for a moment after it closed (the shelf, below), is the wallet's
-- field \`o:<ref>\`, so a hold and its close read and write it with the wallet's own HMGET and HSET.
local function wget(W, extra)
  local f = { 'b', 'h', 'th', 'as', 'la', 'seq', 'fh', 'cn', 'cf', 'enc' }
  if extra then for _, x in ipairs(extra) do f[#f + 1] = x end end
  local v = redis.call('HMGET', W, unpack(f))
  local ex = {}
  if extra then for i = 1, #extra do ex[i] = v[10 + i] end end
  return { b = tonumber(v[1] or '0'), h = tonumber(v[2] or '0'), th = v[3] or '', as = v[4] or 'NORMAL', la = v[5] or '', seq = tonumber(v[6] or '0'), fh = tonumber(v[7] or '0'), cn = tonumber(v[8] or '0'), cf = tonumber(v[9] or '0'), enc = v[10] }, ex
end
-- The wallet is kept a hashtable, not a listpack: a script reads and writes some 10 to 30 of its
-- fields by name, and in a listpack each of those is a scan of the whole hash (some 60 fields
-- with the rate counters and the shelf): 0.3-0.5 µs a field, about half of a chat's script time
-- (docs/performance.md, Redis CPU per chat, third pass). Redis turns a hash into a hashtable
-- for good once one value is longer than hash-max-listpack-value (64 bytes by default), so the
-- wallet's first write adds this field; it costs some 2 KB per wallet.
local ENC = 'hashtable: this wallet is read and written by field name about 20 times a chat (docs/redis-layout.md)'
-- \`sets\`: more field, value pairs written with the wallet (open holds).
local function wsave(W, w, sets)
  local f = { 'b', num(w.b), 'h', num(w.h), 'seq', num(w.seq), 'as', w.as }
  if not w.enc then f[#f + 1] = 'enc'; f[#f + 1] = ENC end
  if w.fhset then f[#f + 1] = 'fh'; f[#f + 1] = num(w.fh) end
  if w.cqset then
    f[#f + 1] = 'cn'; f[#f + 1] = num(w.cn)
    f[#f + 1] = 'cf'; f[#f + 1] = num(w.cf)
  end
  if sets then for _, x in ipairs(sets) do f[#f + 1] = x end end
  redis.call('HSET', W, unpack(f))
end
local function result(status, item, w)
  return { status, item, num(w.b), num(w.h), w.th, w.as, w.la, num(w.seq) }
end
-- The next ledger line (its seq is the wallet's seq after it), not yet written: a script gathers
-- its lines and writes them with one RPUSH, in seq order.
local function line(w, id, at, kind, amount, ref, note)
  w.seq = w.seq + 1
  return '[' .. cjson.encode(id) .. ',' .. cjson.encode(at) .. ',"' .. kind .. '",' .. num(amount) .. ',' .. cjson.encode(ref) .. ',' .. cjson.encode(note) .. ']'
end
local function append(L, w, id, at, kind, amount, ref, note)
  local e = line(w, id, at, kind, amount, ref, note)
  redis.call('RPUSH', L, e)
  return w.seq, e
end
local function hold_str(h)
  return h.state .. '|' .. num(h.amount) .. '|' .. num(h.settled) .. '|' .. num(h.released) .. '|' .. h.charge .. '|' .. num(h.seq) .. '|' .. h.at
end
-- Remembers when closed holds are forgotten (\`adds\`: "<forget at ms>|<ref>" appended to the
-- list C), and forgets (HDEL) the holds already due from its head. The head is looked at only
-- once the wallet's \`fh\` has come (w.fh: the head's forget time, but at least a second, or a
-- tenth of the retention when shorter, after the last look), so a call usually costs one RPUSH
-- here and no read; up to FORGET_BATCH due entries go per look, and a look that found that many
-- looks again at the next call. A list of short
-- strings costs about a third of a sorted set's entry (measured: 183 B per chat as a zset).
-- Processes' clocks differ a little, so the list is ordered only about: a head not yet due holds
-- back the ones behind it, which are then forgotten late, never early. An open hold is never
-- forgotten (a ref is closed once). ttl 0: closed holds are kept.
local FORGET_BATCH = 500
local function forget(H, C, w, adds, now, ttl)
  if ttl <= 0 then return end
  if #adds > 0 then redis.call('RPUSH', C, unpack(adds)) end
  if w.fh > now then return end
  local head = redis.call('LRANGE', C, 0, FORGET_BATCH - 1)
  local due, nexth = {}, nil
  for _, e in ipairs(head) do
    local sep = string.find(e, '|', 1, true)
    local at = tonumber(string.sub(e, 1, sep - 1))
    if at > now then nexth = at break end
    due[#due + 1] = string.sub(e, sep + 1)
  end
  if #due > 0 then
    redis.call('LTRIM', C, #due, -1)
    local v = redis.call('HMGET', H, unpack(due))
    local gone = {}
    for i, r in ipairs(due) do
      if v[i] and string.sub(v[i], 1, 5) ~= 'open|' then gone[#gone + 1] = r end
    end
    if #gone > 0 then redis.call('HDEL', H, unpack(gone)) end
  end
  w.fhset = true
  if nexth then w.fh = math.max(nexth, now + math.min(1000, math.floor(ttl / 10)))
  elseif #due == FORGET_BATCH then w.fh = now
  else w.fh = now + ttl end
end
-- The shelf: a chat's hold closed by the batched CLOSE keeps its closed record in the wallet
-- field o:<ref> (written by the wallet's own HSET, no command of its own), and the wallet notes it
-- as q:<n> = "<closed at ms>|<ref>" (cn: how many wait, cf: when the first closed). Once SHELF_MAX
-- wait, or the first has waited a second (less for a shorter retention), a CLOSE moves them all to
-- the holds hash H and the tail of the forget list C in a few commands (two HMGET, HSET, HDEL,
-- RPUSH), so a close costs those once per many closes instead of three each. (One field per
-- entry, not a growing string: a 4 KB string read and rewritten by every script cost Redis more
-- CPU than the commands it saved.) Returns the refs moved; their o: and q: fields go into \`gone\`
-- (the caller's HDEL, before its HSET). A tenant that stops closing leaves those few closed
-- records on its wallet until its next close (forgotten late, never early).
local SHELF_MAX = 32
local function shelf_due(w, now, ttl)
  if w.cn == 0 then return false end
  local wait = 1000
  if ttl > 0 and ttl < wait then wait = ttl end
  return w.cn >= SHELF_MAX or now >= w.cf + wait
end
-- Puts a closed hold's ref on the shelf (its record is written by the caller): the fields to add to \`sets\`.
local function shelf_add(w, sets, ref, now)
  w.cn = w.cn + 1
  if w.cn == 1 then w.cf = now end
  w.cqset = true
  sets[#sets + 1] = 'q:' .. w.cn
  sets[#sets + 1] = num(now) .. '|' .. ref
end
local function shelve(W, H, C, w, now, ttl, gone)
  local qf = {}
  for i = 1, w.cn do qf[i] = 'q:' .. i end
  local q = redis.call('HMGET', W, unpack(qf))
  local refs, at, fields = {}, {}, {}
  for i = 1, w.cn do
    gone[#gone + 1] = qf[i]
    if q[i] then
      local sep = string.find(q[i], '|', 1, true)
      refs[#refs + 1] = string.sub(q[i], sep + 1)
      at[#refs] = tonumber(string.sub(q[i], 1, sep - 1))
      fields[#refs] = 'o:' .. refs[#refs]
    end
  end
  w.cn, w.cf, w.cqset = 0, 0, true
  local moved = {}
  if #refs == 0 then return moved end
  local v = redis.call('HMGET', W, unpack(fields))
  local sets, adds = {}, {}
  for i = 1, #refs do
    local r = refs[i]
    if v[i] and string.sub(v[i], 1, 5) ~= 'open|' then
      sets[#sets + 1] = r
      sets[#sets + 1] = v[i]
      adds[#adds + 1] = num(at[i] + ttl) .. '|' .. r
      gone[#gone + 1] = fields[i]
      moved[r] = true
    end
  end
  if #sets > 0 then redis.call('HSET', H, unpack(sets)) end
  -- To the tail of the forget list, oldest first, like every other close: the list's head is
  -- what falls due first, so a batch put there (it was, once) holds back every older entry behind
  -- it while closes go on, and the holds hash grew without bound under steady chat traffic. Up
  -- to a second out of order (what closed while they waited is ahead of them): late, never early.
  if ttl > 0 and #adds > 0 then
    local first = at[1] + ttl
    if first < w.fh then w.fh, w.fhset = first, true end
  end
  forget(H, C, w, adds, now, ttl)
  return moved
end
local function hold_parse(s)
  local st, a, se, re, ch, sq, at = string.match(s, '^(%a+)|(-?%d+)|(-?%d+)|(-?%d+)|(%d)|(%d+)|(.*)$')
  return { state = st, amount = tonumber(a), settled = tonumber(se), released = tonumber(re), charge = ch, seq = tonumber(sq), at = at }
end
`;

// The day totals as wallet fields, shared with the chat's scripts (./wallet-batches.ts), which
// read and write them with the wallet's own HMGET and HSET. `day_set` writes a day's total into
// `sets` (field, value pairs) and, when the day is new, the kept days without those before
// `cutoff`, whose fields go into `gone` (to HDEL). `spend_moved(S)` moves the days of the old
// `spend` hash (before this layout) into `sets` and deletes it: the kept days, and their totals.
export const SPEND_LIB = `
local function day_set(sd, day, total, cutoff, sets, gone)
  sets[#sets + 1] = 's:' .. day
  sets[#sets + 1] = num(total)
  if string.find(' ' .. sd .. ' ', ' ' .. day .. ' ', 1, true) then return sd end
  local keep = {}
  for d in string.gmatch(sd, '%S+') do
    if d < cutoff then gone[#gone + 1] = 's:' .. d else keep[#keep + 1] = d end
  end
  keep[#keep + 1] = day
  sd = table.concat(keep, ' ')
  sets[#sets + 1] = 'sd'
  sets[#sets + 1] = sd
  return sd
end
local function spend_moved(S, sets)
  local old = redis.call('HGETALL', S)
  local days, totals = {}, {}
  for i = 1, #old, 2 do
    days[#days + 1] = old[i]
    totals[old[i]] = old[i + 1]
    sets[#sets + 1] = 's:' .. old[i]
    sets[#sets + 1] = old[i + 1]
  end
  local sd = table.concat(days, ' ')
  sets[#sets + 1] = 'sd'
  sets[#sets + 1] = sd
  if #old > 0 then redis.call('DEL', S) end
  return sd, totals
end
-- One call's day: the kept days (the old hash moved in first, when still there) and its total.
local function day_get(W, S, day)
  local v = redis.call('HMGET', W, 'sd', 's:' .. day)
  if v[1] then return v[1], tonumber(v[2] or '0') end
  local sets = {}
  local sd, totals = spend_moved(S, sets)
  redis.call('HSET', W, unpack(sets))
  return sd, tonumber(totals[day] or '0')
end
local function day_put(W, sd, day, total, cutoff)
  local sets, gone = {}, {}
  day_set(sd, day, total, cutoff, sets, gone)
  redis.call('HSET', W, unpack(sets))
  if #gone > 0 then redis.call('HDEL', W, unpack(gone)) end
end
`;

// One rate counter's step for the RATE script (counters with no tenant, ./rate.ts: a field per
// window), on `cur` (field -> "<window n>|<count>" or false, as read): counts one
// request in window n (text, as the caller sent it), or with `give` gives one back (only within
// the same window); a call for a window older than the field's (a process whose clock lags)
// counts as the first of its window and changes nothing. Returns the count after it (text), and
// whether the field turned to a newer window; cur[f] is replaced only when the count changed. The
// common case (the field is in window n) compares the stored window as text and parses only the
// count: each number parsed (strtod) or formatted is a good part of a window's cost
// (docs/performance.md, Redis CPU per chat; a tenant's windows: WINDOWS_LIB below).
export const RATE_LIB = `
local function rate_count(cur, f, ns, give)
  local s, a, c = cur[f], nil, nil
  if s then a, c = string.match(s, '^(%d+)|(%d+)$') end
  if a == ns then
    local k = tonumber(c)
    if give then
      if k == 0 then return c, false end
      k = k - 1
    else
      k = k + 1
    end
    c = string.format('%d', k)
    cur[f] = ns .. '|' .. c
    return c, false
  end
  if give then return c or '0', false end
  if a and tonumber(a) > tonumber(ns) then return '1', false end
  cur[f] = ns .. '|1'
  return '1', true
end
-- The same with the window as a number and delta '1' / '-1'; cur[f] is always set after it (the
-- caller writes every field it read).
local function rate_step(cur, f, n, delta)
  local ns = num(n)
  local c, turned = rate_count(cur, f, ns, delta == '-1')
  if not cur[f] then cur[f] = ns .. '|0' end
  return tonumber(c), turned
end
`;

// A tenant's request-rate counters in its wallet: one field per scope and id, its three windows
// together, `w:<name>:<id>` → "<n>|<count>|<n>|<count>|<n>|<count>" (second, minute, day; n is
// '' for a window never counted), so a request's nine counts are three fields read, parsed and
// written, not nine. win_parse reads a field (false: none) into { n1, c1, n2, c2, n3, c3 };
// win_count counts in slot k (0-2) as rate_count does; win_text writes it back. win_old names
// the fields an older gateway kept the same counters in (`r:<name>_per_<window>:<id>`, one each),
// moved in when the field is first written (ADMIT).
export const WINDOWS_LIB = `
local function win_parse(s)
  if s then
    local a1, c1, a2, c2, a3, c3 = string.match(s, '^(%d*)|(%d+)|(%d*)|(%d+)|(%d*)|(%d+)$')
    if a1 then return { a1, tonumber(c1), a2, tonumber(c2), a3, tonumber(c3) } end
  end
  return { '', 0, '', 0, '', 0 }
end
local function win_count(r, k, ns, give)
  local i = 2 * k + 1
  local a, c = r[i], r[i + 1]
  if a == ns then
    if give then
      if c > 0 then c = c - 1 end
    else
      c = c + 1
    end
    r[i + 1] = c
    return c
  end
  if give then return c end
  if a ~= '' and tonumber(a) > tonumber(ns) then return 1 end
  r[i], r[i + 1] = ns, 1
  return 1
end
local function win_text(r)
  return string.format('%s|%d|%s|%d|%s|%d', r[1], r[2], r[3], r[4], r[5], r[6])
end
local WIN_OLD = { '_per_second:', '_per_minute:', '_per_day:' }
local function win_old(f)
  local name, id = string.match(f, '^w:([^:]*):(.*)$')
  local old = {}
  for k = 1, 3 do old[k] = 'r:' .. name .. WIN_OLD[k] .. id end
  return old
end
`;

/** The oldest day kept when writing `day` (as in the memory adapter). */
export function cutoff(day: string): string {
  return new Date(Date.parse(`${day}T00:00:00Z`) - RETAIN_DAYS * 86_400_000).toISOString().slice(0, 10);
}
