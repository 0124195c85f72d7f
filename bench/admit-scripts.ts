// Redis's time in the chat admission and settlement scripts (ADMIT, CLOSE of
// engine/store/redis/wallet-batches.ts), without a gateway: INFO commandstats µs per chat on a
// throw-away redis-server, N chats alone then N with 64 in flight, without limits (a hold and its
// settle) and with every limit (9 rate windows, the day's spend read, the hold; the settle records
// the spend). commandstats µs count only the commands' own execution, so the figure holds better
// under load than used_cpu; the median of each script's calls (SLOWLOG, every command logged)
// holds better still, as a busy machine only stretches some calls. The hold is a chat's (up to,
// a new ref: no read of the holds hash). Env: CHATS (3000). `npx node bench/admit-scripts.ts`
import { WalletBatches } from '../engine/store/redis/wallet-batches.ts';
import { startRedis } from '../test/helpers/redis.ts';

const CHATS = Number(process.env.CHATS ?? 3000);
const redis = await startRedis();
const client = redis.client();

async function stats(): Promise<Map<string, [number, number]>> {
  const out = new Map<string, [number, number]>();
  for (const m of (await client.info('commandstats')).matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm)) out.set(m[1]!, [Number(m[2]), Number(m[3])]);
  return out;
}

/** The median µs of the ADMIT (4 keys) and CLOSE (6 keys) calls in a SLOWLOG (every command logged). */
function medians(log: [number, number, number, string[]][]) {
  const of = (keys: string) => {
    const v = log.filter((e) => e[3][0] === 'evalsha' && e[3][2] === keys).map((e) => Number(e[2])).sort((a, b) => a - b);
    return { n: v.length, median: v[v.length >> 1] ?? 0 };
  };
  return { admit: of('4'), close: of('6') };
}

let seq = 0;
async function chat(b: WalletBatches, limits: boolean): Promise<void> {
  const ref = `req_${++seq}`;
  const at = new Date().toISOString();
  const day = at.slice(0, 10);
  const steps: Promise<unknown>[] = [];
  if (limits) {
    const now = Date.now();
    // As engine/limits/rate.ts names and orders them: per scope, second, minute, day.
    const windows = [['per_second', 1000], ['per_minute', 60_000], ['per_day', 86_400_000]] as const;
    const counts = ['key', 'model', 'tenant'].flatMap((scope) => windows.map(([w, ms]) => ({ name: `rl_${scope}_${w}`, windowMs: ms, id: `id_${scope}`, n: Math.floor(now / ms) })));
    steps.push(b.rate('t1', counts, 1));
    steps.push(b.spent('t1', day));
  }
  steps.push(b.hold('t1', [ref, '1500', 'chat', at, `led_h${seq}`, '3']));
  const held = (await Promise.all(steps)).at(-1) as { status: string };
  if (held.status !== 'held') throw new Error(`hold: ${held.status}`);
  await new Promise((r) => setTimeout(r, 1)); // the upstream's turn
  const closed = await b.close('t1', [ref, '1200', 'chat', at, `led_s${seq}`, `led_r${seq}`, limits ? day : ''], [String(Date.now()), String(3_600_000)]);
  if (closed.status !== 'closed') throw new Error(`close: ${closed.status}`);
}

for (const limits of [false, true]) {
  const b = WalletBatches.of(client, `ab${limits ? 1 : 0}:`);
  await client.hset(`ab${limits ? 1 : 0}:{t:t1}:wallet`, 'b', '1000000000000000');
  for (const inFlight of [1, 64]) {
    const run = async (n: number) => {
      let next = 0;
      await Promise.all(Array.from({ length: inFlight }, async () => {
        while (next++ < n) await chat(b, limits);
      }));
    };
    await run(500);
    await client.config('SET', 'slowlog-log-slower-than', '0');
    await client.config('SET', 'slowlog-max-len', String(CHATS * 12));
    await client.slowlog('RESET');
    const before = await stats();
    await run(CHATS);
    const after = await stats();
    await client.config('SET', 'slowlog-log-slower-than', '-1');
    const med = medians((await client.slowlog('GET', -1)) as [number, number, number, string[]][]);
    const d = [...after].map(([c, [n, us]]) => [c, n - (before.get(c)?.[0] ?? 0), us - (before.get(c)?.[1] ?? 0)] as const).filter(([c, n]) => n > 0 && c !== 'info');
    const script = d.filter(([c]) => c === 'evalsha' || c === 'eval').reduce((s, [, , us]) => s + us, 0);
    const inner = d.filter(([c]) => c !== 'evalsha' && c !== 'eval').reduce((s, [, , us]) => s + us, 0);
    const calls = d.reduce((s, [, n]) => s + n, 0);
    console.log(`${limits ? 'every limit' : 'no limits'}, ${inFlight} in flight: medians (robust to the machine's load) ADMIT ${med.admit.median} µs × ${(med.admit.n / CHATS).toFixed(2)}, CLOSE ${med.close.median} µs × ${(med.close.n / CHATS).toFixed(2)}: ${(med.admit.median * med.admit.n / CHATS + med.close.median * med.close.n / CHATS).toFixed(1)} µs per chat`);
    console.log(`  totals: ${(calls / CHATS).toFixed(2)} commands, scripts ${(script / CHATS).toFixed(1)} µs per chat (inner commands ${(inner / CHATS).toFixed(1)}, Lua ${((script - inner) / CHATS).toFixed(1)}): ${d.map(([c, n, us]) => `${c} ${(n / CHATS).toFixed(2)}×${(us / n).toFixed(2)}`).join(', ')}`);
  }
}
await redis.stop();
process.exit(0);
