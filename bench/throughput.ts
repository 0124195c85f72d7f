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
// Runs at 64 and at 256 connections: a closed loop's rate depends on how much work is queued —
// with more requests waiting, every event-loop turn and every wake-up serves more of them.
// Each run reports the rate, the latency of the creates answered 202 (a create refused 503 at the
// backlog bound waits its Retry-After before the connection sends again, and is counted apart), and the CPU per create of the gateway (all
// threads and main thread), the stub and this load generator.
// Each run also prints the gateway's event-loop delay (p99, max) and the load generator's own
// longest stall: the three processes share two cores, so a stall of tens of ms in the load
// generator too is the machine, not the gateway. With BENCH_TURNS=1 the gateway runs under a
// CPU profile and the long-turn probe (bench/turns.ts): every stretch over 10 ms without a timers
// phase, what ran in it, the GC pauses, and how many of the creates slower than 50 ms overlapped them.
// Env: BENCH_SECONDS (10), BENCH_WARMUP_SECONDS (2), BENCH_CONNECTIONS (64,256), BENCH_TIMING_SCALE (1),
//      BENCH_PROF=1 (CPU profile of the gateway in /tmp/tprof), BENCH_TURNS=1, BENCH_GATEWAY_ARGS (node flags).
import { spawnSync, type ChildProcess } from 'node:child_process';
import { availableParallelism, loadavg } from 'node:os';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { Pool } from 'undici';
import { ask, child, createRequest, gatewayFlags, stop } from './support.ts';
import { analyse, missesExplained, readProfile, type Stretch, type TurnLog } from './turns.ts';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const WARMUP = Number(process.env.BENCH_WARMUP_SECONDS ?? 2);
const CONNECTIONS = (process.env.BENCH_CONNECTIONS ?? '64,256').split(',').map(Number);
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
const TURNS = !!process.env.BENCH_TURNS;
const SAMPLE_US = 500;
const turnsDir = TURNS ? mkdtempSync(join(tmpdir(), 'turns-')) : '';
// BENCH_GATEWAY_ARGS: node flags for the gateway (e.g. --trace-gc), after those `gateway serve` would
// start with on its CPUs (V8's worker pool: support.ts's gatewayFlags; one core with BENCH_PIN).
const gatewayArgs = await gatewayFlags(fileURLToPath(new URL('../', import.meta.url)), process.env.BENCH_PIN ? 1 : availableParallelism(), (process.env.BENCH_GATEWAY_ARGS ?? '').split(' ').filter(Boolean), process.env.NODE_OPTIONS);
const profArgs = TURNS ? ['--cpu-prof', `--cpu-prof-dir=${turnsDir}`, `--cpu-prof-interval=${SAMPLE_US}`] : process.env.BENCH_PROF ? ['--cpu-prof', '--cpu-prof-dir=/tmp/tprof'] : [];
const stub = await child('stub-upstream.ts', {}, { nice: 10 });
const gw = await child('media-gateway.ts', { UPSTREAM_URL: stub.msg.url, BENCH_TIMING_SCALE: process.env.BENCH_TIMING_SCALE ?? '1' }, { execArgv: [...gatewayArgs, ...profArgs] });
const turnLogs: Array<{ connections: number; log: TurnLog; slow: Stretch[] }> = [];
const hrUs = () => Number(process.hrtime.bigint() / 1000n);
const SLOW_MS = 50;
const { url, key } = gw.msg as { url: string; key: string };
pin(gw.proc.pid!, 0);
pin(stub.proc.pid!, 1);
pin(process.pid, 1);
const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
const body = createRequest();
const per = (us: number, n: number) => Math.round(us / Math.max(1, n));
const cpuUs = (a: NodeJS.CpuUsage, b: NodeJS.CpuUsage) => b.user + b.system - a.user - a.system;

/** Closed-loop creates over `connections` keep-alive connections: warm-up, then a measured window. */
async function measure(connections: number) {
  const pool = new Pool(url, { connections, pipelining: 1, keepAliveTimeout: 60_000 });
  let phase: 'warmup' | 'measure' | 'stop' = 'warmup';
  let ok = 0;
  let errors = 0;
  const statuses = new Map<number, number>();
  const latencies: number[] = [];
  const slow: Stretch[] = [];
  const worker = async () => {
    while (phase !== 'stop') {
      const counted = phase === 'measure';
      const t = performance.now();
      const start = hrUs();
      try {
        const res = await pool.request({ path: D, method: 'POST', headers, body });
        await res.body.dump();
        if (counted) {
          const ms = performance.now() - t;
          statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1);
          if (res.statusCode === 202) {
            ok++;
            latencies.push(ms);
            if (ms > SLOW_MS) slow.push({ start, end: hrUs() });
          } else errors++;
        }
        // A create refused at the backlog bound is sent again after its Retry-After, as a client
        // would (bench/memory.ts, bench/allocation.ts): sent again at once, it is only more load.
        const retryAfter = Number(res.headers['retry-after']);
        if (res.statusCode === 503 && retryAfter > 0) await new Promise((r) => setTimeout(r, retryAfter * 1000));
      } catch {
        if (counted) errors++;
      }
    }
  };
  const workers = Array.from({ length: connections }, worker);
  await new Promise((r) => setTimeout(r, WARMUP * 1000));
  const cpu0 = await cpuOf(gw.proc);
  const stubCpu0 = await cpuOf(stub.proc);
  const selfCpu0 = process.cpuUsage();
  await ask(gw.proc, { cmd: TURNS ? 'turns-start' : 'eld-start' }, TURNS ? 'turns-started' : 'eld-started');
  const stalls = monitorEventLoopDelay({ resolution: 1 });
  stalls.enable();
  phase = 'measure';
  const t0 = performance.now();
  await new Promise((r) => setTimeout(r, SECONDS * 1000));
  phase = 'stop';
  stalls.disable();
  const loop = TURNS
    ? await ask<{ log: TurnLog; callsRunning: { mean: number; max: number }; eld: { p99: number; max: number } }>(gw.proc, { cmd: 'turns-stop' }, 'turns')
    : { eld: await ask<{ p99: number; max: number }>(gw.proc, { cmd: 'eld-stop' }, 'eld') };
  if ('log' in loop) {
    turnLogs.push({ connections, log: loop.log, slow: [...slow] });
    console.log(`  task calls running (submissions and polls, sampled every 100 ms): mean ${loop.callsRunning.mean}, max ${loop.callsRunning.max}`);
  }
  const seconds = (performance.now() - t0) / 1000;
  const cpu1 = await cpuOf(gw.proc);
  const stubCpu1 = await cpuOf(stub.proc);
  const selfCpu = process.cpuUsage(selfCpu0);
  await Promise.all(workers);
  await pool.close();
  latencies.sort((a, b) => a - b);
  const pct = (q: number) => Math.round((latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0) * 100) / 100;
  const rate = Math.round(ok / seconds);
  const r = {
    connections, creates_per_second: rate, ok, errors, seconds,
    p50_ms: pct(0.5), p99_ms: pct(0.99),
    cpu_us_per_create: per(cpuUs(cpu0, cpu1), ok),
    cpu_user_us: per(cpu1.user - cpu0.user, ok), cpu_kernel_us: per(cpu1.system - cpu0.system, ok),
    main_thread_us: per(cpuUs(cpu0.main!, cpu1.main!), ok),
    stub_us: per(cpuUs(stubCpu0, stubCpu1), ok), load_generator_us: per(selfCpu.user + selfCpu.system, ok),
    gateway_loop_delay_p99_ms: loop.eld.p99, gateway_loop_delay_max_ms: loop.eld.max,
    load_generator_stall_max_ms: Math.round(stalls.max / 1e4) / 100, load_generator_stall_p99_ms: Math.round(stalls.percentile(99) / 1e4) / 100,
    over_50ms: slow.length,
  };
  console.log(`${connections} connections: ${ok} creates answered 202 in ${seconds.toFixed(2)} s → ${rate} creates/s (p50 ${r.p50_ms} ms, p99 ${r.p99_ms} ms); other answers: ${errors} ${JSON.stringify(Object.fromEntries(statuses))}`);
  console.log(`  gateway CPU per create: ${r.cpu_us_per_create} µs (all its threads; ${r.cpu_user_us} user, ${r.cpu_kernel_us} kernel), main thread ${r.main_thread_us} µs; upstream stub ${r.stub_us} µs, load generator ${r.load_generator_us} µs`);
  console.log(`  gateway event-loop delay p99 ${r.gateway_loop_delay_p99_ms} ms, max ${r.gateway_loop_delay_max_ms} ms; load generator's own stalls p99 ${r.load_generator_stall_p99_ms} ms, max ${r.load_generator_stall_max_ms} ms; creates over ${SLOW_MS} ms: ${slow.length}`);
  return r;
}

const runs = [];
for (const c of CONNECTIONS) runs.push(await measure(c));

// The same creates without HTTP, inside the gateway: the task lifecycle on the memory store.
await new Promise((r) => setTimeout(r, 1000));
const submits = () => new Promise<number>((resolve) => {
  stub.proc.once('message', (m: { submits: number }) => resolve(m.submits));
  stub.proc.send({ cmd: 'bytes' });
});
const submitsBefore = await submits();
const direct = await new Promise<{ count: number; refused: number; seconds: number; cpu_us: number }>((resolve) => {
  gw.proc.once('message', (m) => resolve(m as never));
  gw.proc.send({ cmd: 'direct', seconds: SECONDS, concurrency: 64 });
});
const submittedInWindow = (await submits()) - submitsBefore;
await stop(gw.proc);
await stop(stub.proc);
if (TURNS) {
  // The gateway wrote its profile on the way out; one profile covers every run, cut per run.
  const profile = readProfile(turnsDir);
  writeFileSync(join(turnsDir, 'turns.json'), JSON.stringify({ sampleUs: SAMPLE_US, runs: turnLogs }));
  for (const { connections, log, slow } of turnLogs) {
    console.log(`gateway at ${connections} connections (profile in ${turnsDir}):`);
    for (const line of analyse(profile, log, SAMPLE_US).lines) console.log(`  ${line}`);
    console.log(`  ${missesExplained(slow, log)}`);
  }
}

console.log(`load average ${loadavg().map((x) => x.toFixed(2)).join(' ')}; ${SECONDS} s measured per run`);
const directRate = Math.round(direct.count / direct.seconds);
console.log(`in-process creates (no HTTP in front; validation, hold, store, event): ${direct.count} in ${direct.seconds.toFixed(2)} s → ${directRate} creates/s, ${Math.round(direct.cpu_us / Math.max(1, direct.count))} µs CPU each; upstream submissions completed in that window: ${submittedInWindow}; refused at the backlog bound (waited 10 ms): ${direct.refused}`);
for (const r of runs) console.log(`target: ≥ ${TARGET} creates/s over HTTP at ${r.connections} connections → ${r.creates_per_second >= TARGET ? 'MET' : 'NOT MET'} (${r.creates_per_second})`);
console.log(JSON.stringify({ bench: 'throughput', runs, direct_creates_per_second: directRate }));
