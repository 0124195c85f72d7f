// The Redis RateCounters for engine/limits/rate.ts. A tenant's counters are fields of its
// wallet hash (`w:<name>:<id>`, a scope's three windows in one field: ./wallet-lib.ts
// WINDOWS_LIB), counted in the tenant's admission script with the rest of its requests'
// admission (./wallet-batches.ts): a request's nine counters (key, model and tenant scope ×
// second, minute, day: three fields), its day's spend and its hold are one HMGET and one HSET. A
// call for a newer window starts the count again, so the hash grows only with the tenant's keys
// and models (a field for each), not with time. A counter with no tenant (failed authentications
// per client address) has a hash of its own, `<p>{rl:<name>:<id>}`, counted by the RATE script
// below: every call made while its previous call is in flight goes in one run (./batch.ts); it
// lives twice its longest window past the last window turn (+ 60 s), so an address that stops
// leaves nothing behind.
import type { RateCount, RateCounters } from '../../limits/store.ts';
import { KeyedBatches } from './batch.ts';
import { Keys, type RedisClient } from './keys.ts';
import { lua } from './script.ts';
import { WalletBatches } from './wallet-batches.ts';
import { RATE_LIB } from './wallet-lib.ts';

// KEYS: the group's hash. ARGV: ttl ms, then per call: field, window n, 1 (count one) or -1 (give
// one back). Returns each call's count after it (RATE_LIB's rate_step).
const RATE = lua(RATE_LIB + `
local calls = (#ARGV - 1) / 3
local fields = {}
for i = 1, calls do fields[i] = ARGV[(i - 1) * 3 + 2] end
local v = redis.call('HMGET', KEYS[1], unpack(fields))
local cur, out, turned = {}, {}, false
for i = 1, calls do
  local f = fields[i]
  if cur[f] == nil then cur[f] = v[i] end
  local o, t = rate_step(cur, f, tonumber(ARGV[(i - 1) * 3 + 3]), ARGV[(i - 1) * 3 + 4])
  out[i] = o
  turned = turned or t
end
local sets = {}
for f, c in pairs(cur) do
  sets[#sets + 1] = f
  sets[#sets + 1] = c
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

export function redisRateCounters(client: RedisClient, prefix: string): RateCounters {
  const keys = new Keys(prefix);
  const slot = WalletBatches.of(client, prefix);
  const groups = new KeyedBatches<Call, number>(async (key, calls) => {
    const ttl = Math.max(...calls.map((c) => 2 * c.windowMs)) + 60_000;
    const args = calls.flatMap((c) => [c.field, String(c.n), String(c.delta)]);
    return (await RATE.run(client, [key], [String(ttl), ...args])) as number[];
  });
  // Counters with no tenant (one a request: a client address's failed authentications), each in its own hash.
  const alone = (counts: readonly RateCount[], delta: 1 | -1) =>
    Promise.all(counts.map((c) => groups.call(keys.rate(c.name, c.id), { field: `${c.name}:${c.id}`, n: c.n, delta, windowMs: c.windowMs })));
  return {
    add: (counts, tenant) => (tenant === undefined ? alone(counts, 1) : slot.rate(tenant, counts, 1)),
    remove: (counts, tenant) => (tenant === undefined ? alone(counts, -1) : slot.rate(tenant, counts, -1)),
  };
}
