// Benchmark: the store modes. `npm run bench -- store`
//   1. creates/s and GET polls/s over HTTP, on the memory store and on Redis (a real
//      redis-server on loopback): model D creates ({prompt, n: 1}) on 64 keep-alive connections,
//      then GETs of the created tasks; the gateway (bench/media-gateway.ts) and the upstream stub
//      run in their own processes.
//   2. Redis memory per finished task: BENCH_TASKS (100000) completed tasks written through the
//      Redis task store; used_memory before and after.
//   3. Gateway RSS under a steady load on Redis: BENCH_RATE creates/s for BENCH_STEADY_SECONDS
//      (60; set 1800 for the 30-minute figure), RSS sampled every 5 s.
// Targets: >= 2,000 creates/s on Redis (>= 5,000 on memory); <= 2 KB of Redis per finished task;
// RSS flat under steady load.
import { performance } from 'node:perf_hooks';
import { Pool } from 'undici';
import { ask, child, stop } from './support.ts';
import { RedisTaskStore } from '../engine/store/redis/index.ts';
import type { TaskRecord } from '../engine/tasks/task.ts';
import { startRedis } from '../test/helpers/redis.ts';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const TASKS = Number(process.env.BENCH_TASKS ?? 100_000);
const STEADY = Number(process.env.BENCH_STEADY_SECONDS ?? 60);
const RATE = Number(process.env.BENCH_RATE ?? 300);
const D = '/vendors/provider_d/v1/model_d/generation';


async function closedLoop(seconds: number, connections: number, one: (i: number) => Promise<boolean>): Promise<{ ok: number; errors: number; perSecond: number }> {
  let ok = 0;
  let errors = 0;
  let n = 0;
  const end = performance.now() + seconds * 1000;
  const t0 = performance.now();
  await Promise.all(Array.from({ length: connections }, async () => {
    while (performance.now() < end) (await one(n++)) ? ok++ : errors++;
  }));
  return { ok, errors, perSecond: Math.round(ok / ((performance.now() - t0) / 1000)) };
}

async function httpFigures(label: string, upstream: string, redisUrl?: string): Promise<number> {
  const gw = await child('media-gateway.ts', { UPSTREAM_URL: upstream, ...(redisUrl ? { BENCH_REDIS_URL: redisUrl } : {}) });
  const pool = new Pool(gw.msg.url, { connections: 64, pipelining: 1 });
  const headers = { authorization: `Bearer ${gw.msg.key}`, 'content-type': 'application/json' };
  const ids: string[] = [];
  const create = async () => {
    const r = await pool.request({ path: D, method: 'POST', headers, body: '{"prompt":"a red fox in fresh snow, watercolor","n":1}' });
    const text = await r.body.text();
    if (r.statusCode !== 202) return false;
    if (ids.length < 20_000) ids.push(JSON.parse(text).task_info.id);
    return true;
  };
  await closedLoop(1, 64, create); // warm-up
  const creates = await closedLoop(SECONDS, 64, create);
  const gets = await closedLoop(SECONDS, 64, async (i) => {
    const r = await pool.request({ path: `${D}/${ids[i % ids.length]}`, method: 'GET', headers });
    await r.body.dump();
    return r.statusCode === 200;
  });
  console.log(`${label}: ${creates.perSecond} creates/s (${creates.errors} errors), ${gets.perSecond} GET polls/s (${gets.errors} errors), 64 connections, ${SECONDS} s each`);
  await pool.close();
  await stop(gw.proc);
  return creates.perSecond;
}

async function redisMemoryPerTask(): Promise<number> {
  const redis = await startRedis();
  const client = redis.client();
  const store = new RedisTaskStore({ client, prefix: 'mem:' });
  const used = async () => Number(/used_memory:(\d+)/.exec(await client.info('memory'))![1]);
  const before = await used();
  const now = Date.now();
  let next = 0;
  await Promise.all(Array.from({ length: 64 }, async () => {
    for (let i = next++; i < TASKS; i = next++) {
      const id = `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`;
      const at = new Date(now + i).toISOString();
      const task: TaskRecord = {
        id, tenant_id: 'b1e2c3d4-0000-4000-8000-000000000001', vendor: 'provider_d', route: 'provider_d/image_generation', model_name: 'model_d',
        status: 'pending', created_at: at, updated_at: at,
        request: { prompt: 'a red fox in fresh snow, watercolor, soft morning light', n: 1, size: '1280*1280', prompt_extend: false, safety_filter: true },
        deadline_at: now + 600_000, poll_failures: 0, traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01', hold: 4000,
      };
      await store.create(task);
      await store.transition(id, ['pending'], { status: 'completed', upstream_task_id: `d-${i}`, result: { images: [`https://files.example.com/${id}/0.png`] }, charge: 4000, finalized: false, updated_at: at, checked_at: now, poll_n: 2 });
      await store.transition(id, ['completed'], { finalized: true });
    }
  }));
  const perTask = Math.round((await used()) - before) / TASKS;
  console.log(`Redis memory: ${TASKS} finished tasks use ${(((await used()) - before) / 1024 / 1024).toFixed(1)} MiB → ${Math.round(perTask)} B per task (target <= 2048: ${perTask <= 2048 ? 'MET' : 'NOT MET'})`);
  await redis.stop();
  return perTask;
}

async function steadyRss(upstream: string): Promise<void> {
  const redis = await startRedis();
  const gw = await child('media-gateway.ts', { UPSTREAM_URL: upstream, BENCH_REDIS_URL: redis.url, BENCH_TIMING_SCALE: '0.05' });
  const pool = new Pool(gw.msg.url, { connections: 16 });
  const headers = { authorization: `Bearer ${gw.msg.key}`, 'content-type': 'application/json' };
  const samples: number[] = [];
  let sent = 0;
  const t0 = performance.now();
  const sampler = setInterval(async () => samples.push((await ask<{ rss: number }>(gw.proc, { cmd: 'mem' }, 'mem')).rss), 5000);
  while (performance.now() - t0 < STEADY * 1000) {
    const due = Math.floor(((performance.now() - t0) / 1000) * RATE);
    const batch: Promise<void>[] = [];
    for (; sent < due; sent++) batch.push(pool.request({ path: D, method: 'POST', headers, body: '{"prompt":"steady","n":1}' }).then((r) => r.body.dump()));
    await Promise.all(batch);
    await new Promise((r) => setTimeout(r, 10));
  }
  clearInterval(sampler);
  const mb = (b: number) => (b / 1024 / 1024).toFixed(1);
  const first = samples[1] ?? samples[0]!;
  const last = samples.at(-1)!;
  console.log(`steady load on Redis: ${sent} creates at ${RATE}/s for ${STEADY} s; gateway RSS (MiB) after 10 s ${mb(first)}, end ${mb(last)}, max ${mb(Math.max(...samples))}; samples ${samples.map(mb).join(' ')}`);
  await pool.close();
  await stop(gw.proc);
  await redis.stop();
}

const stub = await child('stub-upstream.ts');
const memory = await httpFigures('memory', stub.msg.url);
const redis = await startRedis();
const onRedis = await httpFigures('redis ', stub.msg.url, redis.url);
await redis.stop();
console.log(`targets: >= 5000 creates/s on memory → ${memory >= 5000 ? 'MET' : 'NOT MET'}; >= 2000 creates/s on Redis → ${onRedis >= 2000 ? 'MET' : 'NOT MET'}`);
await redisMemoryPerTask();
await steadyRss(stub.msg.url);
stub.proc.send({ cmd: 'stop' });
