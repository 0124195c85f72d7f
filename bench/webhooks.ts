// Benchmark: signed webhook deliveries per second to a local HTTPS receiver, and the API's
// latency while a delivery burst runs. `npm run bench -- webhooks`
//
// The gateway (bench/webhooks-gateway.ts) and the receiver (bench/webhooks-receiver.ts) run in
// their own processes. First the API's idle latency: GET /v1/balance (authenticated, one store
// read) over 8 keep-alive connections for BENCH_SECONDS. Then a burst of BENCH_EVENTS events to
// 5 endpoints (one delivery each: signed and sent by the Piscina pool over HTTPS) while the same
// API load runs; deliveries per second are counted at the receiver (distinct delivery ids).
// Targets: >= 2,000 signed deliveries/s; the API's p99 during the burst within +20% of idle.
import { performance } from 'node:perf_hooks';
import { Pool } from 'undici';
import { ask, child, pct } from './support.ts';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 4);
const EVENTS = Number(process.env.BENCH_EVENTS ?? 4000);
const ENDPOINTS = 5;


/** Closed-loop GETs on `connections` connections until `until()` is true; latencies in ms. */
async function apiLoad(pool: Pool, key: string, until: () => boolean): Promise<number[]> {
  const lat: number[] = [];
  await Promise.all(Array.from({ length: 8 }, async () => {
    while (!until()) {
      const t0 = performance.now();
      const r = await pool.request({ path: '/v1/balance', method: 'GET', headers: { authorization: `Bearer ${key}` } });
      await r.body.dump();
      lat.push(performance.now() - t0);
    }
  }));
  return lat;
}

const receiver = await child('webhooks-receiver.ts');
const gw = await child('webhooks-gateway.ts', { RECEIVER_CA: receiver.msg.ca });
const pool = new Pool(gw.msg.url, { connections: 8 });
await ask(gw.proc, { cmd: 'setup', url: receiver.msg.url, endpoints: ENDPOINTS }, 'setup');

// Warm-up (pool threads, TLS sessions), then the idle API figure.
await ask(gw.proc, { cmd: 'burst', events: 200 }, 'burst');
await new Promise((r) => setTimeout(r, 1500));
let stopAt = performance.now() + SECONDS * 1000;
const idle = await apiLoad(pool, gw.msg.key, () => performance.now() > stopAt);

const before = (await ask<{ distinct: number }>(receiver.proc, { cmd: 'count' }, 'count')).distinct;
const want = before + EVENTS * ENDPOINTS;
let done = false;
const t0 = performance.now();
let finishedAt = 0;
const busy = apiLoad(pool, gw.msg.key, () => done);
await ask(gw.proc, { cmd: 'burst', events: EVENTS }, 'burst');
for (;;) {
  const c = await ask<{ distinct: number }>(receiver.proc, { cmd: 'count' }, 'count');
  if (c.distinct >= want) break;
  if (performance.now() - t0 > 120_000) throw new Error(`only ${c.distinct - before} of ${EVENTS * ENDPOINTS} deliveries arrived`);
  await new Promise((r) => setTimeout(r, 20));
}
finishedAt = performance.now();
done = true;
const during = await busy;
stopAt = 0;

const seconds = (finishedAt - t0) / 1000;
const rate = Math.round((EVENTS * ENDPOINTS) / seconds);
const idleP99 = pct(idle, 99);
const busyP99 = pct(during, 99);
console.log(`deliveries: ${EVENTS * ENDPOINTS} (${EVENTS} events x ${ENDPOINTS} endpoints) in ${seconds.toFixed(2)} s -> ${rate} deliveries/s (target >= 2000: ${rate >= 2000 ? 'MET' : 'NOT MET'})`);
console.log(`API GET /v1/balance, 8 connections: idle p50 ${pct(idle, 50).toFixed(2)} ms p99 ${idleP99.toFixed(2)} ms (${idle.length} requests); during the burst p50 ${pct(during, 50).toFixed(2)} ms p99 ${busyP99.toFixed(2)} ms (${during.length} requests)`);
console.log(`API p99 during the burst / idle: ${(busyP99 / idleP99).toFixed(2)} (target <= 1.20: ${busyP99 <= idleP99 * 1.2 ? 'MET' : 'NOT MET'})`);
console.log(JSON.stringify({ bench: 'webhooks', deliveries_per_second: rate, api_p99_idle_ms: idleP99, api_p99_burst_ms: busyP99 }));
await pool.close();
gw.proc.send({ cmd: 'stop' });
receiver.proc.send({ cmd: 'stop' });
