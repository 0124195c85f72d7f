// The ledger half of the Redis wallet adapter (redis/wallets.ts writes the lines; this file reads
// them and moves the old ones out to the archive, engine/billing/ledger-archive.ts). Kept apart
// from the money scripts (HOLD, CLOSE, CHARGE, CREDIT) so each changes without the other.
//   <p>{t:<id>}:ledger   list  the lines still in Redis, JSON [id, at, kind, amount, ref, note];
//                              a line's seq is lo + index + 1
//   <p>{t:<id>}:wallet   hash  (besides the money fields) lo: lines archived and trimmed,
//                              ob / oh: balance and held just after line lo (the opening the
//                              ledger replays from), al: the archive lease "<owner>|<until ms>"
// Trimming moves lo, never a seq: the same line has the same seq (the page cursor) before and
// after it is archived.
import type { ArchiveBatch, ArchiveClaim, LedgerEntry, LedgerKind, LedgerPage, TrimRequest, WalletSnapshot } from '../../billing/store.ts';
import type { RedisClient } from './keys.ts';
import { lua } from './script.ts';

// KEYS: ledger, wallet. ARGV: limit, beforeSeq ('' = newest).
// Returns {seq of the line before the page, lines oldest first, lo}.
const LIST = lua(`
local lo = tonumber(redis.call('HGET', KEYS[2], 'lo') or '0')
local len = redis.call('LLEN', KEYS[1])
local e = len
if ARGV[2] ~= '' then e = math.min(len, math.max(0, tonumber(ARGV[2]) - 1 - lo)) end
local s = math.max(0, e - tonumber(ARGV[1]))
local items = {}
if e > s then items = redis.call('LRANGE', KEYS[1], s, e - 1) end
return { num(lo + s), items, num(lo), num(s) }
`, { readOnly: true });

// KEYS: wallet, ledger, holds. A consistent read of everything kept, with the opening (and the
// whole wallet hash: its o:<ref> fields are the open holds).
const SNAPSHOT = lua(`
local w = redis.call('HMGET', KEYS[1], 'b', 'h', 'th', 'as', 'la', 'seq', 'lo', 'ob', 'oh')
for i = 1, 9 do w[i] = w[i] or '' end
return { w, redis.call('LRANGE', KEYS[2], 0, -1), redis.call('HGETALL', KEYS[3]), redis.call('HGETALL', KEYS[1]) }
`, { readOnly: true });

// KEYS: wallet, ledger. ARGV: owner, now ms, lease ms, before (ISO), keep (0 = no count bound),
// max lines. The oldest lines kept that may leave: older than \`before\` (or beyond the newest
// \`keep\`), all of one UTC day, at most max. Takes the tenant's archive lease for owner when there
// are some; another owner's live lease answers busy (two archivers never write the same lines).
const CLAIM = lua(`
local v = redis.call('HMGET', KEYS[1], 'lo', 'al')
local lo = tonumber(v[1] or '0')
local now = tonumber(ARGV[2])
if v[2] then
  local o, u = string.match(v[2], '^(.*)|(%d+)$')
  if o ~= ARGV[1] and tonumber(u) > now then return { 'busy', num(lo), {} } end
end
local len = redis.call('LLEN', KEYS[2])
local keep = tonumber(ARGV[5])
local items = redis.call('LRANGE', KEYS[2], 0, tonumber(ARGV[6]) - 1)
local n, day = 0, nil
for i, line in ipairs(items) do
  local at = string.match(line, '^%[".-","([^"]*)"') -- [id, at, ...]: ids are plain, no quote inside
  local forced = keep > 0 and len - (i - 1) > keep
  if not forced and at >= ARGV[4] then break end
  local d = string.sub(at, 1, 10)
  if day and d ~= day then break end
  day, n = d, i
end
if n == 0 then return { 'none', num(lo), {} } end
redis.call('HSET', KEYS[1], 'al', ARGV[1] .. '|' .. num(now + tonumber(ARGV[3])))
for i = #items, n + 1, -1 do items[i] = nil end
return { 'ok', num(lo), items }
`);

// KEYS: wallet, ledger, credits. ARGV: owner, first seq, last seq, id of the first line, id of the
// last line. Trims exactly the lines archived: only while owner holds the lease, the first line
// kept is \`first\` and the ids match; folds them into the opening (ob, oh) and moves lo. A credit
// line that leaves keeps a copy in the credits hash ("<seq>\\n<line>") so a repeated top-up still
// answers its first entry.
const TRIM = lua(`
local v = redis.call('HMGET', KEYS[1], 'lo', 'al', 'ob', 'oh')
local lo = tonumber(v[1] or '0')
local o = v[2] and string.match(v[2], '^(.*)|%d+$')
if o ~= ARGV[1] then return 'lost' end
if lo + 1 ~= tonumber(ARGV[2]) then return 'moved' end
local n = tonumber(ARGV[3]) - lo
local items = redis.call('LRANGE', KEYS[2], 0, n - 1)
if #items ~= n then return 'short' end
local ob, oh = tonumber(v[3] or '0'), tonumber(v[4] or '0')
for i, line in ipairs(items) do
  local e = cjson.decode(line)
  if (i == 1 and e[1] ~= ARGV[4]) or (i == n and e[1] ~= ARGV[5]) then return 'changed' end
  local k, a = e[3], e[4]
  if k == 'topup' or k == 'adjustment' then
    ob = ob + a
    redis.call('HSET', KEYS[3], k .. ':' .. e[5], num(lo + i) .. '\\n' .. line)
  elseif k == 'hold' then oh = oh + a
  elseif k == 'release' then oh = oh - a
  else oh = oh - a; ob = ob - a end
end
redis.call('LTRIM', KEYS[2], n, -1)
redis.call('HSET', KEYS[1], 'lo', num(lo + n), 'ob', num(ob), 'oh', num(oh))
return 'trimmed'
`);

/** The ledger reads and the archive mover of one Redis wallet store. */
export class RedisLedger {
  private readonly client: RedisClient;
  private readonly k: (tenantId: string, name: string) => string;

  constructor(client: RedisClient, key: (tenantId: string, name: string) => string) {
    this.client = client;
    this.k = key;
  }

  async list(tenantId: string, limit: number, beforeSeq?: number): Promise<LedgerPage> {
    const [start, items, lo, index] = (await LIST.run(this.client, [this.k(tenantId, 'ledger'), this.k(tenantId, 'wallet')], [String(limit), beforeSeq === undefined ? '' : String(beforeSeq)])) as [string, string[], string, string];
    const s = Number(start);
    const entries = items.map((e, i) => toEntry(e, s + i + 1)).reverse();
    return { entries, nextBeforeSeq: Number(index) > 0 ? s + 1 : null, archivedThrough: Number(lo) };
  }

  /** The wallet fields [b, h, th, as, la, seq], the lines kept, the holds hash and the whole wallet hash, with the opening. */
  async snapshot(tenantId: string): Promise<{ w: string[]; entries: LedgerEntry[]; holds: string[]; wallet: Record<string, string>; opening?: WalletSnapshot['opening'] }> {
    const keys = [this.k(tenantId, 'wallet'), this.k(tenantId, 'ledger'), this.k(tenantId, 'holds')];
    const [w, lines, holds, all] = (await SNAPSHOT.run(this.client, keys, [])) as [string[], string[], string[], string[]];
    const wallet: Record<string, string> = {};
    for (let i = 0; i < all.length; i += 2) wallet[all[i]!] = all[i + 1]!;
    const lo = Number(w[6] || 0);
    const out = { w: w.slice(0, 6), entries: lines.map((e, i) => toEntry(e, lo + i + 1)), holds, wallet };
    return lo > 0 ? { ...out, opening: { seq: lo, balance: Number(w[7] || 0), held: Number(w[8] || 0) } } : out;
  }

  async claimArchive(tenantId: string, c: ArchiveClaim): Promise<ArchiveBatch> {
    const [status, lo, lines] = (await CLAIM.run(this.client, [this.k(tenantId, 'wallet'), this.k(tenantId, 'ledger')], [
      c.owner, String(c.now), String(c.leaseMs), c.before, String(c.keep ?? 0), String(c.max),
    ])) as [ArchiveBatch['status'], string, string[]];
    const first = Number(lo) + 1;
    return { status, archivedThrough: Number(lo), entries: lines.map((e, i) => toEntry(e, first + i)) };
  }

  async trimArchived(tenantId: string, t: TrimRequest): Promise<boolean> {
    const keys = [this.k(tenantId, 'wallet'), this.k(tenantId, 'ledger'), this.k(tenantId, 'credits')];
    return (await TRIM.run(this.client, keys, [t.owner, String(t.first.seq), String(t.last.seq), t.first.id, t.last.id])) === 'trimmed';
  }
}

export function toEntry(json: string, seq: number): LedgerEntry {
  const [id, at, kind, amount, ref, note] = JSON.parse(json) as [string, string, LedgerKind, number, string, string];
  return { id, seq, at, kind, amount, ref, note };
}
