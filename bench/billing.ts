// Billing's cost per sync chat, in process: the gateway's real wiring (memory store, the spend
// guard, the low-balance monitor, the ledger archive following the store onto the local result
// files under the tree's data/, prom-client), with its request charges
// (engine/billing/request-charges.ts) driven as the proxy drives them: the hold, then the
// settlement, per chat, `BILLING_CONCURRENCY` (10) chats at a time, `BILLING_RATE` (20,000) chats
// a second after an unpaced warm-up of 50,000. No HTTP, so what is measured is billing's alone:
//   flock /tmp/bench.lock taskset -c 0 npx node bench/billing.ts [chats]
// Prints CPU per chat (all threads: the archive's file work is on libuv's), heap allocated per
// chat (load-independent) and collections per 1,000 chats. Paced, because a loop that only awaits
// resolved promises never gives the event loop a turn: the archive's file calls never complete
// and the lines pile up as no gateway's do (docs/performance.md). With
// `--import bench/heap-sampling.ts` (and `--no-turbo-inlining`, so that each allocation is charged
// to the function that makes it) it shows where the allocation goes.
import { getHeapStatistics } from 'node:v8';
import { PerformanceObserver } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import type { ChatPorts } from '../engine/gateway.ts';
import { chatConfigText } from './chat-config.ts';
import { shipped } from './support.ts';

const { loadConfigText } = await shipped<typeof import('../engine/load-config.ts')>('load-config.ts');
const { startGateway } = await shipped<typeof import('../engine/gateway.ts')>('gateway.ts');

const CHATS = Number(process.argv[2] ?? 200_000);
const WARMUP = Math.min(50_000, CHATS);
const CONCURRENCY = Number(process.env.BILLING_CONCURRENCY ?? 10);
const RATE = Number(process.env.BILLING_RATE ?? 20_000);
const ROOT = fileURLToPath(new URL('../', import.meta.url));
// No upstream is called: the port is one nothing listens on. BILLING_STORE: a `store:` line,
// e.g. `store: { memory_ledger_entries: 10000000 }` (the archive idle through the run).
const config = loadConfigText(chatConfigText({ upstreamUrl: 'http://127.0.0.1:9', logLevel: 'silent', store: process.env.BILLING_STORE }), ROOT, { env: {} });
let real: ChatPorts | undefined;
const gw = await startGateway(config, { chatPorts: (r) => (real = r) });
const tenant = await gw.tenants.createTenant({ name: 'bench' });
await gw.billing.topUp(tenant.id, 1_000_000_000_000, 'bench-topup');
const billing = real!.billing;

// A chat's hold and settlement as the proxy makes them (engine/proxy/requests.ts): a ref of the
// route and the trace, the model's hold note, the usage note with the completion's id.
let n = 0;
async function chat(): Promise<void> {
  const i = n++;
  const ref = `provider_c/chat:${i.toString(16).padStart(32, '0')}-${(i * 7).toString(16).padStart(16, '0')}`;
  await billing.reserve(tenant.id, ref, 4_200, 'gpt-bench: held before the upstream call');
  await billing.close(tenant.id, ref, 1_234, `gpt-bench 12 in (0 cached) 34 out chatcmpl-${i}`);
}
async function run(chats: number): Promise<void> {
  const end = n + chats;
  const lane = async () => {
    while (n < end) await chat();
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, lane));
}

let allocated = 0;
let gcs = 0;
new PerformanceObserver((list) => (gcs += list.getEntries().length)).observe({ entryTypes: ['gc'] });
// The heap grows only by allocation between collections.
const heapNow = () => getHeapStatistics().used_heap_size;

await run(WARMUP); // unpaced: the JIT's warm-up
await new Promise((r) => setTimeout(r, 500));
const cpu0 = process.cpuUsage();
const t0 = performance.now();
const gc0 = gcs;
// Heap allocated: the sum of the heap's rises between checks, every 32 chats (a collection
// between two checks loses what was allocated since the last one: under 1% at a scavenge per
// thousands of chats).
const end = n + CHATS;
let prev = heapNow();
while (n < end) {
  await run(32);
  // At a gateway's pace (BILLING_RATE chats a second), with turns of the event loop between
  // batches as sockets give: the archive's file work completes in turns of its own (microtasks
  // alone would starve it, and the lines would pile up as no gateway's do).
  const due = t0 + ((n - end + CHATS) * 1000) / RATE;
  const ahead = due - performance.now();
  await new Promise((r) => (ahead > 0 ? setTimeout(r, ahead) : setImmediate(r)));
  const h = heapNow();
  if (h > prev) allocated += h - prev;
  prev = h;
}
const cpu = process.cpuUsage(cpu0);
const ms = performance.now() - t0;
console.log(JSON.stringify({
  chats: CHATS,
  concurrency: CONCURRENCY,
  cpu_us_per_chat: +((cpu.user + cpu.system) / CHATS).toFixed(3),
  user_us_per_chat: +(cpu.user / CHATS).toFixed(3),
  heap_kb_per_chat: +(allocated / CHATS / 1024).toFixed(3),
  gcs_per_1000: +(((gcs - gc0) * 1000) / CHATS).toFixed(2),
  chats_per_s: Math.round(CHATS / (ms / 1000)),
}));
await gw.close();
process.kill(process.pid, 'SIGTERM'); // bench/heap-sampling.ts writes its profile at SIGTERM
