// Redis commands per sync chat request, by command name: `npx node bench/chat-commands.ts`
// One gateway (this process) on a throw-away redis-server, provider_c's upstream stand-in
// (bench/chat-upstream.ts), N chats 8 at a time after a warm-up; INFO commandstats deltas count
// every command, those run inside scripts included (as issue 33 counts them). Two configs:
// `NO_LIMITS` (as bench/workers.ts) and with every rate window, concurrency and daily spend on.
// Also Redis's CPU per chat (INFO cpu deltas; the gateway shares the machine, so a method more than
// a figure). Env: CHATS (2000), CONCURRENCY (8).
import { Pool } from 'undici';
import type { Redis } from 'ioredis';
import { fileURLToPath } from 'node:url';
import { loadConfigText } from '../engine/load-config.ts';
import { startGateway } from '../engine/gateway.ts';
import { createLogger } from '../engine/log/logger.ts';
import { startRedis } from '../test/helpers/redis.ts';
import { NO_LIMITS } from '../test/helpers/gateway.ts';
import { startBenchUpstream } from './chat-upstream.ts';
import { chatRequest } from './support.ts';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const CHATS = Number(process.env.CHATS ?? 2000);
const CONCURRENCY = Number(process.env.CONCURRENCY ?? 8);
const big = { per_second: 1_000_000_000, per_minute: 1_000_000_000, per_day: 1_000_000_000 };
const LIMITS = `limits: ${JSON.stringify({ rate: { key: big, tenant: big, model: big }, concurrent_tasks: 1000, daily_spend_credits: '1000000000.00' })}`;

/** Redis's CPU seconds so far (user + sys). */
async function redisCpu(r: Redis): Promise<number> {
  const info = await r.info('cpu');
  const num = (k: string) => Number(new RegExp(`^${k}:([\\d.]+)`, 'm').exec(info)![1]);
  return num('used_cpu_sys') + num('used_cpu_user');
}

/** Per command: calls and Redis's µs in it (INFO commandstats; a script's µs include its inner commands'). */
async function calls(r: Redis): Promise<Map<string, [number, number]>> {
  const out = new Map<string, [number, number]>();
  for (const m of (await r.info('commandstats')).matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm)) out.set(m[1]!, [Number(m[2]), Number(m[3])]);
  return out;
}

const redis = await startRedis();
const probe = redis.client();
const up = await startBenchUpstream();
for (const [label, limits] of [['no limits (bench/workers.ts)', NO_LIMITS], ['every limit on', LIMITS]] as const) {
  const config = loadConfigText(`
server: { host: 127.0.0.1, port: 0 }
metrics: { port: 0 }
store: { kind: redis, redis_url: "${redis.url}", key_prefix: "cc${label.length}:" }
sandbox: { enabled: false }
log: { level: silent }
vendors: { dir: vendors, enabled: [provider_c] }
${limits}
upstreams: { provider_c: { base_url: "${up.url}", credentials: { api_key: sk-bench } } }
`, ROOT, { env: {} });
  const gw = await startGateway(config, { logger: createLogger('silent') });
  const tenant = await gw.tenants.createTenant({ name: 'bench' });
  const { key } = await gw.tenants.issueKey(tenant.id, {});
  await gw.billing.topUp(tenant.id, 1_000_000_000_000, 'bench-topup');
  const pool = new Pool(gw.url, { connections: CONCURRENCY });
  const body = chatRequest(false);
  const run = async (n: number) => {
    let next = 0;
    let bad = 0;
    await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
      while (next++ < n) {
        const r = await pool.request({ path: '/v1/chat/completions', method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body });
        await r.body.dump();
        if (r.statusCode !== 200) bad++;
      }
    }));
    return bad;
  };
  await run(200);
  await new Promise((r) => setTimeout(r, 300));
  const [before, cpu0] = [await calls(probe), await redisCpu(probe)];
  const bad = await run(CHATS);
  await new Promise((r) => setTimeout(r, 300));
  const [after, cpu1] = [await calls(probe), await redisCpu(probe)];
  const delta = [...after].map(([c, [n, us]]) => [c, n - (before.get(c)?.[0] ?? 0), us - (before.get(c)?.[1] ?? 0)] as const).filter(([c, n]) => n > 0 && c !== 'info').sort((a, b) => b[1] - a[1]);
  const total = delta.reduce((s, [, n]) => s + n, 0);
  const named = delta.filter(([, n]) => n / CHATS >= 0.005);
  // The µs of the commands a client sent (evalsha's include its inner commands', which are not added again).
  const inner = new Set(['hmget', 'hset', 'hdel', 'rpush', 'lpush', 'lrange', 'ltrim', 'hgetall', 'srem', 'del']);
  const sent = delta.filter(([c]) => !inner.has(c)).reduce((s, [, , us]) => s + us, 0);
  const script = delta.filter(([c]) => c === 'evalsha' || c === 'eval').reduce((s, [, , us]) => s + us, 0);
  const innerUs = delta.filter(([c]) => inner.has(c)).reduce((s, [, , us]) => s + us, 0);
  console.log(`${label}, ${CONCURRENCY} at a time: ${(total / CHATS).toFixed(2)} Redis commands per chat (${CHATS} chats, ${bad} not 200), Redis CPU ${Math.round(((cpu1 - cpu0) / CHATS) * 1e6)} µs per chat: ${named.map(([c, n]) => `${c} ${(n / CHATS).toFixed(2)}`).join(', ')}`);
  console.log(`  commandstats µs per chat: ${(sent / CHATS).toFixed(1)} in commands sent, of which scripts ${(script / CHATS).toFixed(1)} (inner commands ${(innerUs / CHATS).toFixed(1)}, so Lua itself ${((script - innerUs) / CHATS).toFixed(1)}); per call: ${named.map(([c, n, us]) => `${c} ${(us / n).toFixed(2)}`).join(', ')}`);
  await pool.close();
  await gw.close();
}
await up.close();
await redis.stop();
process.exit(0);
