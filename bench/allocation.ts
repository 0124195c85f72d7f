// Heap allocated per async task life, or per chat request:
//   npx node bench/allocation.ts [tree] [creates]
//   npx node bench/allocation.ts chat [tree] [requests]
//
// Load-independent where CPU figures are not. Task life: the tree's bench/media-gateway.ts
// (memory store, model D, the result copy off) runs under --trace-gc (-nvp) against
// bench/stub-upstream.ts (every task settled at its first poll, 3 s after its submit); after 3,000
// creates of warm-up and 5 s for them to settle, `creates` (10,000) model D creates over 64
// connections, then 5 s more so that every one is submitted, polled and settled.
// Chat: the tree's bench/chat-gateway.ts (the full chat path of bench/chat.ts) and, for reference,
// bench/chat-minproxy.ts (the minimal node:http proxy), each under --trace-gc against
// bench/chat-upstream.ts (in this process): 2,000 requests of warm-up, then `requests` (20,000)
// sync completions and as many streamed ones, over 64 connections.
// What a process's heap took in a span is the sum, over its collections, of the heap before each
// one minus the heap after the one before; ÷ creates or requests. CPU over the same span (all
// threads) is printed beside it, for reference only. The collections themselves (V8's
// --trace-gc-nvp): scavenges per 1,000 requests with their mean and longest pause, the bytes
// they promoted to the old generation per request (what outlives two scavenges: the longer a
// scavenge, the more it copies), and the full collections with their pauses: at 64 connections
// a pause delays every request in flight, so these are the tail's load-independent side.
// The gateway's environment passes through: BENCH_OFF=billing (or BENCH_CORE=1, see
// bench/chat-gateway.ts) weighs one step's share of them.
import { spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Pool } from 'undici';
import { chatRequest, createRequest } from './support.ts';

const chatMode = process.argv[2] === 'chat';
const [treeArg, nArg] = process.argv.slice(chatMode ? 3 : 2);
const TREE = resolve(treeArg ?? fileURLToPath(new URL('..', import.meta.url)));
const N = Number(nArg ?? (chatMode ? 20_000 : 10_000));
// One --trace-gc-nvp line: its kind (s: scavenge, mc: mark-compact, ms: minor mark-sweep), pause (ms) and sizes (bytes).
const NVP = /\bpause=([\d.]+) .*?\bgc=(\w+) /;
const nvpField = (line: string, name: string): number => Number(new RegExp(`\\b${name}=(\\d+)`).exec(line)?.[1] ?? 0);

/** What the collections in a span did. */
interface Collections {
  mb: number;
  collections: number;
  scavenges: number[];
  full: number[];
  promotedBytes: number;
}

const GC_FLAGS = ['--trace-gc', '--trace-gc-nvp'];

/** Scavenges per 1,000 requests, their mean and longest pause, promoted KB per request, full collections. */
function pauses(c: Collections, n: number): string {
  const mean = (xs: number[]) => (xs.length ? xs.reduce((a, x) => a + x, 0) / xs.length : 0).toFixed(2);
  return `scavenges ${((c.scavenges.length * 1000) / n).toFixed(2)} per 1,000 (pause mean ${mean(c.scavenges)} ms, longest ${Math.max(0, ...c.scavenges).toFixed(1)}), promoted ${(c.promotedBytes / 1024 / n).toFixed(2)} KB per request, ${c.full.length} full collections (pause mean ${mean(c.full)} ms)`;
}

interface Child {
  child: ChildProcess;
  msg: { url: string; key?: string };
  /** Starts counting the heap this process allocates; `stop()` answers MB and the collections since. */
  count(): { stop(): Collections };
  cpu(): Promise<number>;
}

function start(file: string, args: string[], env: Record<string, string>): Promise<Child> {
  const child = spawn(process.execPath, [...args, resolve(TREE, 'bench', file)], { stdio: ['ignore', 'pipe', 'inherit', 'ipc'], env: { ...process.env, ...env } });
  let counting = false;
  let span: Collections = { mb: 0, collections: 0, scavenges: [], full: [], promotedBytes: 0 };
  let lastAfter: number | undefined;
  let pending = '';
  child.stdout!.on('data', (d: Buffer) => {
    const lines = (pending + d.toString()).split('\n');
    pending = lines.pop()!;
    for (const line of lines) {
      const m = NVP.exec(line);
      if (!m) continue;
      if (counting && lastAfter !== undefined) {
        span.mb += (nvpField(line, 'start_object_size') - lastAfter) / 2 ** 20;
        span.collections++;
        (m[2] === 's' || m[2] === 'ms' ? span.scavenges : span.full).push(Number(m[1]));
        span.promotedBytes += nvpField(line, 'promoted');
      }
      lastAfter = nvpField(line, 'end_object_size');
    }
  });
  const count = () => {
    counting = true;
    span = { mb: 0, collections: 0, scavenges: [], full: [], promotedBytes: 0 };
    return { stop: () => ((counting = false), span) };
  };
  const cpu = () => new Promise<number>((ok) => {
    child.once('message', (m: { cpu: NodeJS.CpuUsage }) => ok(m.cpu.user + m.cpu.system));
    // media-gateway.ts answers {cmd: 'cpu'}, chat-gateway.ts and chat-minproxy.ts {cpu: true}.
    child.send({ cmd: 'cpu', cpu: true });
  });
  return new Promise((ok) => child.once('message', (msg) => ok({ child, msg: msg as Child['msg'], count, cpu })));
}

/** `n` POSTs of `body` over `connections`; a 503 with Retry-After (the backlog bound) is sent again after it. */
async function send(pool: Pool, path: string, headers: Record<string, string>, body: Buffer, n: number, ok: number): Promise<number> {
  let sent = 0;
  let refused = 0;
  await Promise.all(Array.from({ length: 64 }, async () => {
    while (sent++ < n) {
      const res = await pool.request({ path, method: 'POST', headers, body });
      await res.body.dump();
      if (res.statusCode === 503 && res.headers['retry-after']) {
        refused++;
        sent--;
        await new Promise((r) => setTimeout(r, Number(res.headers['retry-after']) * 1000));
      } else if (res.statusCode !== ok) throw new Error(`${path} answered ${res.statusCode}`);
    }
  }));
  return refused;
}

async function taskLife(): Promise<void> {
  const up = await start('stub-upstream.ts', [], {});
  const gw = await start('media-gateway.ts', GC_FLAGS, { UPSTREAM_URL: up.msg.url, BENCH_TIMING_SCALE: '1' });
  const pool = new Pool(gw.msg.url, { connections: 64 });
  const headers = { authorization: `Bearer ${gw.msg.key}`, 'content-type': 'application/json' };
  const creates = (n: number) => send(pool, '/vendors/provider_d/v1/model_d/generation', headers, createRequest(), n, 202);
  const settle = () => new Promise((r) => setTimeout(r, 5000));
  await creates(3000);
  await settle();
  const counter = gw.count();
  const cpu0 = await gw.cpu();
  const refused = await creates(N);
  await settle();
  const cpuUs = (await gw.cpu()) - cpu0;
  const c = counter.stop();
  console.log(`${TREE}: ${((c.mb * 1024) / N).toFixed(1)} KB of heap allocated per task life (${N} creates, ${c.collections} collections); CPU ${(cpuUs / N).toFixed(0)} µs per create over the same span (5 s of it idle); ${refused} creates refused 503 and sent again; ${pauses(c, N)}`);
  await pool.close();
  gw.child.kill();
  up.child.kill();
}

async function chat(): Promise<void> {
  const { startBenchUpstream } = await import('./chat-upstream.ts');
  const upstream = await startBenchUpstream();
  for (const file of ['chat-gateway.ts', 'chat-minproxy.ts']) {
    const proxy = await start(file, GC_FLAGS, { UPSTREAM_URL: upstream.url });
    const pool = new Pool(proxy.msg.url, { connections: 64 });
    const headers: Record<string, string> = { 'content-type': 'application/json', ...(proxy.msg.key ? { authorization: `Bearer ${proxy.msg.key}` } : {}) };
    for (const stream of [false, true]) {
      const body = chatRequest(stream);
      await send(pool, '/v1/chat/completions', headers, body, 2000, 200);
      const counter = proxy.count();
      const cpu0 = await proxy.cpu();
      await send(pool, '/v1/chat/completions', headers, body, N, 200);
      const cpuUs = (await proxy.cpu()) - cpu0;
      const c = counter.stop();
      console.log(`${file} ${stream ? 'stream' : 'sync'}: ${((c.mb * 1024) / N).toFixed(1)} KB of heap allocated per request (${N} requests, ${c.collections} collections); CPU ${(cpuUs / N).toFixed(0)} µs per request (${TREE}); ${pauses(c, N)}`);
    }
    await pool.close();
    proxy.child.kill();
  }
  await upstream.close();
}

if (chatMode) await chat();
else await taskLife();
