// `gateway serve --workers 2` on a real redis-server: one port served by two worker processes
// (each request's access line names its worker's pid), one metrics endpoint whose counters are
// the sum of both, a worker killed with SIGKILL that the primary starts again, /readyz 200 only
// while every worker is ready, and SIGTERM draining both workers' requests within the grace period.
// Started as it ships (engine/cli/gateway.mjs, as `npm start`): primary and workers run dist/.
import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startRedis, type RedisServer } from '../helpers/redis.ts';
import { FakeUpstream, json } from '../helpers/upstream.ts';
import { metricValue } from '../helpers/metrics.ts';
import { ROOT } from '../helpers/gateway.ts';
import { countingImageToolUpstream, type CountingUpstream } from './image-tool-upstream.ts';
import { freePort, tenantWithKey, writeConfig } from './support.ts';

const IMAGES = '/vendors/provider_b/v1/tob/diffusion';
const GATEWAY = join(ROOT, 'engine/cli/gateway.mjs');
const GRACE_MS = 3000;
/** The chat upstream answers this late: long enough to be in flight when SIGTERM comes. */
const CHAT_DELAY_MS = 1500;

/** One request on a connection of its own (the primary hands out connections round-robin). */
function fresh(url: string, method: string, path: string, headers: Record<string, string> = {}, body?: unknown): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const u = new URL(path, url);
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const req = request({ host: u.hostname, port: u.port, path: u.pathname, method, agent: false, headers: { ...headers, ...(payload ? { 'content-type': 'application/json' } : {}) } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode!, text }));
    });
    req.on('error', reject);
    req.end(payload);
  });
}

/** `serve --workers` that is expected to exit by itself: its code and output. */
function runToExit(config: string, workers: string, env: Record<string, string>): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [GATEWAY, 'serve', '--config', config, '--workers', workers], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    p.stdout!.on('data', (d) => (out += d));
    p.stderr!.on('data', (d) => (out += d));
    p.once('exit', (code) => resolve({ code, out }));
  });
}

interface Cluster {
  proc: ChildProcess;
  url: string;
  metricsUrl: string;
  output(): string;
  exited: Promise<number | null>;
}

async function startCluster(config: string, workers: string, args: string[] = []): Promise<Cluster> {
  const port = await freePort();
  const proc = spawn(process.execPath, [GATEWAY, 'serve', '--config', config, '--workers', workers, ...args], {
    cwd: ROOT, env: { ...process.env, PORT: String(port) }, stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stdout!.on('data', (d) => (out += d));
  proc.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  for (let i = 0; !out.includes('gateway cluster running'); i++) {
    if (proc.exitCode !== null || i > 600) {
      proc.kill('SIGKILL');
      throw new Error(`serve --workers did not start:\n${out}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  const metricsUrl = /"metrics_url":"([^"]+)"/.exec(out.slice(out.indexOf('gateway cluster running') - 400))![1]!;
  return { proc, url: `http://127.0.0.1:${port}`, metricsUrl, output: () => out, exited };
}

/** The JSON log lines of a process's output. */
const lines = (out: string) => out.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, any>);

async function until<T>(what: string, probe: () => Promise<T | undefined>, ms = 20_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await probe().catch(() => undefined);
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('serve --workers 2 over Redis', function () {
  this.timeout(120_000);
  let redis: RedisServer;
  let images: CountingUpstream;
  let chat: FakeUpstream;
  let gw: Cluster;
  let key: string;

  before(async () => {
    redis = await startRedis();
    images = await countingImageToolUpstream().start();
    chat = await new FakeUpstream().on('POST', '/v1/chat/completions', async (_req, res) => {
      await new Promise((r) => setTimeout(r, CHAT_DELAY_MS));
      json(res, 200, { id: 'c1', object: 'chat.completion', created: 1, model: 'gpt-4o-mini', choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }], usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 } });
    }).start();
    const config = writeConfig({ redisUrl: redis.url, prefix: 'wk', upstreamUrl: images.url, chatUrl: chat.url, graceMs: GRACE_MS, scale: 1 }); // scale 1: the upstream timeout (5 s) outlasts the slow chat
    gw = await startCluster(config, '2');
    key = (await tenantWithKey(gw.url)).key;
  });
  after(async () => {
    if (gw?.proc.exitCode === null) gw.proc.kill('SIGKILL');
    await images?.close();
    await chat?.close();
    await redis?.stop();
  });

  it('refuses the memory store in one line, with what to do', async () => {
    const config = writeConfig({ redisUrl: redis.url, prefix: 'wk-mem', upstreamUrl: images.url });
    const r = await runToExit(config, 'auto', { GATEWAY_STORE: 'memory' });
    expect(r.code).to.equal(2);
    expect(r.out.trim().split('\n')).to.deep.equal(['gateway: --workers needs the redis store (the memory store lives inside one process): set store.kind: redis, or GATEWAY_STORE=redis and REDIS_URL']);
  });

  it('combines with --role: two job workers, no HTTP, one metrics endpoint', async () => {
    const config = writeConfig({ redisUrl: redis.url, prefix: 'wk-role', upstreamUrl: images.url });
    const jobs = await startCluster(config, '2', ['--role', 'worker']);
    try {
      // Worker lines are flushed every 10 ms: they may follow the primary's.
      const running = await until('both workers\' lines', async () => {
        const found = lines(jobs.output()).filter((l) => l.msg === 'gateway worker running');
        return found.length === 2 ? found : undefined;
      });
      expect(running.map((l) => [l.worker, l.role]).sort()).to.deep.equal([[1, 'worker'], [2, 'worker']]);
      expect(metricValue(await (await fetch(jobs.metricsUrl)).text(), 'gateway_cluster_workers', { state: 'ready' })).to.equal(2);
    } finally {
      jobs.proc.kill('SIGTERM');
      expect(await jobs.exited, jobs.output().slice(-2000)).to.equal(0);
    }
  });

  it('stops with exit 1 when a worker cannot start (the port is taken), instead of restarting it for ever', async () => {
    const taken = createServer().listen(0, '127.0.0.1');
    await once(taken, 'listening');
    try {
      const config = writeConfig({ redisUrl: redis.url, prefix: 'wk-port', upstreamUrl: images.url });
      const r = await runToExit(config, '2', { PORT: String((taken.address() as AddressInfo).port) });
      expect(r.code, r.out).to.equal(1);
      expect(r.out).to.include('a worker exited before it started; stopping');
      expect(r.out).not.to.include('restarting it');
    } finally {
      taken.close();
    }
  });

  it('serves one port from both workers and sums their counters on one metrics endpoint', async () => {
    const before = metricValue(await (await fetch(gw.metricsUrl)).text(), 'gateway_http_requests_total', { method: 'POST', status_class: '2xx' });
    const SENT = 20;
    const answers = await Promise.all(Array.from({ length: SENT }, (_, i) => fresh(gw.url, 'POST', IMAGES, { authorization: `Bearer ${key}` }, { prompt: `task ${i}` })));
    expect(answers.map((a) => a.status)).to.deep.equal(Array(SENT).fill(202));
    // Each worker logged some of them under its own pid.
    await new Promise((r) => setTimeout(r, 100)); // the access log is flushed every 10 ms
    const pids = new Set(lines(gw.output()).filter((l) => l.msg === 'request' && l.path === IMAGES && l.status === 202).map((l) => l.pid));
    expect(pids.size, 'the workers that answered').to.equal(2);
    // Forked by the primary with its script, the bin: each runs the compiled engine (build.mjs).
    for (const pid of pids) expect(readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')).to.include(GATEWAY);
    expect(gw.output()).to.not.include('running the TypeScript sources');
    const text = await (await fetch(gw.metricsUrl)).text();
    // The creates (tenantWithKey's admin POSTs answered 2xx before), summed over both workers.
    expect(metricValue(text, 'gateway_http_requests_total', { method: 'POST', status_class: '2xx' }) - before).to.equal(SENT);
    expect(metricValue(text, 'gateway_tasks_created_total')).to.equal(SENT);
    // Per-process gauges keep one series per worker; the cluster's own say both are ready.
    expect(metricValue(text, 'process_resident_memory_bytes', { worker: '1' })).to.be.greaterThan(0);
    expect(metricValue(text, 'process_resident_memory_bytes', { worker: '2' })).to.be.greaterThan(0);
    expect(metricValue(text, 'gateway_cluster_workers', { state: 'ready' })).to.equal(2);
    expect((await fresh(gw.url, 'GET', '/readyz')).status).to.equal(200);
  });

  it('restarts a worker killed with SIGKILL; /readyz is 503 until it is back, and no counter goes down', async () => {
    const started = () => lines(gw.output()).filter((l) => l.msg === 'worker started');
    const victim = started().find((l) => l.slot === 1)!.worker_pid as number;
    const before = metricValue(await (await fetch(gw.metricsUrl)).text(), 'gateway_tasks_created_total');
    process.kill(victim, 'SIGKILL');
    await until('the primary to see the exit', async () => lines(gw.output()).find((l) => l.msg === 'worker exited; restarting it' && l.worker_pid === victim));
    expect((await fresh(gw.url, 'GET', '/readyz')).status, 'while worker 1 is down').to.equal(503);
    const back = await until('worker 1 back', async () => started().find((l) => l.slot === 1 && l.worker_pid !== victim));
    expect(back.worker_pid).not.to.equal(victim);
    await until('/readyz 200 again', async () => ((await fresh(gw.url, 'GET', '/readyz')).status === 200 ? true : undefined));
    const text = await (await fetch(gw.metricsUrl)).text();
    expect(metricValue(text, 'gateway_tasks_created_total'), 'the dead worker\'s counts are kept').to.equal(before);
    expect(metricValue(text, 'gateway_cluster_worker_restarts_total', { worker: '1' })).to.equal(1);
  });

  it('drains both workers on SIGTERM within the grace period', async () => {
    const body = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] };
    const inFlight: Promise<{ status: number; text: string }>[] = [];
    // New connections until each worker holds a call (its in-flight gauge, from the one endpoint):
    // the primary hands connections to whichever worker is free next, not strictly in turn.
    await until('a chat call in flight on each worker', async () => {
      inFlight.push(fresh(gw.url, 'POST', '/v1/chat/completions', { authorization: `Bearer ${key}` }, body));
      await new Promise((r) => setTimeout(r, 50));
      const text = await (await fetch(gw.metricsUrl)).text();
      return ['1', '2'].every((worker) => metricValue(text, 'gateway_http_requests_in_flight', { worker }) >= 1) ? true : undefined;
    }, 10_000);
    const t0 = Date.now();
    gw.proc.kill('SIGTERM');
    const answers = await Promise.all(inFlight);
    expect(answers.map((a) => a.status), answers.map((a) => a.text).join('\n')).to.deep.equal(answers.map(() => 200));
    expect(await gw.exited, gw.output().slice(-3000)).to.equal(0);
    expect(Date.now() - t0).to.be.below(GRACE_MS);
    const log = lines(gw.output());
    // Each call's access line is written after its charge: every one is there, from both workers
    // (the store closed only after the charges, not when the last connection did).
    const chats = log.filter((l) => l.msg === 'request' && l.path === '/v1/chat/completions' && l.status === 200);
    expect(chats, 'an access line per chat call').to.have.length(inFlight.length);
    expect(new Set(chats.map((l) => l.pid)).size, 'both workers had chat calls in flight').to.equal(2);
    expect(log.filter((l) => l.level >= 50 && l.msg !== 'worker exited; restarting it'), 'no error but the SIGKILL above').to.deep.equal([]);
    expect(log.filter((l) => l.msg === 'gateway stopped').map((l) => l.worker).sort()).to.deep.equal([1, 2]);
    expect(log.some((l) => l.msg === 'gateway cluster stopped' && l.code === 0)).to.equal(true);
  });
});
