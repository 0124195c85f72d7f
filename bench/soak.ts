// Memory soak: `npx node bench/soak.ts [tree]`. Does the gateway's memory stay flat under steady
// mixed traffic once warm?
//
// `gateway serve` of [tree] (default: this one) with the shipped defaults (bench/memory.ts's
// benchServe: only ports, the two upstreams, an admin token and no rate limits set), against
// bench/chat-upstream.ts and bench/stub-upstream.ts (every task finishes at its first poll, 3 s
// after its submission). The load is paced, not a closed loop, so every minute is the same
// minute: SOAK_CHAT (150/s) sync completions, SOAK_STREAM (50/s) streamed ones and SOAK_CREATES
// (150/s) model D creates, each kind at most 64 requests in flight. After SOAK_WARMUP_SECONDS
// (default: the time to fill store.memory_finished_tasks' 50,000 at the create rate, and a minute
// more: 394 s at 150/s; until then finished tasks still add up, and the store stops growing only
// then) it samples the gateway's RSS (/proc) and heap (/metrics: used / committed, and the young
// (new) and old generations' committed size, which V8 resizes) every SOAK_SAMPLE_SECONDS (10) for
// SOAK_MINUTES (10), and prints the curve and its spread around the mean, and the spread of each
// minute's highest sample (the top of the old generation's sawtooth between full collections).
// The warm-up's samples are printed too, marked.
import { performance } from 'node:perf_hooks';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Pool } from 'undici';
import { benchServe, procStatus, scrape } from './memory.ts';
import { chatRequest, createRequest, pace, pacedAnswers, pacedKind, spreadSummary, type PacedKind } from './support.ts';

const TREE = resolve(process.argv[2] ?? fileURLToPath(new URL('../', import.meta.url)));
const env = (name: string, dflt: number) => Number(process.env[name] ?? dflt);
// Finished tasks kept at most by the shipped default (store.memory_finished_tasks).
const FINISHED_BOUND = 50_000;
const WARMUP = env('SOAK_WARMUP_SECONDS', Math.ceil(FINISHED_BOUND / env('SOAK_CREATES', 150)) + 60);
const MINUTES = env('SOAK_MINUTES', 10);
const SAMPLE = env('SOAK_SAMPLE_SECONDS', 10);
const mb = (n: number) => Math.round(n / 104857.6) / 10;

const { gw, headers, close } = await benchServe(TREE);
const pool = new Pool(gw.url, { connections: 128, pipelining: 1 });

const kinds: PacedKind[] = [
  ['chat', '/v1/chat/completions', chatRequest(false), env('SOAK_CHAT', 150)],
  ['stream', '/v1/chat/completions', chatRequest(true), env('SOAK_STREAM', 50)],
  ['create', '/vendors/provider_d/v1/model_d/generation', createRequest(), env('SOAK_CREATES', 150)],
].map(([name, path, body, rate]) => pacedKind(name as string, rate as number, async () => {
  const r = await pool.request({ method: 'POST', path: path as string, headers, body: body as Buffer });
  await r.body.dump();
  return r.statusCode;
}));
// At most 64 requests of each kind in flight.
const stopPacing = pace(kinds, 64);

const t0 = performance.now();
const rows: { t: number; rss: number; heap: number; heapTotal: number; active: number; warm: boolean }[] = [];
console.log(`soak of ${TREE}: ${kinds.map((k) => `${k.name} ${k.rate}/s`).join(', ')}; warm-up ${WARMUP} s, then ${MINUTES} min sampled every ${SAMPLE} s`);
console.log('   t (s)   RSS MB   heap used / total MB   new / old committed MB   tasks active   answers so far');
for (let t = SAMPLE; t <= WARMUP + MINUTES * 60; t += SAMPLE) {
  await new Promise((r) => setTimeout(r, t0 + t * 1000 - performance.now()));
  const { rss } = procStatus(gw.proc.pid!);
  const m = (await scrape(gw.metricsUrl))!;
  const warm = t > WARMUP;
  rows.push({ t, rss, heap: m.heap, heapTotal: m.heapTotal, active: m.active, warm });
  const answers = pacedAnswers(kinds);
  const committed = (space: string) => /(\S+)$/.exec(m.spaces.split(', ').find((s) => s.startsWith(`${space} `))!.split('/')[1]!)![1];
  console.log(`${String(t).padStart(8)} ${String(mb(rss)).padStart(8)}   ${`${mb(m.heap)} / ${mb(m.heapTotal)}`.padStart(20)}   ${`${committed('new')} / ${committed('old')}`.padStart(22)}   ${String(m.active).padStart(12)}   ${warm ? '' : '(warm-up) '}${answers}`);
}
stopPacing();
const warmRows = rows.filter((r) => r.warm);
console.log(`after warm-up: RSS ${spreadSummary(warmRows.map((r) => r.rss), mb)}`);
const perMinute = Array.from({ length: MINUTES }, (_, i) => Math.max(...warmRows.filter((r) => r.t > WARMUP + i * 60 && r.t <= WARMUP + (i + 1) * 60).map((r) => r.rss)));
console.log(`each minute's highest RSS: ${spreadSummary(perMinute, mb)}`);
await new Promise((r) => setTimeout(r, 1000));
await pool.close();
await close();
