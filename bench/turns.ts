// Long event-loop turns of a benchmarked process, and what ran in them (bench/throughput.ts
// BENCH_TURNS=1). Two halves:
//   the probe (in the gateway process): a 1 ms interval timer notes every stretch of more than
//     LONG_MS between two of its firings (the loop did not come back to its timers phase: one
//     long turn, or a few), and a PerformanceObserver every GC pause, both on the monotonic
//     clock in µs (process.hrtime, CLOCK_MONOTONIC: the clock V8's CPU profile uses, and the same
//     in every process of the machine, so the load generator's slow requests can be matched).
//   the analysis (in the load generator, after the gateway exited): the gateway's CPU profile
//     (--cpu-prof) cut at those stretches; each sample is put down to what ran: GC, the process
//     not running at all (a gap in the samples: the machine), or the outermost frame of the
//     gateway's own code on its stack (the job scheduler's timer, the create handler, a submission,
//     a poll, a sweep, the ledger archive...), with the event-loop phase that entered it.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PerformanceObserver, performance, constants } from 'node:perf_hooks';

export const LONG_MS = 10;
const hrUs = () => Number(process.hrtime.bigint() / 1000n);

export interface Stretch { start: number; end: number }
export interface GcPause { start: number; end: number; kind: string }
export interface TurnLog { stretches: Stretch[]; gcs: GcPause[]; from: number; to: number }

const GC_KIND: Record<number, string> = {
  [constants.NODE_PERFORMANCE_GC_MINOR]: 'scavenge',
  [constants.NODE_PERFORMANCE_GC_MAJOR]: 'mark-compact',
  [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental marking',
  [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weak callbacks',
};

/** Starts the probe in this process; the function it answers stops it and answers the log. */
export function turnProbe(): () => TurnLog {
  const log: TurnLog = { stretches: [], gcs: [], from: hrUs(), to: 0 };
  const offset = log.from - performance.now() * 1000;
  let last = hrUs();
  const timer = setInterval(() => {
    const now = hrUs();
    if (now - last > LONG_MS * 1000) log.stretches.push({ start: last, end: now });
    last = now;
  }, 1);
  const gc = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      const start = offset + e.startTime * 1000;
      log.gcs.push({ start, end: start + e.duration * 1000, kind: GC_KIND[(e as unknown as { detail: { kind: number } }).detail.kind] ?? 'gc' });
    }
  });
  gc.observe({ entryTypes: ['gc'] });
  return () => {
    clearInterval(timer);
    gc.disconnect();
    log.to = hrUs();
    return log;
  };
}

interface ProfileNode { id: number; callFrame: { functionName: string; url: string }; children?: number[] }
interface Profile { nodes: ProfileNode[]; startTime: number; samples: number[]; timeDeltas: number[] }

/** The newest .cpuprofile of the main thread in `dir` (the largest: worker threads' are small). */
export function readProfile(dir: string): Profile {
  const files = readdirSync(dir).filter((f) => f.endsWith('.cpuprofile')).map((f) => join(dir, f));
  const sized = files.map((f) => ({ f, p: JSON.parse(readFileSync(f, 'utf8')) as Profile })).sort((a, b) => b.p.samples.length - a.p.samples.length);
  return sized[0]!.p;
}

/** The kind of work a stack belongs to: the first rule whose file is on it, from the top (leaf) down. */
const KINDS: Array<[string, RegExp]> = [
  ['settle (ending, billing, wallet)', /engine\/(tasks\/ending|tasks\/accounting|billing\/|store\/memory\/wallets)/],
  ['poll (job, upstream answer, result)', /engine\/(tasks\/poll|tasks\/upstream-answers|results\/)/],
  ['submission (body, upstream call)', /engine\/tasks\/submit\.ts.*(submitNow|send|acceptedId|readAcceptance|taskRefs|submit)$/],
  ['create request (door, auth, checks, hold, store)', /engine\/(http\/|tenants\/|limits\/|tasks\/submit|tasks\/requests|idempotency\/)/],
  ['job scheduler timers', /engine\/store\/memory\/job-scheduler/],
  ['sweeps, archive, expiry, metrics', /engine\/(tasks\/sweep|billing\/ledger-archive|store\/memory\/expiry-queue|metrics\/)|prom-client/],
  ['upstream client (undici)', /undici/],
];

/** What a sample's stack was doing: `gc`, `idle`, `native`, or `<phase> › <outermost gateway frame>`; and its kind. */
function labeller(profile: Profile): (id: number) => { label: string; kind: string } {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const memo = new Map<number, { label: string; kind: string }>();
  const file = (url: string) => {
    const i = url.indexOf('/engine/');
    if (i >= 0) return url.slice(i + 1).replace(/\.ts$/, '');
    const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
    return m ? m[1]! : undefined;
  };
  return (id) => {
    const hit = memo.get(id);
    if (hit) return hit;
    const leaf = byId.get(id)!.callFrame.functionName;
    let out: { label: string; kind: string };
    if (leaf === '(garbage collector)') out = { label: 'gc', kind: 'garbage collection' };
    else if (leaf === '(idle)') out = { label: 'idle', kind: 'idle (waiting for the CPU or I/O)' };
    else {
      const stack: ProfileNode['callFrame'][] = [];
      for (let n: number | undefined = id; n !== undefined; n = parent.get(n)) stack.push(byId.get(n)!.callFrame);
      const frames = stack.map((f) => `${file(f.url) ?? ''} ${f.functionName}`);
      const kind = KINDS.find(([, re]) => frames.some((f) => re.test(f)))?.[0] ?? 'other (node: http parser, sockets, timers)';
      stack.reverse(); // root first
      const entry = stack.find((f, i) => i > 0 && f.functionName && !f.functionName.startsWith('('));
      const own = stack.find((f) => file(f.url)?.startsWith('engine/')) ?? stack.find((f) => file(f.url));
      const phase = entry ? ({ processTimers: 'timers', listOnTimeout: 'timers', processImmediate: 'immediates', processTicksAndRejections: 'ticks' } as Record<string, string>)[entry.functionName] ?? 'I/O' : 'native';
      out = { label: own ? `${phase} › ${file(own.url)}${own.functionName ? ` ${own.functionName}` : ''}` : `${phase} › node`, kind };
    }
    memo.set(id, out);
    return out;
  };
}

export interface TurnReport { lines: string[]; longMs: number; gcMsInLong: number; stallMsInLong: number }

/**
 * The histogram of the stretches over LONG_MS by length, and over all of them the time by what
 * ran; the GC pauses of the window by kind (count, total, longest) and how many fell in a long
 * stretch. A gap between two samples of more than 4 intervals is time the process did not run.
 */
export function analyse(profile: Profile, log: TurnLog, sampleUs: number): TurnReport {
  const label = labeller(profile);
  const times: number[] = [];
  let t = profile.startTime;
  for (const d of profile.timeDeltas) times.push((t += d));
  const lines: string[] = [];
  const buckets = [[10, 20], [20, 50], [50, 100], [100, Infinity]] as const;
  const seconds = (log.to - log.from) / 1e6;
  lines.push(`long turns (no timers phase for > ${LONG_MS} ms) over ${seconds.toFixed(1)} s: ${log.stretches.length}, ${(log.stretches.reduce((a, s) => a + s.end - s.start, 0) / 1000).toFixed(0)} ms in all`);
  for (const [lo, hi] of buckets) {
    const n = log.stretches.filter((s) => (s.end - s.start) / 1000 >= lo && (s.end - s.start) / 1000 < hi).length;
    lines.push(`  ${lo}–${hi === Infinity ? '' : hi} ms: ${n}`);
  }
  // Time by what ran, in the long stretches and over the whole window (to see what is over-represented).
  const what = new Map<string, number>();
  const kindLong = new Map<string, number>();
  const kindAll = new Map<string, number>();
  const add = (m: Map<string, number>, k: string, ms: number) => m.set(k, (m.get(k) ?? 0) + ms);
  const MACHINE = '(process not running: the machine)';
  let gcMs = 0;
  let stallMs = 0;
  let s = 0;
  const sorted = [...log.stretches].sort((a, b) => a.start - b.start);
  for (let j = 1; j < times.length; j++) {
    const at = times[j]!;
    if (at < log.from || at > log.to) continue;
    while (s < sorted.length && sorted[s]!.end < at) s++;
    const long = s < sorted.length && sorted[s]!.start <= at;
    const gap = at - times[j - 1]!;
    // A sample stands for the time since the one before; a long gap is time the thread did not run.
    const ran = Math.min(gap, sampleUs * 4);
    const { label: l, kind } = label(profile.samples[j]!);
    add(kindAll, kind, ran / 1000);
    if (gap > ran) add(kindAll, MACHINE, (gap - ran) / 1000);
    if (!long) continue;
    if (gap > ran) stallMs += (gap - ran) / 1000;
    add(what, l, ran / 1000);
    add(kindLong, kind, ran / 1000);
    if (l === 'gc') gcMs += ran / 1000;
  }
  what.set(MACHINE, stallMs);
  kindLong.set(MACHINE, stallMs);
  const total = [...what.values()].reduce((a, b) => a + b, 0);
  const allTotal = [...kindAll.values()].reduce((a, b) => a + b, 0);
  lines.push(`  by kind of work: ms in long turns (share) | share of the whole window`);
  for (const [k, ms] of [...kindLong].sort((a, b) => b[1] - a[1])) lines.push(`    ${ms.toFixed(0).padStart(6)} ${((ms / Math.max(1e-9, total)) * 100).toFixed(1).padStart(5)}% | ${(((kindAll.get(k) ?? 0) / Math.max(1e-9, allTotal)) * 100).toFixed(1).padStart(5)}%  ${k}`);
  lines.push(`  in detail ('<event-loop phase> › <outermost gateway frame>'), ms in long turns:`);
  for (const [l, ms] of [...what].sort((a, b) => b[1] - a[1]).slice(0, 12)) lines.push(`    ${ms.toFixed(0).padStart(6)} ${((ms / Math.max(1e-9, total)) * 100).toFixed(1).padStart(5)}%  ${l}`);
  const kinds = new Map<string, { n: number; ms: number; max: number; inLong: number }>();
  for (const g of log.gcs) {
    const k = kinds.get(g.kind) ?? { n: 0, ms: 0, max: 0, inLong: 0 };
    const ms = (g.end - g.start) / 1000;
    k.n++;
    k.ms += ms;
    k.max = Math.max(k.max, ms);
    if (log.stretches.some((s) => g.start < s.end && g.end > s.start)) k.inLong++;
    kinds.set(g.kind, k);
  }
  lines.push(`  GC pauses of the window (PerformanceObserver): ${[...kinds].map(([kind, k]) => `${kind} ${k.n} (${k.ms.toFixed(0)} ms, longest ${k.max.toFixed(1)}, ${k.inLong} in a long turn)`).join('; ') || 'none'}`);
  return { lines, longMs: total, gcMsInLong: gcMs, stallMsInLong: stallMs };
}

/** Of the requests slower than `ms` ([start, end] in monotonic µs), how many overlapped a long stretch, a GC pause of the gateway. */
export function missesExplained(slow: Stretch[], log: TurnLog): string {
  const overlaps = (a: Stretch, b: Stretch) => a.start < b.end && a.end > b.start;
  const inLong = slow.filter((r) => log.stretches.some((s) => overlaps(r, s))).length;
  const inGc = slow.filter((r) => log.gcs.some((g) => g.kind === 'mark-compact' || g.end - g.start > 2000 ? overlaps(r, g) : false)).length;
  return `${slow.length} requests over the bound: ${inLong} overlapped a long turn of the gateway, ${inGc} a mark-compact or a GC pause over 2 ms`;
}

// `npx node bench/turns.ts <dir>`: the report again from a run's profile and turns.json.
if (process.argv[1] === new URL(import.meta.url).pathname) {
  const dir = process.argv[2]!;
  const { sampleUs, runs } = JSON.parse(readFileSync(join(dir, 'turns.json'), 'utf8')) as { sampleUs: number; runs: Array<{ connections: number; log: TurnLog; slow: Stretch[] }> };
  const profile = readProfile(dir);
  for (const { connections, log, slow } of runs) {
    console.log(`gateway at ${connections} connections:`);
    for (const line of analyse(profile, log, sampleUs).lines) console.log(`  ${line}`);
    console.log(`  ${missesExplained(slow, log)}`);
  }
}
