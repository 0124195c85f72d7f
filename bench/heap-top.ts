// What a V8 heap snapshot holds: `npx node --max-old-space-size=8000 bench/heap-top.ts <file.heapsnapshot> [rows]`
//
// Two tables of the live heap (a snapshot holds only what a full collection left):
// - by constructor (type and name, as DevTools' summary): objects, self size;
// - the top retainers: the dominator tree (Cooper, Harvey and Kennedy's iterative algorithm over
//   strong edges, as DevTools computes retained sizes), summed per constructor over the objects
//   whose dominator is not of the same constructor (so a Map's nested tables count once), with a
//   sample path from the root to the largest of them.
// Used for docs/performance.md's peak heap tables (bench/memory.ts peak BENCH_SNAPSHOT_CHAT / BENCH_SNAPSHOT_AT).
import { readFileSync } from 'node:fs';

const [file, rowsArg] = process.argv.slice(2);
if (!file) {
  console.error('usage: npx node --max-old-space-size=8000 bench/heap-top.ts <file.heapsnapshot> [rows]');
  process.exit(2);
}
const ROWS = Number(rowsArg ?? 25);
const snap = JSON.parse(readFileSync(file, 'utf8')) as {
  snapshot: { meta: { node_fields: string[]; node_types: [string[]]; edge_fields: string[]; edge_types: [string[]] }; node_count: number };
  nodes: number[]; edges: number[]; strings: string[];
};
const { meta } = snap.snapshot;
const NF = meta.node_fields.length;
const EF = meta.edge_fields.length;
const [nType, nName, nSelf, nEdges] = ['type', 'name', 'self_size', 'edge_count'].map((f) => meta.node_fields.indexOf(f));
const [eType, eName, eTo] = ['type', 'name_or_index', 'to_node'].map((f) => meta.edge_fields.indexOf(f));
const nodeTypes = meta.node_types[0];
const edgeTypes = meta.edge_types[0];
const WEAK = edgeTypes.indexOf('weak');
const SHORTCUT = edgeTypes.indexOf('shortcut');
const n = snap.nodes.length / NF;
const firstEdge = new Uint32Array(n + 1);
for (let i = 0; i < n; i++) firstEdge[i + 1] = firstEdge[i]! + snap.nodes[i * NF + nEdges]!;
const self = (i: number) => snap.nodes[i * NF + nSelf]!;
const label = (i: number) => {
  const t = nodeTypes[snap.nodes[i * NF + nType]!]!;
  const name = snap.strings[snap.nodes[i * NF + nName]!]!;
  return t === 'object' || t === 'closure' || t === 'native' ? `${name}` : `(${t})${t === 'hidden' || t === 'synthetic' ? ' ' + name : ''}`;
};
const strong = (e: number) => snap.edges[e + eType] !== WEAK && snap.edges[e + eType] !== SHORTCUT;
const to = (e: number) => snap.edges[e + eTo]! / NF;

// Depth-first postorder from the root (node 0) over strong edges.
const order = new Int32Array(n).fill(-1);
const post: number[] = [];
const parentEdge = new Int32Array(n).fill(-1);
const parentNode = new Int32Array(n).fill(-1);
{
  const stack = [0];
  const next = new Uint32Array(n);
  order[0] = -2;
  for (let i = 0; i < n; i++) next[i] = firstEdge[i]!;
  while (stack.length) {
    const v = stack[stack.length - 1]!;
    let pushed = false;
    while (next[v]! < firstEdge[v + 1]!) {
      const e = next[v]!++ * EF;
      if (!strong(e)) continue;
      const w = to(e);
      if (order[w] !== -1) continue;
      order[w] = -2;
      parentEdge[w] = e;
      parentNode[w] = v;
      stack.push(w);
      pushed = true;
      break;
    }
    if (!pushed) {
      order[v] = post.length;
      post.push(v);
      stack.pop();
    }
  }
}
// Predecessors (strong edges between reached nodes), as lists by node.
const preds: number[][] = Array.from({ length: n }, () => []);
for (let v = 0; v < n; v++) {
  if (order[v]! < 0) continue;
  for (let e = firstEdge[v]! * EF; e < firstEdge[v + 1]! * EF; e += EF) if (strong(e) && order[to(e)]! >= 0) preds[to(e)]!.push(v);
}
const idom = new Int32Array(n).fill(-1);
idom[0] = 0;
const intersect = (a: number, b: number) => {
  while (a !== b) {
    while (order[a]! < order[b]!) a = idom[a]!;
    while (order[b]! < order[a]!) b = idom[b]!;
  }
  return a;
};
for (let changed = true; changed;) {
  changed = false;
  for (let k = post.length - 2; k >= 0; k--) {
    const v = post[k]!;
    let d = -1;
    for (const p of preds[v]!) if (idom[p] !== -1) d = d === -1 ? p : intersect(p, d);
    if (d !== -1 && idom[v] !== d) {
      idom[v] = d;
      changed = true;
    }
  }
}
const retained = new Float64Array(n);
for (const v of post) {
  retained[v]! += self(v);
  if (v !== 0) retained[idom[v]!]! += retained[v]!;
}

const mb = (b: number) => (b / 1048576).toFixed(1);
const bySelf = new Map<string, { count: number; self: number }>();
const byRetained = new Map<string, { count: number; retained: number; largest: number }>();
for (const v of post) {
  const l = label(v);
  const s = bySelf.get(l) ?? { count: 0, self: 0 };
  s.count++;
  s.self += self(v);
  bySelf.set(l, s);
  if (v === 0 || label(idom[v]!) === l) continue;
  const r = byRetained.get(l) ?? { count: 0, retained: 0, largest: v };
  r.count++;
  r.retained += retained[v]!;
  if (retained[v]! > retained[r.largest]!) r.largest = v;
  byRetained.set(l, r);
}
/** The last steps of the depth-first path from the root to `v`: who holds it. */
const pathTo = (v: number) => {
  const parts: string[] = [];
  for (let w = v; parentEdge[w]! >= 0 && parts.length < 6; w = parentNode[w]!) {
    const e = parentEdge[w]!;
    const kind = edgeTypes[snap.edges[e + eType]!];
    const name = kind === 'element' || kind === 'hidden' ? `[${snap.edges[e + eName]}]` : snap.strings[snap.edges[e + eName]!];
    parts.unshift(`${label(parentNode[w]!)}.${name}`);
  }
  return parts.join(' → ');
};
console.log(`${file}: ${post.length} live objects, ${mb(retained[0]!)} MB`);
console.log('\n| constructor | objects | self MB |\n|---|---:|---:|');
for (const [l, s] of [...bySelf].sort((a, b) => b[1].self - a[1].self).slice(0, ROWS)) console.log(`| ${l.slice(0, 60)} | ${s.count} | ${mb(s.self)} |`);
console.log('\n| retainer (constructor) | objects | retained MB | the largest one retains | held by |\n|---|---:|---:|---:|---|');
for (const [l, r] of [...byRetained].sort((a, b) => b[1].retained - a[1].retained).slice(0, ROWS)) console.log(`| ${l.slice(0, 60)} | ${r.count} | ${mb(r.retained)} | ${mb(retained[r.largest]!)} | ${pathTo(r.largest).slice(-160)} |`);
