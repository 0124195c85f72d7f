// Benchmark: `gateway serve --workers N` on Redis. `npm run bench -- workers`
// For N in BENCH_WORKERS (default "1 2", run BENCH_ROUNDS times alternating), the real command
// (engine/cli/main.ts serve --workers N, logs to /dev/null) against one redis-server on loopback:
//   1. sync chat completions (provider_c, bench/chat-upstream.ts) from 64 keep-alive connections;
//   2. model D creates (async, bench/stub-upstream.ts answers the submission and the first poll).
// Each window: requests/s, the gateway's CPU per request (process_cpu_seconds_total of every
// worker and the primary, from the one metrics endpoint), Redis's CPU per request (INFO cpu) and
// Redis commands per request (INFO commandstats deltas; for creates, the submissions and polls
// that ran in the window count too). The load generator and the stubs run in this process: on a
// small machine they share the cores with the workers and Redis, so read the figures as a method.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { Pool } from 'undici';
import type { Redis } from 'ioredis';
import { startRedis } from '../test/helpers/redis.ts';
import { freePort } from '../test/helpers/net.ts';
import { metricValue } from '../test/helpers/metrics.ts';
import { NO_LIMITS } from '../test/helpers/gateway.ts';
import { startBenchUpstream } from './chat-upstream.ts';
import { startStub } from './stub-upstream.ts';
import { ADMIN, admin, startServe } from './serve.ts';
import { chatRequest, createRequest } from './support.ts';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 64);
const WORKERS = (process.env.BENCH_WORKERS ?? '1 2').split(/\s+/).map(Number);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 1);
const D = '/vendors/provider_d/v1/model_d/generation';

interface Redisish { cpu: number; calls: Map<string, number>; clients: number }

async function redisNow(r: Redis): Promise<Redisish> {
  const cpu = await r.info('cpu');
  const num = (k: string) => Number(new RegExp(`^${k}:([\\d.]+)`, 'm').exec(cpu)![1]);
  const calls = new Map<string, number>();
  for (const m of (await r.info('commandstats')).matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) calls.set(m[1]!, Number(m[2]));
  const clients = Number(/^connected_clients:(\d+)/m.exec(await r.info('clients'))![1]);
  return { cpu: num('used_cpu_sys') + num('used_cpu_user'), calls, clients };
}



async function window(label: string, base: string, metricsUrl: string, redis: Redis, one: (pool: Pool) => Promise<boolean>): Promise<void> {
  const pool = new Pool(base, { connections: CONNECTIONS, pipelining: 1 });
  const loop = async (seconds: number) => {
    let ok = 0;
    let errors = 0;
    const end = performance.now() + seconds * 1000;
    await Promise.all(Array.from({ length: CONNECTIONS }, async () => {
      while (performance.now() < end) (await one(pool).catch(() => false)) ? ok++ : errors++;
    }));
    return { ok, errors };
  };
  await loop(2); // warm-up
  const gwCpu = async () => metricValue(await (await fetch(metricsUrl)).text(), 'process_cpu_seconds_total');
  const [cpu0, r0, t0] = [await gwCpu(), await redisNow(redis), performance.now()];
  const { ok, errors } = await loop(SECONDS);
  const seconds = (performance.now() - t0) / 1000;
  const [cpu1, r1] = [await gwCpu(), await redisNow(redis)];
  await pool.close();
  const calls = [...r1.calls].map(([c, n]) => [c, n - (r0.calls.get(c) ?? 0)] as const).filter(([, n]) => n > 0).sort((a, b) => b[1] - a[1]);
  const total = calls.reduce((s, [, n]) => s + n, 0);
  const us = (s: number) => Math.round((s / ok) * 1e6);
  console.log(`${label} (load average ${loadavg()[0]!.toFixed(1)}): ${Math.round(ok / seconds)}/s (${errors} errors); gateway CPU ${us(cpu1 - cpu0)} µs/request (${((cpu1 - cpu0) / seconds).toFixed(2)} cores); Redis CPU ${us(r1.cpu - r0.cpu)} µs/request (${((r1.cpu - r0.cpu) / seconds).toFixed(2)} cores); Redis commands ${(total / ok).toFixed(2)}/request: ${calls.slice(0, 6).map(([c, n]) => `${c} ${(n / ok).toFixed(2)}`).join(', ')}; ${r1.clients - 1} Redis connections`);
}

/** What the workers and Redis spend with no traffic (job workers waiting, timers), per second. */
async function idle(n: number, metricsUrl: string, redis: Redis): Promise<void> {
  const gwCpu = async () => metricValue(await (await fetch(metricsUrl)).text(), 'process_cpu_seconds_total');
  const [cpu0, r0, t0] = [await gwCpu(), await redisNow(redis), performance.now()];
  await new Promise((r) => setTimeout(r, 5000));
  const [cpu1, r1] = [await gwCpu(), await redisNow(redis)];
  const seconds = (performance.now() - t0) / 1000;
  const calls = [...r1.calls].reduce((sum, [c, v]) => sum + v - (r0.calls.get(c) ?? 0), 0);
  console.log(`${n} worker(s), idle: gateway ${((cpu1 - cpu0) / seconds).toFixed(3)} cores, Redis ${((r1.cpu - r0.cpu) / seconds).toFixed(3)} cores, ${Math.round(calls / seconds)} Redis commands/s (two scrapes included)`);
}

const redis = await startRedis();
const client = redis.client();
const chatUp = await startBenchUpstream();
const stub = await startStub();
const dir = mkdtempSync(join(tmpdir(), 'gw-bench-workers-'));
const chatBody = chatRequest(false);
const createBody = createRequest();
for (let round = 0; round < ROUNDS; round++) {
  for (const n of WORKERS) {
    const config = join(dir, `config-${round}-${n}.yaml`);
    const metricsPort = await freePort();
    writeFileSync(config, `
server: { host: 127.0.0.1, port: 0 }
metrics: { port: ${metricsPort} }
store: { kind: redis, redis_url: "${redis.url}", key_prefix: "bw${round}${n}" }
sandbox: { enabled: false }
admin: { token: ${ADMIN} }
log: { level: info }
vendors: { dir: ${JSON.stringify(join(ROOT, 'vendors'))}, enabled: [provider_c, provider_d] }
${NO_LIMITS}
upstreams:
  provider_c: { base_url: "${chatUp.url}", credentials: { api_key: bench } }
  provider_d: { base_url: "${stub.url}", credentials: { api_key: bench } }
`);
    const port = await freePort();
    const proc = await startServe(config, port, ['--workers', String(n)]);
    const base = `http://127.0.0.1:${port}`;
    const tenant = await admin(base, '/tenants', { name: 'bench' });
    const { key } = await admin(base, `/tenants/${tenant.id}/keys`, {});
    await admin(base, `/tenants/${tenant.id}/wallet/topups`, { credits: '1000000000.00' });
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
    await idle(n, metricsUrl, client);
    await window(`${n} worker(s), sync chat`, base, metricsUrl, client, async (pool) => {
      const r = await pool.request({ path: '/v1/chat/completions', method: 'POST', headers, body: chatBody });
      await r.body.dump();
      return r.statusCode === 200;
    });
    await window(`${n} worker(s), async creates`, base, metricsUrl, client, async (pool) => {
      const r = await pool.request({ path: D, method: 'POST', headers, body: createBody });
      await r.body.dump();
      return r.statusCode === 202;
    });
    await new Promise((resolve) => {
      proc.once('exit', resolve);
      proc.kill('SIGTERM');
    });
  }
}
await chatUp.close();
await stub.close();
await redis.stop();
