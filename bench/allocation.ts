// Heap allocated per async task life: `npx node bench/allocation.ts [tree] [creates]`
//
// Load-independent where CPU figures are not: the tree's bench/media-gateway.ts (memory store,
// model D, the result copy off) runs under --trace-gc against bench/stub-upstream.ts (every task
// settled at its first poll, 3 s after its submit); after 3,000 creates of warm-up and 5 s for
// them to settle, `creates` (10,000) model D creates over 64 connections, then 5 s more so that
// every one is submitted, polled and settled. What the gateway's heap took in that span is the sum,
// over its collections, of the heap before each one minus the heap after the one before; ÷ creates.
// CPU per create (all threads, over the same span) is printed beside it, for reference only.
import { spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Pool } from 'undici';
import { createRequest } from './support.ts';

const [treeArg, nArg] = process.argv.slice(2);
const TREE = resolve(treeArg ?? fileURLToPath(new URL('..', import.meta.url)));
const N = Number(nArg ?? 10_000);
const GC_LINE = /(?:Scavenge|Mark-Compact|Minor Mark-Sweep|Mark-Sweep)\D*?([\d.]+) \([\d.]+\) -> ([\d.]+) \([\d.]+\) MB/;

function start(file: string, args: string[], env: Record<string, string>): Promise<{ child: ChildProcess; msg: { url: string; key: string } }> {
  const child = spawn(process.execPath, [...args, resolve(TREE, 'bench', file)], { stdio: ['ignore', 'pipe', 'inherit', 'ipc'], env: { ...process.env, ...env } });
  return new Promise((ok) => child.once('message', (msg) => ok({ child, msg: msg as { url: string; key: string } })));
}

const up = await start('stub-upstream.ts', [], {});
const gw = await start('media-gateway.ts', ['--trace-gc'], { UPSTREAM_URL: up.msg.url, BENCH_TIMING_SCALE: '1' });
let counting = false;
let allocatedMb = 0;
let lastAfter: number | undefined;
let collections = 0;
let pending = '';
gw.child.stdout!.on('data', (d: Buffer) => {
  const lines = (pending + d.toString()).split('\n');
  pending = lines.pop()!;
  for (const line of lines) {
    const m = GC_LINE.exec(line);
    if (!m) continue;
    if (counting && lastAfter !== undefined) {
      allocatedMb += Number(m[1]) - lastAfter;
      collections++;
    }
    lastAfter = Number(m[2]);
  }
});
const cpu = () => new Promise<number>((ok) => {
  gw.child.once('message', (m: { cpu: NodeJS.CpuUsage }) => ok(m.cpu.user + m.cpu.system));
  gw.child.send({ cmd: 'cpu' });
});
const pool = new Pool(gw.msg.url, { connections: 64 });
const body = createRequest();
const headers = { authorization: `Bearer ${gw.msg.key}`, 'content-type': 'application/json' };
let refused = 0;
async function creates(n: number): Promise<void> {
  let sent = 0;
  await Promise.all(Array.from({ length: 64 }, async () => {
    while (sent++ < n) {
      const res = await pool.request({ path: '/vendors/provider_d/v1/model_d/generation', method: 'POST', headers, body });
      await res.body.dump();
      // A create refused for the backlog (server.max_task_calls_running) is sent again after its Retry-After.
      if (res.statusCode === 503 && res.headers['retry-after']) {
        refused++;
        sent--;
        await new Promise((r) => setTimeout(r, Number(res.headers['retry-after']) * 1000));
      } else if (res.statusCode !== 202) throw new Error(`create answered ${res.statusCode}`);
    }
  }));
}
const settle = () => new Promise((r) => setTimeout(r, 5000));

await creates(3000);
await settle();
counting = true;
const cpu0 = await cpu();
await creates(N);
await settle();
const cpuUs = (await cpu()) - cpu0;
counting = false;
console.log(`${TREE}: ${((allocatedMb * 1024) / N).toFixed(1)} KB of heap allocated per task life (${N} creates, ${collections} collections); CPU ${(cpuUs / N).toFixed(0)} µs per create over the same span (5 s of it idle); ${refused} creates refused 503 and sent again`);
await pool.close();
gw.child.kill();
up.child.kill();
