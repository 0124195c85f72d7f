// Promises one chat's admission and charge create, in process: `npx node bench/admission-promises.ts`
// A gateway on the memory store (or BENCH_REDIS_URL) with bench/chat-gateway.ts's limits (every
// rate window of the key, model and tenant, and a daily spend limit); each chat runs the steps
// the proxy runs around its upstream call: the key check (Admission.caller), the limits with the
// hold (Admission.limits), then the settlement (RequestCharges.close). CHATS of them (default
// 20,000), CONCURRENCY (64) at a time; async_hooks PROMISE inits per chat (V8 also counts the
// throwaway promises of `await`), and the CPU per chat of those steps (one core, in process).
import { createHook } from 'node:async_hooks';
import { fileURLToPath } from 'node:url';
import { loadConfigText } from '../engine/load-config.ts';
import { startGateway } from '../engine/gateway.ts';
import { createLogger } from '../engine/log/logger.ts';
import { Admission } from '../engine/tenants/admission.ts';
import { RequestCharges } from '../engine/billing/request-charges.ts';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const CHATS = Number(process.env.CHATS ?? 20_000);
const CONCURRENCY = Number(process.env.CONCURRENCY ?? 64);
const big = { per_second: 1_000_000_000, per_minute: 1_000_000_000, per_day: 1_000_000_000 };
const redis = process.env.BENCH_REDIS_URL;
const config = loadConfigText(`
server: { host: 127.0.0.1, port: 0 }
metrics: { port: 0 }
store: ${redis ? `{ kind: redis, redis_url: "${redis}", key_prefix: "ap${process.pid}:" }` : '{ kind: memory }'}
sandbox: { enabled: false }
log: { level: silent }
vendors: { dir: vendors, enabled: [provider_c] }
limits: ${JSON.stringify({ rate: { key: big, tenant: big, model: big }, daily_spend_credits: '1000000000.00' })}
upstreams: { provider_c: { base_url: "http://127.0.0.1:9", credentials: { api_key: sk-bench } } }
`, ROOT, { env: {} });
const logger = createLogger('silent');
const gw = await startGateway(config, { logger });
const tenant = await gw.tenants.createTenant({ name: 'bench' });
const { key } = await gw.tenants.issueKey(tenant.id, {});
await gw.billing.topUp(tenant.id, 1_000_000_000_000, 'bench-topup');
const admission = new Admission({ tenants: gw.tenants, limits: gw.limits });
const charges = new RequestCharges(gw.billing, logger);
const header = `Bearer ${key}`;

let seq = 0;
async function chat(): Promise<void> {
  const auth = await admission.caller(header, 'provider_c', 'create', {});
  const ref = `provider_c/chat:${process.pid}-${seq++}`;
  await admission.limits(auth, { model: 'provider_c/m', hold: async () => void (await charges.reserve(auth.tenantId, ref, 2_000, 'held')) });
  await charges.close(auth.tenantId, ref, 1_234, 'settled');
}

async function run(n: number): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    while (next++ < n) await chat();
  }));
}

await run(2_000); // warm-up
let promises = 0;
const hook = createHook({ init: (_id, type) => void (type === 'PROMISE' && promises++) });
hook.enable();
await run(1_000);
hook.disable();
const perChat = promises / 1_000;
const t0 = process.cpuUsage();
await run(CHATS);
const cpu = process.cpuUsage(t0);
console.log(`${redis ? 'redis' : 'memory'}: ${perChat.toFixed(2)} promises per chat (async_hooks PROMISE inits over 1,000 chats, ${CONCURRENCY} at a time); ${((cpu.user + cpu.system) / CHATS).toFixed(2)} µs CPU per chat over ${CHATS}`);
await gw.close();
