// Where a process's heap allocation goes, by allocating function, with V8's sampling heap profiler
// (collected objects kept, so garbage counts as well as what lives).
//
// In the process to measure (a preload): `--import <tree>/bench/heap-sampling.ts`, e.g.
//   BENCH_GATEWAY_NODE_OPTIONS="--import $PWD/bench/heap-sampling.ts" npx node bench/memory.ts peak
//   HEAP_SAMPLING_ONLY=media-gateway NODE_OPTIONS="--import $PWD/bench/heap-sampling.ts" npx node bench/allocation.ts
// Sampling starts at once; the profile so far is written to HEAP_SAMPLING_DIR (/tmp) as
// heap-<pid>-<n>.json each time a file named `dump` appears there (and sampling starts again),
// and as heap-<pid>-end.json at SIGTERM. HEAP_SAMPLING_INTERVAL: mean bytes between samples
// (32768). HEAP_SAMPLING_MINOR=0: objects a scavenge collected are left out, so what is left was
// promoted to the old generation (or is live at the end). HEAP_SAMPLING_ONLY: sample only a
// process whose command line contains this.
//
// Read a profile: `npx node bench/heap-sampling.ts <profile.json> <units> [min-bytes]`: KB per unit
// (task life, request) by file and by first engine/ frame on the stack, and with min-bytes (e.g.
// 131072) only objects of that size or more: V8's large objects, with their stacks.
import { Session } from 'node:inspector';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children: ProfileNode[];
}
interface Profile {
  head: ProfileNode;
  samples: { size: number; nodeId: number }[];
}

function sample(): void {
  const dir = process.env.HEAP_SAMPLING_DIR ?? '/tmp';
  const s = new Session();
  s.connect();
  const start = () => s.post('HeapProfiler.startSampling', {
    samplingInterval: Number(process.env.HEAP_SAMPLING_INTERVAL ?? 32768),
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: process.env.HEAP_SAMPLING_MINOR !== '0',
  });
  // The in-process session answers at once (synchronously), so a dump can run in a signal handler.
  const dump = (tag: string | number) => s.post('HeapProfiler.stopSampling', (err, r) => {
    if (!err) writeFileSync(`${dir}/heap-${process.pid}-${tag}.json`, JSON.stringify(r.profile));
  });
  start();
  let n = 0;
  setInterval(() => {
    if (!existsSync(`${dir}/dump`)) return;
    rmSync(`${dir}/dump`);
    dump(n++);
    start();
  }, 500).unref();
  process.prependListener('SIGTERM', () => {
    dump('end');
    if (process.listenerCount('SIGTERM') === 1) process.exit(0); // no handler of its own: end as SIGTERM would
  });
}

function report(file: string, units: number, minBytes: number): void {
  const p = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const parent = new Map<number, ProfileNode | undefined>();
  const byId = new Map<number, ProfileNode>();
  const walk = (n: ProfileNode, up?: ProfileNode): void => {
    byId.set(n.id, n);
    parent.set(n.id, up);
    for (const c of n.children) walk(c, n);
  };
  walk(p.head);
  const name = (n: ProfileNode) => `${n.callFrame.functionName || '(anonymous)'} ${n.callFrame.url.replace(/^.*\/(engine|node_modules)\//, '$1/')}:${n.callFrame.lineNumber + 1}`;
  const byFile = new Map<string, number>();
  const byFrame = new Map<string, number>();
  let all = 0;
  for (const { size, nodeId } of p.samples) {
    if (size < minBytes) continue;
    all += size;
    let n = byId.get(nodeId);
    const stack: string[] = [];
    while (n && !n.callFrame.url.includes('/engine/')) {
      if (minBytes > 0 && n.callFrame.functionName !== '(root)') stack.push(name(n));
      n = parent.get(n.id);
    }
    const file = n ? n.callFrame.url.replace(/^.*\/engine\//, 'engine/') : '(no engine frame)';
    const frame = [...stack, n ? name(n) : '', n && parent.get(n.id) ? `< ${name(parent.get(n.id)!)}` : ''].filter(Boolean).join(' < ');
    byFile.set(file, (byFile.get(file) ?? 0) + size);
    byFrame.set(frame, (byFrame.get(frame) ?? 0) + size);
  }
  const kb = (b: number) => (b / units / 1024).toFixed(2).padStart(7);
  const top = (m: Map<string, number>, rows: number) => [...m].sort((a, b) => b[1] - a[1]).slice(0, rows).map(([k, b]) => `${kb(b)} KB  ${k}`).join('\n');
  console.log(`${file}: ${kb(all)} KB per unit sampled${minBytes ? ` in objects of ${minBytes} bytes or more` : ''} (${units} units)`);
  console.log(`by file (first engine/ frame on the stack):\n${top(byFile, 25)}`);
  console.log(`by first engine/ frame (with the frame above it)${minBytes ? ' and the stack below it' : ''}:\n${top(byFrame, 40)}`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [file, units, minBytes] = process.argv.slice(2);
  if (!file || !units) {
    console.error('usage: npx node bench/heap-sampling.ts <profile.json> <units> [min-bytes]');
    process.exit(2);
  }
  report(file, Number(units), Number(minBytes ?? 0));
} else {
  const only = process.env.HEAP_SAMPLING_ONLY;
  if (!only || process.argv.some((a) => a.includes(only))) sample();
}
