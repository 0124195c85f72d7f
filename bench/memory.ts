// Memory footprint of the gateway: `npx node bench/memory.ts <idle|per-task|peak> [tree]`
//
//   idle      `gateway serve` of [tree] (default: this one) with its shipped config.yaml (memory
//             store, sandbox): RSS and threads once listening (3 s after the log line), then how
//             long the first requests take (a sandbox chat completion and a model D create, each
//             twice), to show that what starts lazily does not make the first request slow.
//             BENCH_SMAPS=1: resident memory by mapping once listening.
//   per-task  heap held per retained finished task, in this process: the gateway (memory store,
//             model D against bench/stub-upstream.ts, every task settled at its first poll, 3 s
//             once) takes BENCH_TASKS creates (20,000) over 64 connections after BENCH_WARMUP_TASKS (12,000: enough
//             to fill the wallet's bounded ledger and closed holds, which then stop growing);
//             heap after a full collection, before and after, ÷ the tasks. BENCH_FINISHED_TASKS
//             sets store.memory_finished_tasks (default: above BENCH_TASKS, so all are kept).
//   peak      `gateway serve` of [tree] with the shipped defaults (only ports, upstreams, an admin
//             token and no rate limits set): the chat benchmark's load (sync and streamed, 10 and
//             64 connections, BENCH_SECONDS = 5 each, against bench/chat-upstream.ts) then
//             BENCH_TASKS (100,000) model D creates over 64 connections against the stub, and 20 s
//             for the last tasks to settle. RSS sampled every 100 ms: peak and end. Diagnostics:
//             BENCH_STATES=1 (tasks in flight every 10 s), BENCH_SMAPS=1 (resident memory by mapping
//             at each phase), BENCH_SNAPSHOT_CHAT=1 / BENCH_SNAPSHOT_AT=<n> (heap snapshots, in the
//             tree's folder, after the chat load / at the n-th create; read them with bench/heap-top.ts),
//             BENCH_GATEWAY_NODE_OPTIONS (node/V8 flags on the gateway's command line, e.g. --trace-gc).
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { Pool } from 'undici';
import { chatRequest, createRequest, gatewayCommand } from './support.ts';

const HERE = fileURLToPath(new URL('./', import.meta.url));
const [mode = 'idle', treeArg] = process.argv.slice(2);
const TREE = resolve(treeArg ?? `${HERE}..`);
const D = '/vendors/provider_d/v1/model_d/generation';
const CHAT = '/v1/chat/completions';
const mb = (n: number) => Math.round(n / 104857.6) / 10;

/** RSS and thread count of a process, from /proc. */
export function procStatus(pid: number): { rss: number; threads: number } {
  const s = readFileSync(`/proc/${pid}/status`, 'utf8');
  return { rss: Number(/VmRSS:\s+(\d+)/.exec(s)![1]) * 1024, threads: Number(/Threads:\s+(\d+)/.exec(s)![1]) };
}

/**
 * Where a process's resident memory is, from /proc/<pid>/smaps (MB): the main thread's malloc heap
 * ([heap]), other anonymous mappings (V8's heap pages, other threads' malloc arenas, large malloc
 * blocks, thread stacks) by the size of the mapping, and file-backed pages (the node binary, libraries).
 */
export function residentBy(pid: number): string {
  const by: Record<string, number> = {};
  let name = '';
  for (const line of readFileSync(`/proc/${pid}/smaps`, 'utf8').split('\n')) {
    const head = /^([0-9a-f]+)-([0-9a-f]+) \S+ \S+ \S+ \d+\s*(.*)$/.exec(line);
    if (head) {
      const size = (parseInt(head[2]!, 16) - parseInt(head[1]!, 16)) / 1048576;
      const path = head[3]!;
      name = path === '[heap]' ? 'malloc [heap]' : path.startsWith('/') ? 'files' : path ? path : size >= 60 ? 'anon ≥ 60 MB (malloc arenas)' : size >= 1 ? 'anon 1–60 MB' : 'anon < 1 MB (V8 pages, stacks)';
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (rss) by[name] = (by[name] ?? 0) + Number(rss[1]) / 1024;
  }
  return Object.entries(by).filter(([, v]) => v >= 1).sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k} ${v.toFixed(0)}`).join(', ');
}

/** Heap used and tasks active, from the gateway's /metrics (default metrics of prom-client). */
export async function scrape(metricsUrl: string | undefined): Promise<{ heap: number; heapTotal: number; external: number; active: number; polls: string; spaces: string } | undefined> {
  if (!metricsUrl) return undefined;
  const text = await (await fetch(metricsUrl)).text();
  const sum = (name: string) => [...text.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'gm'))].reduce((a, m) => a + Number(m[1]), 0);
  // Polls waiting for their time (the provider's side: a timer each) and due ones the gateway has not run yet (its own backlog).
  const polls = (state: string) => sum(`gateway_job_queue_depth\\{queue="task.poll",state="${state}"\\}`);
  const running = sum('gateway_task_calls_running');
  // The young generation (new space) against the old one, used of sized: which one V8 grew.
  const space = (name: string) => `${name} ${mb(sum(`nodejs_heap_space_size_used_bytes\\{space="${name}"\\}`))}/${mb(sum(`nodejs_heap_space_size_total_bytes\\{space="${name}"\\}`))}`;
  return { heap: sum('nodejs_heap_size_used_bytes'), heapTotal: sum('nodejs_heap_size_total_bytes'), external: sum('nodejs_external_memory_bytes'), active: sum('gateway_tasks_active'), polls: `${polls('delayed')} polls waiting, ${polls('due')} due, ${running} submissions and polls running`, spaces: ['new', 'old', 'code', 'large_object'].map(space).join(', ') };
}

/**
 * `gateway serve` of `tree` with `config`; resolves once it logs its URL. Its stdout (the access
 * log) goes to a file: through a pipe to this busy process, the lines it could not write yet
 * would pile up in the gateway's memory and be counted as its own.
 */
export async function serve(tree: string, config: string, env: Record<string, string> = {}, nodeArgs: string[] = []): Promise<{ proc: ChildProcess; url: string; metricsUrl?: string; log: string }> {
  const log = join(mkdtempSync(join(tmpdir(), 'gw-serve-')), 'stdout.log');
  const fd = openSync(log, 'w');
  // What `npm start` runs (the compiled engine; a tree from before it: main.ts).
  const proc = spawn(process.execPath, [...nodeArgs, await gatewayCommand(tree), 'serve', '--config', config], {
    cwd: tree, env: { ...process.env, PORT: '0', METRICS_PORT: '0', LOG_LEVEL: 'info', ...env }, stdio: ['ignore', fd, 'inherit'],
  });
  closeSync(fd);
  let exited: number | null | undefined;
  proc.once('exit', (code) => (exited = code));
  for (;;) {
    await new Promise((r) => setTimeout(r, 50));
    if (exited !== undefined) throw new Error(`gateway exited with ${exited}: ${readFileSync(log, 'utf8').slice(-2000)}`);
    const line = readFileSync(log, 'utf8').split('\n').find((l) => l.includes('"gateway listening"'));
    if (!line) continue;
    const { url, metrics_url } = JSON.parse(line) as { url: string; metrics_url?: string };
    return { proc, url, metricsUrl: metrics_url, log };
  }
}

export async function stopServe(proc: ChildProcess): Promise<void> {
  await new Promise((r) => {
    proc.once('exit', r);
    proc.kill('SIGTERM');
  });
}

/** `connections` closed loops POSTing `body` to `path` until `until()`; returns the answers by status. */
export async function load(pool: Pool, path: string, headers: Record<string, string>, body: Buffer, connections: number, until: (statuses: Record<number, number>) => boolean): Promise<Record<number, number>> {
  const statuses: Record<number, number> = {};
  await Promise.all(Array.from({ length: connections }, async () => {
    while (!until(statuses)) {
      const r = await pool.request({ method: 'POST', path, headers, body });
      await r.body.dump();
      statuses[r.statusCode] = (statuses[r.statusCode] ?? 0) + 1;
      // A refusal that names a wait (503 + Retry-After: the gateway sheds load) is honoured, as a client would.
      const wait = r.statusCode === 503 ? Number(r.headers['retry-after']) : 0;
      if (wait > 0) await new Promise((ok) => setTimeout(ok, wait * 1000));
    }
  }));
  return statuses;
}

async function timed(url: string, path: string, headers: Record<string, string>, body: Buffer): Promise<string> {
  const t0 = performance.now();
  const r = await fetch(url + path, { method: 'POST', headers, body: new Uint8Array(body) });
  await r.arrayBuffer();
  return `${r.status} in ${(performance.now() - t0).toFixed(1)} ms`;
}

async function idle(): Promise<void> {
  const gw = await serve(TREE, join(TREE, 'config.yaml'));
  await new Promise((r) => setTimeout(r, 3000));
  const s = procStatus(gw.proc.pid!);
  console.log(`idle: RSS ${mb(s.rss)} MB, ${s.threads} threads (${TREE})`);
  if (process.env.BENCH_SMAPS) console.log(`  resident, MB: ${residentBy(gw.proc.pid!)}`);
  const headers = { authorization: 'Bearer gw_test_sandbox_demo_key_000000000000', 'content-type': 'application/json' };
  for (const round of ['first', 'second']) {
    console.log(`${round} chat completion: ${await timed(gw.url, CHAT, headers, chatRequest(false))}; ${round} model D create: ${await timed(gw.url, D, headers, createRequest())}`);
  }
  console.log(`after them: RSS ${mb(procStatus(gw.proc.pid!).rss)} MB, ${procStatus(gw.proc.pid!).threads} threads`);
  await stopServe(gw.proc);
}

/**
 * The gateway in this process (memory store, model D against bench/stub-upstream.ts with `polls`
 * polls to a task's end, the result copy off, no limits) with a tenant, its key and credits.
 */
export async function inProcess(opts: { polls?: number; finishedTasks?: number } = {}) {
  const { startStub } = await import('./stub-upstream.ts');
  const { loadConfigText } = await import('../engine/load-config.ts');
  const { startGateway } = await import('../engine/gateway.ts');
  const { NO_LIMITS } = await import('../test/helpers/gateway.ts');
  const stub = await startStub({ polls: opts.polls });
  const config = loadConfigText(`
server: { host: 127.0.0.1, port: 0 }
metrics: { port: null }
store: { kind: memory${opts.finishedTasks === undefined ? '' : `, memory_finished_tasks: ${opts.finishedTasks}`} }
sandbox: { enabled: false }
results: { store: off }
log: { level: ${process.env.BENCH_LOG_LEVEL ?? "error"} }
timing: { scale: 1 }
vendors: { dir: vendors, enabled: [provider_d] }
upstreams: { provider_d: { base_url: "${stub.url}", credentials: { api_key: bench } } }
${NO_LIMITS}`, `${HERE}..`, { env: {} });
  const gw = await startGateway(config);
  const tenant = await gw.tenants.createTenant({ name: 'bench' });
  const { key } = await gw.tenants.issueKey(tenant.id, {});
  await gw.billing.topUp(tenant.id, 1_000_000_000_000, 'bench-topup');
  const pool = new Pool(gw.url, { connections: 64, pipelining: 1 });
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  return { stub, config, gw, tenant, pool, headers };
}

async function perTask(): Promise<void> {
  const { compactHeap } = await import('../engine/util/heap.ts');
  const tasks = Number(process.env.BENCH_TASKS ?? 20_000);
  const { stub, config, gw, tenant, pool, headers } = await inProcess({ finishedTasks: Number(process.env.BENCH_FINISHED_TASKS ?? tasks + 10_000) });
  const run = async (n: number) => {
    let sent = 0;
    await load(pool, D, headers, createRequest(), 64, () => sent++ >= n);
    while ((await gw.tasks.listUnsettled(1)).length) {
      if (process.env.BENCH_DEBUG) console.error((await gw.tasks.listUnsettled(1))[0]);
      await new Promise((r) => setTimeout(r, 1000));
    }
    compactHeap();
    return process.memoryUsage().heapUsed;
  };
  const before = await run(Number(process.env.BENCH_WARMUP_TASKS ?? 12_000));
  const after = await run(tasks);
  console.log(`per-task: ${tasks} tasks settled; heap ${mb(before)} → ${mb(after)} MB: ${Math.round((after - before) / tasks)} bytes per retained finished task (store.memory_finished_tasks ${config.store.memory_finished_tasks})`);
  if (process.env.BENCH_SHOW) console.log((await gw.tasks.listByTenant(tenant.id, { count: 1 }))?.tasks[0]);
  if (process.env.BENCH_SNAPSHOT) console.log('heap snapshot:', (await import('node:v8')).writeHeapSnapshot(process.env.BENCH_SNAPSHOT));
  await pool.close();
  await gw.close();
  await stub.close();
}

/**
 * `gateway serve` of `tree` with the shipped defaults but for ports, the result copy (off: issue 34
 * measures it apart), the two upstreams
 * (bench/chat-upstream.ts for provider_c's chat, bench/stub-upstream.ts for provider_d), an admin
 * token and no rate limits; a tenant with a key and credits. `env`: more for the gateway process.
 */
export async function benchServe(tree: string, env: Record<string, string> = {}, nodeArgs: string[] = []) {
  const { startStub } = await import('./stub-upstream.ts');
  const { startBenchUpstream } = await import('./chat-upstream.ts');
  const { NO_LIMITS } = await import('../test/helpers/gateway.ts');
  const [stub, chatUp] = await Promise.all([startStub(), startBenchUpstream()]);
  const dir = mkdtempSync(join(tmpdir(), 'gw-memory-'));
  writeFileSync(join(dir, 'config.yaml'), `
server:
  host: 127.0.0.1
  port: \${PORT}
metrics:
  port: \${METRICS_PORT}
sandbox: { enabled: false }
results: { store: off }
admin: { token: bench-admin }
log: { level: info }
vendors: { dir: ${JSON.stringify(join(tree, 'vendors'))}, enabled: [provider_c, provider_d] }
upstreams:
  provider_c: { base_url: "${chatUp.url}", credentials: { api_key: sk-bench } }
  provider_d: { base_url: "${stub.url}", credentials: { api_key: bench } }
${NO_LIMITS}`);
  const gw = await serve(tree, join(dir, 'config.yaml'), env, nodeArgs);
  const admin = { authorization: 'Bearer bench-admin', 'content-type': 'application/json' };
  const post = async (path: string, body: unknown) => (await fetch(gw.url + path, { method: 'POST', headers: admin, body: JSON.stringify(body) })).json() as Promise<Record<string, string>>;
  const tenant = await post('/admin/v1/tenants', { name: 'bench' });
  const { key } = await post(`/admin/v1/tenants/${tenant.id}/keys`, {});
  await post(`/admin/v1/tenants/${tenant.id}/wallet/topups`, { credits: '100000000.00' });
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  const close = async () => {
    await stopServe(gw.proc);
    await Promise.all([stub.close(), chatUp.close()]);
  };
  return { gw, headers, close };
}

async function peak(): Promise<void> {
  const tasks = Number(process.env.BENCH_TASKS ?? 100_000);
  const seconds = Number(process.env.BENCH_SECONDS ?? 5);
  // BENCH_GATEWAY_NODE_OPTIONS: node/V8 flags for the gateway alone (e.g. to try GC settings, or
  // --trace-gc, which NODE_OPTIONS refuses), on its command line.
  const nodeArgs = [...(process.env.BENCH_GATEWAY_NODE_OPTIONS ?? '').split(' '), process.env.BENCH_SNAPSHOT_AT || process.env.BENCH_SNAPSHOT_CHAT ? '--heapsnapshot-signal=SIGUSR2' : ''].filter(Boolean);
  const { gw, headers, close } = await benchServe(TREE, {}, nodeArgs);
  const samples: number[] = [];
  const sampler = setInterval(() => samples.push(procStatus(gw.proc.pid!).rss), 100);
  const phase = async (label: string) => {
    const m = await scrape(gw.metricsUrl);
    if (process.env.BENCH_SMAPS) console.log(`  resident, MB: ${residentBy(gw.proc.pid!)}`);
    console.log(`${label}: RSS now ${mb(procStatus(gw.proc.pid!).rss)} MB, peak so far ${mb(Math.max(...samples, 0))} MB${m ? `; heap used ${mb(m.heap)} of ${mb(m.heapTotal)} MB (${m.spaces}), external ${mb(m.external)} MB, ${m.active} tasks active (${m.polls})` : ''}`);
  };
  console.log(`gateway's stdout (access log, and --trace-gc lines if asked): ${gw.log}`);
  await phase('idle');
  const pool = new Pool(gw.url, { connections: 64, pipelining: 1 });
  for (const stream of [false, true]) {
    for (const connections of [10, 64]) {
      const end = performance.now() + seconds * 1000;
      const st = await load(pool, CHAT, headers, chatRequest(stream), connections, () => performance.now() > end);
      await phase(`chat ${stream ? 'stream' : 'sync'} ${connections} connections ${JSON.stringify(st)}`);
    }
  }
  // BENCH_SNAPSHOT_CHAT=1: a heap snapshot of the gateway (in the tree's folder) once the chat load is over.
  if (process.env.BENCH_SNAPSHOT_CHAT) {
    gw.proc.kill('SIGUSR2');
    await new Promise((r) => setTimeout(r, 30_000));
    await phase('after the chat snapshot');
  }
  let sent = 0;
  const t0 = performance.now();
  // BENCH_SNAPSHOT_AT=n: a heap snapshot of the gateway (in the tree's folder) at the n-th create.
  const snapAt = Number(process.env.BENCH_SNAPSHOT_AT ?? -1);
  // Where the tasks in flight are, every 10 s (BENCH_STATES=1).
  const states = process.env.BENCH_STATES ? setInterval(() => void phase(`  after ${sent} creates`), 10_000) : undefined;
  // Until `tasks` creates were accepted: the refused ones (503, when the gateway sheds load) are sent again.
  const st = await load(pool, D, headers, createRequest(), 64, (s) => {
    if (sent === snapAt) gw.proc.kill('SIGUSR2');
    if (sent - (s[503] ?? 0) >= tasks) return true;
    sent++;
    return false;
  });
  clearInterval(states);
  await phase(`${tasks} creates in ${((performance.now() - t0) / 1000).toFixed(1)} s ${JSON.stringify(st)}`);
  await new Promise((r) => setTimeout(r, 20_000));
  await phase('20 s later');
  clearInterval(sampler);
  console.log(`peak: RSS ${mb(Math.max(...samples))} MB (${TREE})`);
  await pool.close();
  await close();
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  if (mode === 'idle') await idle();
  else if (mode === 'per-task') await perTask();
  else if (mode === 'peak') await peak();
  else {
    console.error('usage: npx node bench/memory.ts <idle|per-task|peak> [tree]');
    process.exit(2);
  }
}
