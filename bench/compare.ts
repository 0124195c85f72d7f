// Same-run comparison of checkouts: `npx node bench/compare.ts <mode> <tree> <tree>...`
//   mode: chat (sync completions), stream (streamed completions) or create (model D creates)
//   tree: a checkout with its node_modules (e.g. `git worktree add --detach /tmp/before <commit>
//         && (cd /tmp/before && npm ci)`); the first is the reference of the ratio column. A tree
//         may carry its gateway's environment after `+`: `/tmp/before+MALLOC_ARENA_MAX=2` measures
//         a setting against the same tree without it (`/tmp/before` twice gives the noise).
//
// Why: this VM's speed swings twofold within minutes, so two benchmarks of two trees run one after
// the other compare two machines. Here every tree's gateway (its own bench/chat-gateway.ts or
// bench/media-gateway.ts) runs at once, all pinned to core 0 (the upstream stand-in and this load
// generator on core 1), and the load goes to one gateway at a time in short windows, the order
// reversed every round: a slow spell falls on every tree alike. The idle gateways cost nothing
// meanwhile but their timers. Each tree's CPU is read from its own process (all its threads).
//   chat, stream: CPU per request over that tree's windows, and the median over rounds of its
//                 CPU per request ÷ the first tree's in the same round.
//   create:       CPU per create over the whole run, from before the first window to 6 s after the
//                 last, so every task's submission, poll and settlement counts (they run while
//                 other trees' windows are loaded; only the total is a fair figure).
// Env: COMPARE_CONNECTIONS (64), COMPARE_ROUNDS (20), COMPARE_WINDOW_MS (700 chat, 1000 create),
//      COMPARE_WARMUP_MS (3000 per tree before the first round), COMPARE_CPU_PROF (a directory:
//      every gateway runs under --cpu-prof and writes its threads' profiles in a folder per tree there
//      when stopped).
// Each gateway starts with the node flags its tree's shipped start would give it on its one core
// (V8's worker pool: support.ts's gatewayFlags); `<tree>+NODE_OPTIONS=--v8-pool-size=4` gives a
// tree Node's default pool instead.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Pool } from 'undici';
import { chatRequest, createRequest, gatewayFlags, pct } from './support.ts';

const [mode, ...trees] = process.argv.slice(2);
if (!mode || !['chat', 'stream', 'create'].includes(mode) || trees.length < 2) {
  console.error('usage: npx node bench/compare.ts <chat|stream|create> <tree> <tree>...');
  process.exit(2);
}
const CONNECTIONS = Number(process.env.COMPARE_CONNECTIONS ?? 64);
const ROUNDS = Number(process.env.COMPARE_ROUNDS ?? 20);
const WINDOW_MS = Number(process.env.COMPARE_WINDOW_MS ?? (mode === 'create' ? 1000 : 700));
const WARMUP_MS = Number(process.env.COMPARE_WARMUP_MS ?? 3000);
const chat = mode !== 'create';
const PROFILE_DIR = process.env.COMPARE_CPU_PROF;

spawnSync('taskset', ['-a', '-p', '-c', '1', String(process.pid)], { stdio: 'ignore' });

/** bench/<file> of `tree`, pinned to `core`; resolves with its first IPC message (its URL, key). */
async function start(treeArg: string, file: string, core: number, env: Record<string, string>, nice = 0): Promise<{ child: ChildProcess; msg: { url: string; key: string } }> {
  const [tree, ...settings] = treeArg.split('+') as [string, ...string[]];
  const own = Object.fromEntries(settings.map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));
  // A profile is written at exit; a gateway whose close outlasts 3 s is made to exit (any tree's bench).
  const exitOnStop = "process.on('message', (m) => m?.cmd === 'stop' && setTimeout(() => process.exit(0), 3000).unref())";
  const prof = PROFILE_DIR && file !== 'stub-upstream.ts' && file !== 'chat-upstream.ts'
    ? ['--cpu-prof', `--cpu-prof-dir=${resolve(PROFILE_DIR, treeArg.replace(/\W+/g, '_'))}`, `--import=data:text/javascript,${encodeURIComponent(exitOnStop)}`]
    : [];
  const flags = file.endsWith('-gateway.ts') ? await gatewayFlags(tree, 1, [], own.NODE_OPTIONS ?? process.env.NODE_OPTIONS) : [];
  const child = spawn('taskset', ['-c', String(core), 'nice', '-n', String(nice), process.execPath, ...prof, ...flags, resolve(tree, 'bench', file)], {
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    env: { ...process.env, ...own, ...env },
  });
  return new Promise((ok, fail) => {
    child.once('exit', (code) => fail(new Error(`${tree}/bench/${file} exited with ${code}`)));
    child.once('message', (msg) => ok({ child, msg: msg as { url: string; key: string } }));
  });
}

/** A process's CPU time so far, µs (both gateway benches answer this message). */
const cpuOf = (child: ChildProcess) => new Promise<number>((ok) => {
  child.once('message', (m: { cpu: NodeJS.CpuUsage }) => ok(m.cpu.user + m.cpu.system));
  child.send({ cmd: 'cpu', cpu: true });
});

// The upstream stand-in (the first tree's): chat's answers at once; create's stub at nice 10, as
// the remote peer it stands for, finishing each task at its first poll.
const reference = trees[0]!.split('+')[0]!;
const upstream = chat ? await start(reference, 'chat-upstream.ts', 1, {}) : await start(reference, 'stub-upstream.ts', 1, {}, 10);
const gateways: Array<{ child: ChildProcess; msg: { url: string; key: string } }> = [];
for (const tree of trees) {
  gateways.push(chat
    ? await start(tree, 'chat-gateway.ts', 0, { UPSTREAM_URL: upstream.msg.url })
    : await start(tree, 'media-gateway.ts', 0, { UPSTREAM_URL: upstream.msg.url, BENCH_TIMING_SCALE: '1' }));
}

const path = chat ? '/v1/chat/completions' : '/vendors/provider_d/v1/model_d/generation';
const okStatus = chat ? 200 : 202;
const body = chat ? chatRequest(mode === 'stream') : createRequest();
const pools = gateways.map((g) => new Pool(g.msg.url, { connections: CONNECTIONS, pipelining: 1, keepAliveTimeout: 60_000 }));

/** Closed-loop requests to gateway `i` for `ms`; the number answered with the success status. */
async function load(i: number, ms: number): Promise<number> {
  const headers = { authorization: `Bearer ${gateways[i]!.msg.key}`, 'content-type': 'application/json' };
  let ok = 0;
  const end = performance.now() + ms;
  await Promise.all(Array.from({ length: CONNECTIONS }, async () => {
    while (performance.now() < end) {
      const res = await pools[i]!.request({ path, method: 'POST', headers, body });
      await res.body.dump();
      if (res.statusCode === okStatus) ok++;
    }
  }));
  return ok;
}

for (let i = 0; i < gateways.length; i++) await load(i, WARMUP_MS);
if (!chat) await new Promise((r) => setTimeout(r, 5000)); // the warm-up's tasks finish first

const cpuStart = await Promise.all(gateways.map((g) => cpuOf(g.child)));
const t = trees.map(() => ({ requests: 0, cpuUs: 0, ms: 0, ratios: [] as number[] }));
for (let round = 0; round < ROUNDS; round++) {
  const perRequest: number[] = [];
  for (let k = 0; k < gateways.length; k++) {
    const i = round % 2 === 0 ? k : gateways.length - 1 - k;
    const cpu0 = await cpuOf(gateways[i]!.child);
    const t0 = performance.now();
    const n = await load(i, WINDOW_MS);
    t[i]!.ms += performance.now() - t0;
    const cpu = (await cpuOf(gateways[i]!.child)) - cpu0;
    t[i]!.requests += n;
    t[i]!.cpuUs += cpu;
    perRequest[i] = cpu / Math.max(1, n);
  }
  for (let i = 0; i < gateways.length; i++) t[i]!.ratios.push(perRequest[i]! / perRequest[0]!);
}
if (!chat) {
  await new Promise((r) => setTimeout(r, 6000)); // the last tasks' polls and settlements
  const cpuEnd = await Promise.all(gateways.map((g) => cpuOf(g.child)));
  for (let i = 0; i < gateways.length; i++) t[i]!.cpuUs = cpuEnd[i]! - cpuStart[i]!;
}

console.log(`${mode}, ${CONNECTIONS} connections, ${ROUNDS} rounds of ${WINDOW_MS} ms per tree; gateways on core 0, upstream and load on core 1`);
console.log(`${'tree'.padEnd(28)} ${'req/s loaded'.padStart(12)} ${(chat ? 'CPU µs/req' : 'CPU µs/create (whole life)').padStart(26)} ${(chat ? '÷ first (median of rounds)' : '÷ first').padStart(27)}`);
for (let i = 0; i < trees.length; i++) {
  const r = t[i]!;
  const ratio = chat ? pct(r.ratios, 50).toFixed(3) : (r.cpuUs / r.requests / (t[0]!.cpuUs / t[0]!.requests)).toFixed(3);
  console.log(`${trees[i]!.padEnd(28)} ${String(Math.round((r.requests / r.ms) * 1000)).padStart(12)} ${(r.cpuUs / Math.max(1, r.requests)).toFixed(1).padStart(26)} ${ratio.padStart(27)}`);
}

for (const p of pools) await p.close();
// Under COMPARE_CPU_PROF, stopped by message so that each profile is written on the way out
// (the --import above makes any tree's gateway exit within 3 s of it); otherwise killed.
await Promise.all(gateways.map((g) => new Promise((ok) => {
  g.child.removeAllListeners('exit');
  g.child.once('exit', ok);
  if (PROFILE_DIR) g.child.send({ cmd: 'stop' });
  else g.child.kill();
})));
upstream.child.kill();
