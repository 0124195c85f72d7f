// The Redis RateCountersFactory for engine/limits/rate.ts. The counters of a group share one hash
// (a tenant's: `<p>{t:<tenant>}:rate`, in its slot; a counter with no group, e.g. failed
// authentications per client address: `<p>{rl:<name>:<id>}`), one field per counter,
// `<name>:<id>` → "<window n>|<count>": a call for a newer window starts the count again, so the
// hash never grows with time, only with the tenant's keys and models. Every call a group makes
// while its previous call is in flight goes in one RATE script (./batch.ts): a request's nine
// counters (key, model and tenant scope × second, minute, day) are one HMGET and one HSET, and a
// burst of a tenant's requests shares them too. rate.ts compares the counts with the limits.
// The hash lives twice its longest window past the last window turn (+ 60 s), so a group that
// stops leaves nothing behind; a turn only ever lengthens that (PTTL first).
import type { RateCountersFactory } from '../../limits/store.ts';
import { KeyedBatches } from './batch.ts';
import { Keys, type RedisClient } from './keys.ts';
import { lua } from './script.ts';

// KEYS: the group's hash. ARGV: ttl ms, then per call: field, window n, 1 (count one) or -1 (give
// one back; only within the same window). Returns each call's count after it. A call for a window
// older than the field's (a process whose clock lags) counts as the first of its window.
const RATE = lua(`
local calls = (#ARGV - 1) / 3
local fields = {}
for i = 1, calls do fields[i] = ARGV[(i - 1) * 3 + 2] end
local v = redis.call('HMGET', KEYS[1], unpack(fields))
local cur, out, turned = {}, {}, false
for i = 1, calls do
  local o = (i - 1) * 3 + 1
  local f, n = ARGV[o + 1], tonumber(ARGV[o + 2])
  local c = cur[f]
  if not c then
    c = { -1, 0 }
    if v[i] then
      local a, b = string.match(v[i], '^(%d+)|(%d+)$')
      c = { tonumber(a), tonumber(b) }
    end
    cur[f] = c
  end
  if ARGV[o + 3] == '1' then
    if c[1] < n then
      c[1], c[2], turned = n, 0, true
    end
    if c[1] == n then
      c[2] = c[2] + 1
      out[i] = c[2]
    else
      out[i] = 1
    end
  else
    if c[1] == n and c[2] > 0 then c[2] = c[2] - 1 end
    out[i] = c[2]
  end
end
local sets = {}
for f, c in pairs(cur) do
  sets[#sets + 1] = f
  sets[#sets + 1] = num(c[1]) .. '|' .. num(c[2])
end
redis.call('HSET', KEYS[1], unpack(sets))
if turned and redis.call('PTTL', KEYS[1]) < tonumber(ARGV[1]) then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return out
`);

interface Call {
  field: string;
  n: number;
  delta: 1 | -1;
  windowMs: number;
}

export function redisRateCounters(client: RedisClient, prefix: string): RateCountersFactory {
  const keys = new Keys(prefix);
  const groups = new KeyedBatches<Call, number>(async (key, calls) => {
    const ttl = Math.max(...calls.map((c) => 2 * c.windowMs)) + 60_000;
    const args = calls.flatMap((c) => [c.field, String(c.n), String(c.delta)]);
    return (await RATE.run(client, [key], [String(ttl), ...args])) as number[];
  });
  return (name, windowMs) => {
    const group = (id: string, slot?: string) => (slot === undefined ? keys.rate(name, id) : `${keys.tenant(slot)}rate`);
    return {
      add: (id, n, slot) => groups.call(group(id, slot), { field: `${name}:${id}`, n, delta: 1, windowMs }),
      remove: (id, n, slot) => groups.call(group(id, slot), { field: `${name}:${id}`, n, delta: -1, windowMs }),
    };
  };
}
