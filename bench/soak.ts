// Memory soak: `npx node bench/soak.ts [tree]`. Does the gateway's memory stay flat under steady
// mixed traffic once warm?
//
// `gateway serve` of [tree] (default: this one) with the shipped defaults (bench/memory.ts's
// benchServe: only ports, the two upstreams, an admin token and no rate limits set), against
// bench/chat-upstream.ts and bench/stub-upstream.ts (every task finishes at its first poll, 3 s
// after its submission). The load is paced, not a closed loop, so every minute is the same
// minute: SOAK_CHAT (150/s) sync completions, SOAK_STREAM (50/s) streamed ones and SOAK_CREATES
// (150/s) model D creates, each kind at most 64 requests in flight. After SOAK_WARMUP_SECONDS
// (300: long enough to fill store.memory_finished_tasks' 50,000 at 150 creates/s, after which
// finished tasks stop adding up) it samples the gateway's RSS (/proc) and heap (/metrics) every
// SOAK_SAMPLE_SECONDS (10) for SOAK_MINUTES (10), and prints the curve and its spread around the
// mean. The warm-up's samples are printed too, marked.
import { performance } from 'node:perf_hooks';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Pool } from 'undici';
import { benchServe, procStatus, scrape } from './memory.ts';
import { chatRequest, createRequest } from './support.ts';

const TREE = resolve(process.argv[2] ?? fileURLToPath(new URL('../', import.meta.url)));
const env = (name: string, dflt: number) => Number(process.env[name] ?? dflt);
const WARMUP = env('SOAK_WARMUP_SECONDS', 300);
const MINUTES = env('SOAK_MINUTES', 10);
const SAMPLE = env('SOAK_SAMPLE_SECONDS', 10);
const mb = (n: number) => Math.round(n / 104857.6) / 10;

const { gw, headers, close } = await benchServe(TREE);
const pool = new Pool(gw.url, { connections: 128, pipelining: 1 });

interface Kind { name: string; path: string; body: Buffer; rate: number; inFlight: number; due: number; done: Record<number, number>; skipped: number }
const kinds: Kind[] = [
  { name: 'chat', path: '/v1/chat/completions', body: chatRequest(false), rate: env('SOAK_CHAT', 150), inFlight: 0, due: 0, done: {}, skipped: 0 },
  { name: 'stream', path: '/v1/chat/completions', body: chatRequest(true), rate: env('SOAK_STREAM', 50), inFlight: 0, due: 0, done: {}, skipped: 0 },
  { name: 'create', path: '/vendors/provider_d/v1/model_d/generation', body: createRequest(), rate: env('SOAK_CREATES', 150), inFlight: 0, due: 0, done: {}, skipped: 0 },
];
const MAX_IN_FLIGHT = 64;
const send = async (k: Kind) => {
  k.inFlight++;
  try {
    const r = await pool.request({ method: 'POST', path: k.path, headers, body: k.body });
    await r.body.dump();
    k.done[r.statusCode] = (k.done[r.statusCode] ?? 0) + 1;
  } catch {
    k.done[0] = (k.done[0] ?? 0) + 1;
  } finally {
    k.inFlight--;
  }
};
// Every 10 ms each kind sends what its rate makes due; what its in-flight cap refuses is skipped
// (counted), not queued, so a slow spell does not turn into a burst afterwards.
let last = performance.now();
const pacer = setInterval(() => {
  const now = performance.now();
  const dt = (now - last) / 1000;
  last = now;
  for (const k of kinds) {
    k.due += k.rate * dt;
    for (; k.due >= 1; k.due--) {
      if (k.inFlight >= MAX_IN_FLIGHT) k.skipped++;
      else void send(k);
    }
  }
}, 10);

const t0 = performance.now();
const rows: { t: number; rss: number; heap: number; heapTotal: number; active: number; warm: boolean }[] = [];
console.log(`soak of ${TREE}: ${kinds.map((k) => `${k.name} ${k.rate}/s`).join(', ')}; warm-up ${WARMUP} s, then ${MINUTES} min sampled every ${SAMPLE} s`);
console.log('   t (s)   RSS MB   heap used / total MB   tasks active   answers so far');
for (let t = SAMPLE; t <= WARMUP + MINUTES * 60; t += SAMPLE) {
  await new Promise((r) => setTimeout(r, t0 + t * 1000 - performance.now()));
  const { rss } = procStatus(gw.proc.pid!);
  const m = (await scrape(gw.metricsUrl))!;
  const warm = t > WARMUP;
  rows.push({ t, rss, heap: m.heap, heapTotal: m.heapTotal, active: m.active, warm });
  const answers = kinds.map((k) => `${k.name} ${JSON.stringify(k.done)}${k.skipped ? ` skipped ${k.skipped}` : ''}`).join(' ');
  console.log(`${String(t).padStart(8)} ${String(mb(rss)).padStart(8)}   ${`${mb(m.heap)} / ${mb(m.heapTotal)}`.padStart(20)}   ${String(m.active).padStart(12)}   ${warm ? '' : '(warm-up) '}${answers}`);
}
clearInterval(pacer);
const measured = rows.filter((r) => r.warm).map((r) => r.rss);
const mean = measured.reduce((a, b) => a + b, 0) / measured.length;
const spread = (v: number) => `${((v / mean - 1) * 100).toFixed(1)}%`;
console.log(`after warm-up: RSS mean ${mb(mean)} MB, min ${mb(Math.min(...measured))} (${spread(Math.min(...measured))}), max ${mb(Math.max(...measured))} (${spread(Math.max(...measured))}); first ${mb(measured[0]!)}, last ${mb(measured.at(-1)!)} MB`);
await new Promise((r) => setTimeout(r, 1000));
await pool.close();
await close();
