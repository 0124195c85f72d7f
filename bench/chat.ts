// Benchmark of the chat proxy path: `npx node bench/chat.ts` (or `npm run bench`).
//
// One run compares three targets on the same upstream and the same load:
//   direct    the load generator talks to the upstream itself
//   minproxy  a minimal keep-alive node:http proxy (bench/chat-minproxy.ts, ~30 lines)
//   gateway   the full gateway path: auth, validation, rate limits, billing, access log
// for sync and streamed completions at 10 and 64 connections (closed loop, keep-alive), and an
// unloaded time-to-first-byte run for streams (the upstream holds the stream open 20 ms after its
// first event).
// The proxies run alone on core 0 (taskset); this process (upstream + load) runs on core 1.
// CPU time per request is the proxy process's own user+system time (all its threads) over the
// measured window divided by the requests completed in it.
//
// Env: BENCH_SECONDS (default 4) per measured run, BENCH_WARMUP_SECONDS (default 1.5).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { Pool, type Dispatcher } from 'undici';
import { startBenchUpstream, type BenchUpstream } from './chat-upstream.ts';

const HERE = fileURLToPath(new URL('./', import.meta.url));
const SECONDS = Number(process.env.BENCH_SECONDS ?? 4);
const WARMUP = Number(process.env.BENCH_WARMUP_SECONDS ?? 1.5);
const CONNECTIONS = [10, 64];

export const TARGETS = {
  sync_cpu_us: 170,
  added_p50_ms: 1,
  added_p99_ms: 3,
  p99_64_over_10: 3,
  rps_vs_minproxy: 0.5,
  ttfb_added_ms: 0.5,
};

const request = (stream: boolean) =>
  Buffer.from(JSON.stringify({
    model: 'gpt-4o-mini',
    messages: [
      { role: 'system', content: 'You are a concise assistant. Answer in one short paragraph.' },
      { role: 'user', content: 'Explain in two sentences why the sky looks blue during the day and red at sunset.' },
    ],
    temperature: 0.7,
    max_completion_tokens: 200,
    ...(stream ? { stream: true } : {}),
  }));

interface Target {
  name: 'direct' | 'minproxy' | 'gateway';
  url: string;
  headers: Record<string, string>;
  child?: ChildProcess;
}

interface Sample {
  rps: number;
  p50: number;
  p99: number;
  ttfb50: number;
  cpuUs: number | undefined;
  errors: number;
  count: number;
}

function pinSelf(core: number): void {
  const r = spawnSync('taskset', ['-a', '-p', '-c', String(core), String(process.pid)], { stdio: 'ignore' });
  if (r.status !== 0) console.warn('taskset is not available: processes are not pinned');
}

function startChild(file: string, upstream: string): Promise<{ child: ChildProcess; msg: { url: string; key?: string } }> {
  const child = spawn('taskset', ['-c', '0', process.execPath, `${HERE}${file}`], {
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    env: { ...process.env, UPSTREAM_URL: upstream },
  });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`${file} exited with ${code}`)));
    child.once('message', (msg) => resolve({ child, msg: msg as { url: string; key?: string } }));
  });
}

function cpuOf(child: ChildProcess | undefined): Promise<number | undefined> {
  if (!child) return Promise.resolve(undefined);
  return new Promise((resolve) => {
    child.once('message', (m) => {
      const c = (m as { cpu: NodeJS.CpuUsage }).cpu;
      resolve(c.user + c.system);
    });
    child.send({ cpu: true });
  });
}

/** One request; resolves with [time to first body byte, total] in ms, or throws. */
function once(pool: Pool, path: string, headers: Record<string, string>, body: Buffer): Promise<[number, number]> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    let first = 0;
    let status = 0;
    const handler: Dispatcher.DispatchHandler = {
      onRequestStart() {},
      onResponseStart(_c, statusCode) {
        status = statusCode;
      },
      onResponseData() {
        if (!first) first = performance.now();
      },
      onResponseEnd() {
        const t = performance.now();
        if (status !== 200) reject(new Error(`HTTP ${status}`));
        else resolve([(first || t) - t0, t - t0]);
      },
      onResponseError(_c, err) {
        reject(err);
      },
    };
    pool.dispatch({ path, method: 'POST', headers, body }, handler);
  });
}

function pct(sorted: Float64Array, p: number): number {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

async function load(t: Target, stream: boolean, connections: number): Promise<Sample> {
  const pool = new Pool(t.url, { connections, pipelining: 1, keepAliveTimeout: 60_000 });
  const body = request(stream);
  const headers = { ...t.headers, 'content-type': 'application/json' };
  const path = '/v1/chat/completions';
  let phase: 'warmup' | 'measure' | 'stop' = 'warmup';
  const totals: number[] = [];
  const firsts: number[] = [];
  let errors = 0;
  const worker = async () => {
    while (phase !== 'stop') {
      const counted = phase === 'measure';
      try {
        const [first, total] = await once(pool, path, headers, body);
        if (counted) {
          totals.push(total);
          firsts.push(first);
        }
      } catch {
        if (counted) errors++;
      }
    }
  };
  const workers = Array.from({ length: connections }, worker);
  await sleep(WARMUP * 1000);
  const cpu0 = await cpuOf(t.child);
  phase = 'measure';
  const t0 = performance.now();
  await sleep(SECONDS * 1000);
  phase = 'stop';
  await Promise.all(workers);
  const elapsed = (performance.now() - t0) / 1000;
  const cpu1 = await cpuOf(t.child);
  await pool.close();
  const sorted = Float64Array.from(totals).sort();
  const firstSorted = Float64Array.from(firsts).sort();
  const count = totals.length + errors;
  return {
    rps: totals.length / elapsed,
    p50: pct(sorted, 50),
    p99: pct(sorted, 99),
    ttfb50: pct(firstSorted, 50),
    cpuUs: cpu0 === undefined || cpu1 === undefined ? undefined : (cpu1 - cpu0) / count,
    errors,
    count,
  };
}

/** Unloaded: one connection, one request at a time; the upstream holds the stream open between events. */
async function ttfb(t: Target, up: BenchUpstream, n: number): Promise<{ p50: number; p90: number }> {
  up.holdMs = 20;
  const pool = new Pool(t.url, { connections: 1 });
  const headers = { ...t.headers, 'content-type': 'application/json' };
  const body = request(true);
  const firsts: number[] = [];
  try {
    for (let i = 0; i < n + 20; i++) {
      const [first] = await once(pool, '/v1/chat/completions', headers, body);
      if (i >= 20) firsts.push(first);
    }
  } finally {
    up.holdMs = 0;
    await pool.close();
  }
  const s = Float64Array.from(firsts).sort();
  return { p50: pct(s, 50), p90: pct(s, 90) };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const f = (n: number | undefined, d = 2) => (n === undefined || Number.isNaN(n) ? '-' : n.toFixed(d));

export async function main(): Promise<boolean> {
  pinSelf(1);
  const up = await startBenchUpstream();
  const mp = await startChild('chat-minproxy.ts', up.url);
  const gw = await startChild('chat-gateway.ts', up.url);
  const targets: Target[] = [
    { name: 'direct', url: up.url, headers: {} },
    { name: 'minproxy', url: mp.msg.url, headers: {}, child: mp.child },
    { name: 'gateway', url: gw.msg.url, headers: { authorization: `Bearer ${gw.msg.key}` }, child: gw.child },
  ];
  const results = new Map<string, Sample>();
  try {
    console.log(`chat proxy benchmark: ${SECONDS}s per run after ${WARMUP}s warm-up; proxies pinned to core 0, upstream + load on core 1`);
    console.log('mode    conns  target      req/s      p50 ms   p99 ms   ttfb50 ms  cpu µs/req  errors');
    for (const mode of ['sync', 'stream'] as const) {
      for (const c of CONNECTIONS) {
        for (const t of targets) {
          const s = await load(t, mode === 'stream', c);
          results.set(`${mode}/${c}/${t.name}`, s);
          console.log(`${mode.padEnd(7)} ${String(c).padStart(5)}  ${t.name.padEnd(9)} ${f(s.rps, 0).padStart(8)} ${f(s.p50, 3).padStart(10)} ${f(s.p99, 3).padStart(8)} ${f(s.ttfb50, 3).padStart(10)} ${f(s.cpuUs, 1).padStart(11)} ${String(s.errors).padStart(7)}`);
        }
      }
    }
    const tt = new Map<string, { p50: number; p90: number }>();
    for (const t of targets) tt.set(t.name, await ttfb(t, up, 200));
    console.log('\nunloaded stream time-to-first-byte (1 connection, stream held open 20 ms after the first event):');
    for (const t of targets) console.log(`  ${t.name.padEnd(9)} p50 ${f(tt.get(t.name)!.p50, 3)} ms  p90 ${f(tt.get(t.name)!.p90, 3)} ms`);

    const g = (k: string) => results.get(k)!;
    const checks: [string, number, string, boolean][] = [];
    const check = (name: string, value: number, target: string, ok: boolean) => checks.push([name, value, target, ok]);
    check('gateway CPU per sync completion (µs, 10 conns)', g('sync/10/gateway').cpuUs!, `≤ ${TARGETS.sync_cpu_us}`, g('sync/10/gateway').cpuUs! <= TARGETS.sync_cpu_us);
    check('gateway CPU per sync completion (µs, 64 conns)', g('sync/64/gateway').cpuUs!, `≤ ${TARGETS.sync_cpu_us}`, g('sync/64/gateway').cpuUs! <= TARGETS.sync_cpu_us);
    for (const mode of ['sync', 'stream']) {
      for (const c of CONNECTIONS) {
        const ratio = g(`${mode}/${c}/gateway`).rps / g(`${mode}/${c}/minproxy`).rps;
        check(`${mode} req/s gateway ÷ minproxy (${c} conns)`, ratio, `≥ ${TARGETS.rps_vs_minproxy}`, ratio >= TARGETS.rps_vs_minproxy);
      }
      const a50 = g(`${mode}/10/gateway`).p50 - g(`${mode}/10/direct`).p50;
      const a99 = g(`${mode}/10/gateway`).p99 - g(`${mode}/10/direct`).p99;
      check(`${mode} added latency p50 (ms, 10 conns)`, a50, `≤ ${TARGETS.added_p50_ms}`, a50 <= TARGETS.added_p50_ms);
      check(`${mode} added latency p99 (ms, 10 conns)`, a99, `≤ ${TARGETS.added_p99_ms}`, a99 <= TARGETS.added_p99_ms);
      const growth = g(`${mode}/64/gateway`).p99 / g(`${mode}/10/gateway`).p99;
      check(`${mode} gateway p99 at 64 ÷ p99 at 10`, growth, `≤ ${TARGETS.p99_64_over_10}`, growth <= TARGETS.p99_64_over_10);
    }
    const addedTtfb = tt.get('gateway')!.p50 - tt.get('direct')!.p50;
    check('stream TTFB above direct, unloaded (ms, p50)', addedTtfb, `≤ ${TARGETS.ttfb_added_ms}`, addedTtfb <= TARGETS.ttfb_added_ms);
    console.log('\ntargets:');
    for (const [name, value, target, ok] of checks) console.log(`  ${ok ? 'ok  ' : 'MISS'} ${name.padEnd(48)} ${f(value, 3).padStart(9)}  (${target})`);
    return checks.every((c) => c[3]);
  } finally {
    mp.child.disconnect();
    gw.child.disconnect();
    await up.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const ok = await main();
  process.exitCode = ok ? 0 : 1;
}
