// Benchmark: Redis commands per whole task life, by command name. `npm run bench -- task-commands`
// One `gateway serve` (role all) on a fresh redis-server; model D against bench/stub-upstream.ts,
// whose tasks finish at their BENCH_POLLS-th poll (default 3). First an idle window (commands/s
// with no traffic, by name), then BENCH_TASKS creates (default 60, 8 at a time) and a wait until
// every task is completed and settled. The life window's INFO commandstats deltas, minus the idle
// rate over the window's length, divided by the tasks, are the commands per task life: create,
// submission, polls, completion, settlement and the events' bookkeeping, with every command run
// inside a script counted (as Redis counts them). The checks after the window read the tasks.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import type { Redis } from 'ioredis';
import { startRedis } from '../test/helpers/redis.ts';
import { freePort } from '../test/helpers/net.ts';
import { NO_LIMITS } from '../test/helpers/gateway.ts';
import { startStub } from './stub-upstream.ts';
import { ADMIN, admin, startServe } from './serve.ts';
import { createRequest } from './support.ts';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const TASKS = Number(process.env.BENCH_TASKS ?? 60);
const POLLS = Number(process.env.BENCH_POLLS ?? 3);
const IDLE_SECONDS = Number(process.env.BENCH_IDLE_SECONDS ?? 10);
const D = '/vendors/provider_d/v1/model_d/generation';

async function commandstats(r: Redis): Promise<Map<string, number>> {
  const calls = new Map<string, number>();
  for (const m of (await r.info('commandstats')).matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) calls.set(m[1]!, Number(m[2]));
  return calls;
}

/** The commands of the window by name, without this benchmark's own (info). */
function delta(a: Map<string, number>, b: Map<string, number>): Map<string, number> {
  const out = new Map<string, number>();
  for (const [c, n] of b) if (c !== 'info' && n - (a.get(c) ?? 0) > 0) out.set(c, n - (a.get(c) ?? 0));
  return out;
}

const show = (m: Map<string, number>, per: number) => {
  const rows = [...m].map(([c, n]) => [c, n / per] as const).filter(([, n]) => Math.abs(n) >= 0.05).sort((x, y) => y[1] - x[1]);
  return `${rows.reduce((s, [, n]) => s + n, 0).toFixed(1)} (${rows.map(([c, n]) => `${c} ${n.toFixed(2)}`).join(', ')})`;
};



const redis = await startRedis();
const client = redis.client();
const stub = await startStub({ polls: POLLS });
const dir = mkdtempSync(join(tmpdir(), 'gw-bench-task-commands-'));
const config = join(dir, 'config.yaml');
const metricsPort = await freePort();
writeFileSync(config, `
server: { host: 127.0.0.1, port: 0 }
metrics: { port: ${metricsPort} }
store: { kind: redis, redis_url: "${redis.url}", key_prefix: "tc" }
sandbox: { enabled: false }
results: { store: off }
admin: { token: ${ADMIN} }
log: { level: warn }
vendors: { dir: ${JSON.stringify(join(ROOT, 'vendors'))}, enabled: [provider_d] }
${NO_LIMITS}
upstreams:
  provider_d: { base_url: "${stub.url}", credentials: { api_key: bench } }
`);
const port = await freePort();
const proc = await startServe(config, port);
const base = `http://127.0.0.1:${port}`;
const tenant = await admin(base, '/tenants', { name: 'bench' });
const { key } = await admin(base, `/tenants/${tenant.id}/keys`, {});
await admin(base, `/tenants/${tenant.id}/wallet/topups`, { credits: '1000000.00' });
const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
const body = new Uint8Array(createRequest());
// Warm-up: a few task lives first, so the scripts are loaded (a first EVALSHA answered NOSCRIPT
// is sent again as EVAL) and the start-up work (the first sweep) is done before the windows.
const warm = stub.finished();
await Promise.all(Array.from({ length: 8 }, async () => (await fetch(`${base}${D}`, { method: 'POST', headers, body })).body?.cancel()));
while (stub.finished() < warm + 8) await new Promise((r) => setTimeout(r, 100));
await new Promise((r) => setTimeout(r, 2000));

const i0 = await commandstats(client);
const it0 = performance.now();
await new Promise((r) => setTimeout(r, IDLE_SECONDS * 1000));
const idle = delta(i0, await commandstats(client));
const idleSeconds = (performance.now() - it0) / 1000;
console.log(`idle: ${show(idle, idleSeconds)} commands/s`);

// BENCH_MONITOR=<file>: every command of the life window, as Redis's MONITOR shows them.
let monitor: { disconnect(): void } | undefined;
if (process.env.BENCH_MONITOR) {
  const { createWriteStream } = await import('node:fs');
  const out = createWriteStream(process.env.BENCH_MONITOR);
  const m = await redis.client().monitor();
  m.on('monitor', (_t: string, args: string[], source: string) => out.write(`${source} ${args.map((a) => a.slice(0, 60).replace(/\s+/g, ' ')).join(' ')}\n`));
  monitor = m;
}
const c0 = await commandstats(client);
const t0 = performance.now();
const ids: string[] = [];
for (let i = 0; i < TASKS; i += 8) {
  await Promise.all(Array.from({ length: Math.min(8, TASKS - i) }, async () => {
    const r = await fetch(`${base}${D}`, { method: 'POST', headers, body });
    if (r.status !== 202) throw new Error(`create: ${r.status} ${await r.text()}`);
    ids.push(((await r.json()) as { task_info: { id: string } }).task_info.id);
  }));
}
while (stub.finished() < warm + 8 + TASKS) await new Promise((r) => setTimeout(r, 100));
await new Promise((r) => setTimeout(r, 1500)); // the completions and settlements after the last poll
const life = delta(c0, await commandstats(client));
monitor?.disconnect();
const seconds = (performance.now() - t0) / 1000;
for (const [c, n] of idle) life.set(c, (life.get(c) ?? 0) - (n / idleSeconds) * seconds);
console.log(`task life (${TASKS} tasks, ${POLLS} polls each, ${seconds.toFixed(1)} s, idle rate subtracted, load average ${loadavg()[0]!.toFixed(1)}): ${show(life, TASKS)} commands per task`);

let done = 0;
for (const id of ids) {
  const r = await fetch(`${base}/v1/tasks/${id}`, { headers });
  const got = (await r.json()) as { task?: { task_info?: { status?: string } } };
  if (got.task?.task_info?.status === "completed") done++;
  else if (done === 0 && id === ids[0]) console.log('first task:', JSON.stringify(got).slice(0, 300));
}
const ledger = (await (await fetch(`${base}/v1/ledger?limit=200`, { headers })).json()) as { data?: { kind?: string }[] };
if (!ledger.data) console.log('ledger:', JSON.stringify(ledger).slice(0, 300));
const settled = (ledger.data ?? []).filter((l) => l.kind === 'settle' || l.kind === 'charge').length;
console.log(`checks: ${done}/${TASKS} completed; ${settled} settlement lines in the ledger`);
await new Promise((resolve) => {
  proc.once('exit', resolve);
  proc.kill('SIGTERM');
});
await stub.close();
await redis.stop();
