// Benchmark: does a burst of big uploads stall other requests? `npm run bench -- media`
//
// Four processes: the gateway (bench/media-gateway.ts), a stub upstream that drains bodies
// without parsing them (bench/stub-upstream.ts), the big-upload client (bench/media-sender.ts)
// and this one, which sends small creates (model D, a short prompt) open-loop at BENCH_SMALL_RPS
// a second and times them. The burst: 20 concurrent creates on video model A, each carrying a
// distinct 15 MB Base64 image (15 MiB of Base64 text, about 11 MiB decoded).
// Reported, with decoding in the media pool and on the main thread (GATEWAY_MEDIA_DECODE):
//   - the small requests' latency p50 / p99 before and during the burst;
//   - the gateway's own event-loop delay (monitorEventLoopDelay, 1 ms resolution) during the
//     burst: from the first big byte sent until the upstream has received all 20 submissions.
// Target: event-loop delay p99 under 10 ms during the burst with the pool.
// The upload client and the stub stand for remote peers and run at nice 10 (BENCH_PEER_NICE), so
// on a small host their CPU time (300 MB through loopback TCP each way) does not starve the two
// processes being measured. The load average is printed: other work on the host inflates figures.
// Env: BENCH_BIG (20), BENCH_BIG_MB (15), BENCH_SMALL_RPS (200), BENCH_MODES (pool,inline),
//      BENCH_PROF=1 (CPU profiles of the gateway in /tmp/prof), BENCH_GATEWAY_ARGS (node flags),
//      BENCH_DEBUG=1 (the slowest small requests, and how long they took to reach the gateway),
//      BENCH_SEND_TO_STUB=1 (send the burst to the stub instead: the host's network alone).
import type { ChildProcess } from 'node:child_process';
import { loadavg } from 'node:os';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { Pool } from 'undici';
import { ask, child, pct, stop } from './support.ts';

const SMALL_RPS = Number(process.env.BENCH_SMALL_RPS ?? 200);
const TARGET_ELD_P99_MS = 10;
// The upload client and the upstream stand for machines elsewhere; on this host they run at a
// lower priority (nice), so their own CPU time does not pass for the gateway's.
const PEER_NICE = Number(process.env.BENCH_PEER_NICE ?? 10);
const A = '/vendors/provider_a/v1/model_a/generation';
const D = '/vendors/provider_d/v1/model_d/generation';

interface Result {
  mode: string;
  before: { p50: number; p99: number; n: number };
  during: { p50: number; p99: number; max: number; n: number };
  eld: { p50: number; p99: number; max: number; mean: number };
  burstMs: number;
  bigStatuses: Record<string, number>;
  load: number;
}

const r2 = (x: number) => Math.round(x * 100) / 100;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function runMode(mode: string, sender: ChildProcess): Promise<Result> {
  const stub = await child('stub-upstream.ts', {}, { nice: PEER_NICE });
  const gw = await child('media-gateway.ts', { UPSTREAM_URL: stub.msg.url, GATEWAY_MEDIA_DECODE: mode }, { execArgv: [...(process.env.BENCH_PROF ? ['--cpu-prof', '--cpu-prof-dir=/tmp/prof'] : []), ...(process.env.BENCH_GATEWAY_ARGS?.split(' ').filter(Boolean) ?? [])] });
  const { url, key } = gw.msg as { url: string; key: string };
  const small = new Pool(url, { connections: 32, keepAliveTimeout: 60_000 });
  const smallBody = Buffer.from(JSON.stringify({ prompt: 'a red fox in the snow', n: 1 }));
  const post = async () => {
    const res = await small.request({ path: D, method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'x-sent-at': String(Date.now()) }, body: smallBody });
    await res.body.dump();
    if (res.statusCode !== 202) throw new Error(`small create answered ${res.statusCode}`);
  };
  // Warm up: JIT, connections, the pool's threads (two big creates).
  for (let i = 0; i < 300; i++) await post();
  await ask(sender, { cmd: 'send', url, key, path: A, count: 2 }, 'sent');

  // Small requests arrive open-loop at a steady rate, whatever the gateway is doing.
  let phase: 'before' | 'during' | 'stop' = 'before';
  let burstStart = 0;
  const slow: Array<[number, number]> = [];
  const lat: Record<'before' | 'during', number[]> = { before: [], during: [] };
  const inflight = new Set<Promise<void>>();
  const ticker = setInterval(() => {
    const p = phase;
    if (p === 'stop') return;
    const t0 = performance.now();
    const one: Promise<void> = post().then(() => {
      lat[p].push(performance.now() - t0);
      if (process.env.BENCH_DEBUG && p === 'during') slow.push([t0 - burstStart, performance.now() - t0]);
    }).finally(() => inflight.delete(one));
    inflight.add(one);
  }, 1000 / SMALL_RPS);
  await sleep(2000);

  const upBefore = await ask<{ bytes: number }>(stub.proc, { cmd: 'bytes' }, 'bytes');
  await ask(gw.proc, { cmd: 'eld-start' }, 'eld-started');
  phase = 'during';
  const t0 = performance.now();
  burstStart = t0;
  const selfEld = monitorEventLoopDelay({ resolution: 1 });
  selfEld.enable();
  const sent = await ask<{ statuses: number[]; bytes: number }>(sender, { cmd: 'send', url: process.env.BENCH_SEND_TO_STUB ? stub.msg.url : url, key, path: A }, 'sent');
  // The burst ends when the upstream has every big submission (the gateway's sending is part of it).
  for (;;) {
    const up = await ask<{ bytes: number }>(stub.proc, { cmd: 'bytes' }, 'bytes');
    if (up.bytes - upBefore.bytes >= sent.bytes * 0.99 || performance.now() - t0 > 120_000) break;
    await sleep(5);
  }
  const burstMs = performance.now() - t0;
  const eld = await ask<Result['eld']>(gw.proc, { cmd: 'eld-stop' }, 'eld');
  phase = 'stop';
  clearInterval(ticker);
  await Promise.all(inflight);
  selfEld.disable();
  if (process.env.BENCH_DEBUG) console.log(mode, 'client event-loop delay p99/max ms', selfEld.percentile(99) / 1e6, selfEld.max / 1e6);
  if (process.env.BENCH_DEBUG) console.log(mode, 'slowest small requests [start ms after burst start, latency ms]:', JSON.stringify(slow.sort((a, b) => b[1] - a[1]).slice(0, 12).map(([a, b]) => [Math.round(a), Math.round(b)])));
  const bigStatuses: Record<string, number> = {};
  for (const s of sent.statuses) bigStatuses[s] = (bigStatuses[s] ?? 0) + 1;
  await small.close();
  await stop(gw.proc);
  await stop(stub.proc);
  return {
    mode,
    before: { p50: r2(pct(lat.before, 50)), p99: r2(pct(lat.before, 99)), n: lat.before.length },
    during: { p50: r2(pct(lat.during, 50)), p99: r2(pct(lat.during, 99)), max: r2(Math.max(...lat.during)), n: lat.during.length },
    eld: { p50: eld.p50, p99: eld.p99, max: eld.max, mean: eld.mean },
    burstMs: Math.round(burstMs),
    bigStatuses,
    load: r2(loadavg()[0]!),
  };
}

const sender = await child('media-sender.ts', {}, { nice: PEER_NICE });
console.log(`${(sender.msg.total / 2 ** 20).toFixed(0)} MiB of bodies prepared; load average ${loadavg().map(r2).join(' ')}`);
const results: Result[] = [];
for (const mode of (process.env.BENCH_MODES ?? 'pool,inline').split(',')) {
  results.push(await runMode(mode, sender.proc));
  console.log(`${mode}: done (${JSON.stringify(results.at(-1)!.bigStatuses)})`);
}
await stop(sender.proc);
console.log('');
console.log('decoding   small before p50/p99 ms   small during p50/p99/max ms (n)   event-loop delay p50/p99/max ms   burst ms   load');
for (const r of results) {
  console.log(
    `${r.mode.padEnd(10)} ${`${r.before.p50} / ${r.before.p99}`.padEnd(25)} ${`${r.during.p50} / ${r.during.p99} / ${r.during.max} (${r.during.n})`.padEnd(33)} ${`${r.eld.p50} / ${r.eld.p99} / ${r.eld.max}`.padEnd(33)} ${String(r.burstMs).padEnd(10)} ${r.load}`,
  );
}
const pool = results.find((r) => r.mode === 'pool') ?? results[0]!;
console.log('');
console.log(`target: event-loop delay p99 < ${TARGET_ELD_P99_MS} ms during the burst with the pool: ${pool.eld.p99} ms → ${pool.eld.p99 < TARGET_ELD_P99_MS ? 'MET' : 'NOT MET'}`);
console.log(JSON.stringify({ bench: 'media', results }));
