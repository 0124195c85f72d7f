// Benchmark: asynchronous creates per second on the memory store. `npm run bench -- throughput`
//
// The gateway (bench/media-gateway.ts: memory store, no limits, logs at warn) runs in its own
// process; the upstream stub (bench/stub-upstream.ts) in another, at nice 10, as the remote peer
// it stands for. This process drives closed-loop creates of text-to-image model D ({prompt, n: 1})
// over BENCH_CONNECTIONS keep-alive connections for BENCH_SECONDS after a warm-up, and counts the
// 202 answers. Every create runs the whole path: auth, rate-limit check, validation (schema and
// the size rules), pricing and a credit hold, the task store, task.created, then the upstream
// submission; the stub finishes each task at its first poll (the poll cadence is the
// descriptor's, scaled by BENCH_TIMING_SCALE, default 1), which settles its credits.
// Then the same creates without HTTP in front, driven inside the gateway process (the task
// lifecycle on the memory store; the upstream submissions they schedule compete for the same
// loop and are counted separately), to show where the time goes.
// Target: at least 5,000 creates per second on this 2-core machine.
// Env: BENCH_SECONDS (5), BENCH_WARMUP_SECONDS (2), BENCH_CONNECTIONS (64), BENCH_TIMING_SCALE (1),
//      BENCH_PROF=1 (CPU profile of the gateway in /tmp/tprof).
import { spawnSync, type ChildProcess } from 'node:child_process';
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { Pool } from 'undici';
import { child, stop } from './support.ts';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const WARMUP = Number(process.env.BENCH_WARMUP_SECONDS ?? 2);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 64);
const TARGET = 5000;
const D = '/vendors/provider_d/v1/model_d/generation';

const cpuOf = (p: ChildProcess) => new Promise<NodeJS.CpuUsage & { main?: NodeJS.CpuUsage }>((resolve) => {
  p.once('message', (m: { cpu: NodeJS.CpuUsage; main?: NodeJS.CpuUsage }) => resolve({ ...m.cpu, main: m.main }));
  p.send({ cmd: 'cpu' });
});

// BENCH_PIN=1: the gateway alone on core 0; this process and the stub on core 1.
const pin = (pid: number, core: number) => {
  if (process.env.BENCH_PIN) spawnSync('taskset', ['-a', '-p', '-c', String(core), String(pid)], { stdio: 'ignore' });
};
const stub = await child('stub-upstream.ts', {}, { nice: 10 });
const gw = await child('media-gateway.ts', { UPSTREAM_URL: stub.msg.url, BENCH_TIMING_SCALE: process.env.BENCH_TIMING_SCALE ?? '1' }, { execArgv: process.env.BENCH_PROF ? ['--cpu-prof', '--cpu-prof-dir=/tmp/tprof'] : [] });
const { url, key } = gw.msg as { url: string; key: string };
pin(gw.proc.pid!, 0);
pin(stub.proc.pid!, 1);
pin(process.pid, 1);
const pool = new Pool(url, { connections: CONNECTIONS, pipelining: 1, keepAliveTimeout: 60_000 });
const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
const body = Buffer.from(JSON.stringify({ prompt: 'a red fox in fresh snow, watercolor', n: 1 }));

let phase: 'warmup' | 'measure' | 'stop' = 'warmup';
let ok = 0;
let errors = 0;
const statuses = new Map<number, number>();
const worker = async () => {
  while (phase !== 'stop') {
    const counted = phase === 'measure';
    try {
      const res = await pool.request({ path: D, method: 'POST', headers, body });
      await res.body.dump();
      if (counted) {
        statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1);
        if (res.statusCode === 202) ok++;
        else errors++;
      }
    } catch {
      if (counted) errors++;
    }
  }
};
const workers = Array.from({ length: CONNECTIONS }, worker);
await new Promise((r) => setTimeout(r, WARMUP * 1000));
const cpu0 = await cpuOf(gw.proc);
const stubCpu0 = await cpuOf(stub.proc);
const selfCpu0 = process.cpuUsage();
phase = 'measure';
const t0 = performance.now();
await new Promise((r) => setTimeout(r, SECONDS * 1000));
phase = 'stop';
const seconds = (performance.now() - t0) / 1000;
const cpu1 = await cpuOf(gw.proc);
const stubCpu1 = await cpuOf(stub.proc);
const selfCpu = process.cpuUsage(selfCpu0);
await Promise.all(workers);
await pool.close();
// The same creates without HTTP, inside the gateway: the task lifecycle on the memory store.
await new Promise((r) => setTimeout(r, 1000));
const submits = () => new Promise<number>((resolve) => {
  stub.proc.once('message', (m: { submits: number }) => resolve(m.submits));
  stub.proc.send({ cmd: 'bytes' });
});
const submitsBefore = await submits();
const direct = await new Promise<{ count: number; seconds: number; cpu_us: number }>((resolve) => {
  gw.proc.once('message', (m) => resolve(m as never));
  gw.proc.send({ cmd: 'direct', seconds: SECONDS, concurrency: CONNECTIONS });
});
const submittedInWindow = (await submits()) - submitsBefore;
await stop(gw.proc);
await stop(stub.proc);

const rate = Math.round(ok / seconds);
console.log(`load average ${loadavg().map((x) => x.toFixed(2)).join(' ')}; ${CONNECTIONS} connections, ${SECONDS} s measured`);
console.log(`creates answered 202: ${ok} in ${seconds.toFixed(2)} s → ${rate} creates/s; other answers: ${errors} ${JSON.stringify(Object.fromEntries(statuses))}`);
const per = (us: number) => Math.round(us / Math.max(1, ok));
const gwUser = per(cpu1.user - cpu0.user);
const gwSystem = per(cpu1.system - cpu0.system);
const gwMain = per(cpu1.main!.user + cpu1.main!.system - cpu0.main!.user - cpu0.main!.system);
console.log(`gateway CPU per create: ${gwUser + gwSystem} µs (all its threads; ${gwUser} user, ${gwSystem} kernel); main thread ${gwMain} µs`);
console.log(`other CPU per create: upstream stub ${per(stubCpu1.user - stubCpu0.user + stubCpu1.system - stubCpu0.system)} µs, load generator ${per(selfCpu.user + selfCpu.system)} µs`);
const directRate = Math.round(direct.count / direct.seconds);
console.log(`in-process creates (no HTTP in front; validation, hold, store, event): ${direct.count} in ${direct.seconds.toFixed(2)} s → ${directRate} creates/s, ${Math.round(direct.cpu_us / Math.max(1, direct.count))} µs CPU each; upstream submissions completed in that window: ${submittedInWindow}`);
console.log(`target: ≥ ${TARGET} creates/s over HTTP → ${rate >= TARGET ? 'MET' : 'NOT MET'}; on the memory store without HTTP → ${directRate >= TARGET ? 'MET' : 'NOT MET'}`);
console.log(JSON.stringify({ bench: 'throughput', creates_per_second: rate, ok, errors, seconds, cpu_us_per_create: gwUser + gwSystem, direct_creates_per_second: directRate }));
