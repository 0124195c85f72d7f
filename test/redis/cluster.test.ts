// Scale-out on a real Redis Cluster: three masters started here (each owns a third of the hash
// slots, no replicas) and two gateway processes (`--role all`) over it, configured with
// store.redis_cluster_nodes. What one process does, the other sees: tasks created on one are
// read, polled and settled by either; a webhook arrives signed; rate and concurrency limits
// count across both exactly; sync chats against a tight rate and a small balance pass exactly
// the rate's number (the funds decide among those) and are each charged once, the ledger
// balanced (the grouped hold, settle and rate scripts); an Idempotency-Key replays from the
// other process. Each store
// script runs on the master of its keys' slot, so a key computed outside KEYS or a command
// spanning slots would fail here with CROSSSLOT (the processes' logs are checked for it).
// Last, a master is killed: requests are refused at once with 503 / 4003 and /readyz turns 503.
import { expect } from 'chai';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { Cluster, Redis } from 'ioredis';
import { FakeOpenAI } from '../chat/fake-openai.ts';
import { strictAdmission } from '../limits/strict-admission.ts';
import { call } from '../helpers/gateway.ts';
import { FakeUpstream, json } from '../helpers/upstream.ts';
import { testPki } from '../webhooks/support/pki.ts';
import { independentSignature, Receiver } from '../webhooks/support/receiver.ts';
import { admin, freePort, ledger, spawnGateway, tenantWithKey, writeConfig, type GatewayProcess } from './support.ts';

const IMAGES = '/vendors/provider_b/v1/tob/diffusion';
const PREFIX = 'cl';
const REDIS_SERVER = process.env.REDIS_SERVER ?? '/usr/bin/redis-server';
const REDIS_CLI = process.env.REDIS_CLI ?? '/usr/bin/redis-cli';
const run = promisify(execFile);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const children = new Set<ChildProcess>();
// mocha --exit ends the process without after hooks on some failures: no server may outlive it.
process.on('exit', () => {
  for (const c of children) c.kill('SIGKILL');
});

interface ClusterNode {
  port: number;
  proc: ChildProcess;
}

/** Three cluster-enabled redis-servers in `dir`, joined into one cluster of three masters. */
async function startCluster(dir: string): Promise<ClusterNode[]> {
  const ports = new Set<number>();
  // The cluster bus needs a port of its own (by default port + 10000, out of range for high ports).
  while (ports.size < 6) ports.add(await freePort());
  const [p1, p2, p3, b1, b2, b3] = [...ports] as [number, number, number, number, number, number];
  const nodes = [[p1, b1], [p2, b2], [p3, b3]].map(([port, bus]) => {
    const proc = spawn(REDIS_SERVER, [
      '--port', String(port), '--cluster-port', String(bus), '--bind', '127.0.0.1', '--dir', dir,
      '--cluster-enabled', 'yes', '--cluster-config-file', join(dir, `nodes-${port}.conf`),
      '--appendonly', 'no', '--save', '', '--daemonize', 'no', '--loglevel', 'warning',
    ], { stdio: 'ignore' });
    children.add(proc);
    proc.once('exit', () => children.delete(proc));
    return { port: port!, proc };
  });
  for (const n of nodes) await waitFor(async () => (await cli(n.port, 'PING')) === 'PONG', `redis-server on ${n.port} to answer PING`);
  await run(REDIS_CLI, ['--cluster', 'create', ...nodes.map((n) => `127.0.0.1:${n.port}`), '--cluster-replicas', '0', '--cluster-yes']);
  for (const n of nodes) await waitFor(async () => /cluster_state:ok/.test(await cli(n.port, 'CLUSTER', 'INFO')), `cluster_state:ok on ${n.port}`);
  return nodes;
}

async function cli(port: number, ...args: string[]): Promise<string> {
  try {
    return (await run(REDIS_CLI, ['-p', String(port), ...args])).stdout.trim();
  } catch {
    return '';
  }
}

async function waitFor(check: () => Promise<boolean>, what: string, ms = 10_000): Promise<void> {
  for (const deadline = Date.now() + ms; !(await check()); await sleep(20)) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
  }
}

/**
 * The image tool's upstream: a task succeeds at its third poll, except that a prompt with
 * `[hold]` stays in progress while `held` is true (to keep tasks active for the concurrency limit).
 */
function holdingUpstream() {
  const up = new FakeUpstream();
  const prompts = new Map<string, string>();
  const submits = new Map<string, number>();
  const polls = new Map<string, number>();
  const state = { held: false };
  up.on('POST', '/mj/submit/imagine', (req, res) => {
    const id = `up-${prompts.size + 1}`;
    prompts.set(id, req.body.prompt);
    submits.set(req.body.prompt, (submits.get(req.body.prompt) ?? 0) + 1);
    json(res, 200, { code: 1, result: id, description: 'ok' });
  });
  up.on('GET', /^\/mj\/task\/[^/]+\/fetch$/, (req, res) => {
    const id = req.path.split('/')[3]!;
    const n = (polls.get(id) ?? 0) + 1;
    polls.set(id, n);
    if (n < 3 || (state.held && prompts.get(id)?.includes('[hold]'))) return json(res, 200, { id, status: 'IN_PROGRESS' });
    json(res, 200, { id, action: 'IMAGINE', status: 'SUCCESS', imageUrls: [0, 1, 2, 3].map((i) => `https://cdn.example.com/${id}/${i}.png`) });
  });
  return { up, prompts, submits, polls, state };
}

describe('redis cluster: two gateway processes over three masters', function () {
  this.timeout(60_000);
  const dir = mkdtempSync(join(tmpdir(), 'gw-cluster-'));
  let nodes: ClusterNode[] = [];
  const procs: GatewayProcess[] = [];
  let upstream: ReturnType<typeof holdingUpstream>;
  let rx: Receiver;
  let chat: FakeOpenAI;
  let a: GatewayProcess;
  let b: GatewayProcess;
  let archiveDir = '';
  /** The tasks the first test saw complete: their poll jobs must have left the due set. */
  const finishedIds: string[] = [];

  before(async function () {
    this.timeout(30_000);
    nodes = await startCluster(dir);
    upstream = holdingUpstream();
    await upstream.up.start();
    rx = await Receiver.start();
    chat = await new FakeOpenAI().start();
    const config = writeConfig({
      chatUrl: chat.url,
      chatKey: 'sk-upstream-test',
      redisUrl: 'redis://127.0.0.1:1', // unused: the cluster's nodes are what the processes use
      clusterNodes: nodes.map((n) => `redis://127.0.0.1:${n.port}`),
      prefix: PREFIX,
      upstreamUrl: upstream.up.url,
      caPem: testPki().caPem,
    });
    // Ledger lines older than 1.8 s move to the archive (results.local.dir beside the config,
    // shared by both processes) every 200 ms: every ledger read below reads across both.
    writeFileSync(config, readFileSync(config, 'utf8').replace('job_lock_ms: 30000 }', 'job_lock_ms: 30000, ledger_retention_hours: 0.0005, ledger_archive_interval_ms: 20000 }'));
    archiveDir = join(dirname(config), 'data', 'results', 'ledger');
    for (const p of await Promise.allSettled([spawnGateway(config, 'all'), spawnGateway(config, 'all')])) {
      if (p.status === 'rejected') throw p.reason;
      procs.push(p.value);
    }
    [a, b] = procs as [GatewayProcess, GatewayProcess];
  });

  after(async function () {
    this.timeout(20_000);
    const codes = await Promise.all(procs.map(async (p) => {
      const timer = setTimeout(() => p.proc.kill('SIGKILL'), 8_000);
      const code = await p.stop();
      clearTimeout(timer);
      return code;
    }));
    await rx?.close();
    await chat?.close();
    await upstream?.up.close();
    // Every redis-server started, including those of a cluster that never formed.
    const servers = [...children];
    for (const c of servers) c.kill('SIGKILL');
    await Promise.all(servers.map((c) => (c.exitCode === null && c.signalCode === null ? new Promise((r) => c.once('exit', r)) : undefined)));
    rmSync(dir, { recursive: true, force: true });
    procs.forEach((p, i) => expect(codes[i], p.output().slice(-2000)).to.equal(0));
  });

  /** Polls `id` (through either process in turn) until it completes. */
  async function completed(key: string, id: string, deadline = Date.now() + 20_000): Promise<void> {
    for (let i = 0; ; i++) {
      const r = await call((i % 2 ? a : b).url, 'GET', `${IMAGES}/${id}`, { key });
      expect(r.status, r.text).to.equal(200);
      if (r.body.task_info.status === 'completed') return;
      expect(r.body.task_info.status, r.text).not.to.equal('failed');
      if (Date.now() > deadline) throw new Error(`task ${id} did not complete`);
      await sleep(20);
    }
  }

  /**
   * The tenant's tasks settled: a task's hold is settled just after its `completed` can be seen
   * (its slot is free before: docs/decisions.md, 2026-11-27), so billing is read once none is held.
   */
  async function settled(tenantId: string): Promise<void> {
    await waitFor(async () => ((await admin(b.url, 'GET', `/tenants/${tenantId}/wallet`)).held_milli ?? 0) === 0, `tenant ${tenantId}'s holds settled`);
  }

  it('is ready on both processes', async () => {
    for (const p of [a, b]) expect((await fetch(`${p.url}/readyz`)).status).to.equal(200);
  });

  it('creates on one process, reads and finishes on the other, settles each task once and delivers signed webhooks', async () => {
    const { tenantId, key } = await tenantWithKey(a.url);
    const ep = await call(b.url, 'POST', '/v1/webhooks/endpoints', { key, body: { url: rx.url('/cluster'), events: ['task.created', 'task.succeeded'] } });
    expect(ep.status, ep.text).to.equal(201);
    const secret: string = ep.body.secret;

    const ids: string[] = [];
    for (let i = 0; i < 30; i++) {
      const [on, other] = i % 2 ? [a, b] : [b, a];
      const created = await call(on.url, 'POST', IMAGES, { key, body: { prompt: `cluster task ${i}` } });
      expect(created.status, created.text).to.equal(202);
      const id: string = created.body.task_info.id;
      ids.push(id);
      const read = await call(other.url, 'GET', `${IMAGES}/${id}`, { key });
      expect(read.status, read.text).to.equal(200);
      expect(read.body.task_info.id).to.equal(id);
    }
    await Promise.all(ids.map((id) => completed(key, id)));
    finishedIds.push(...ids);
    await settled(tenantId);

    // One submission per task and three polls per upstream task: no doubled job across processes.
    for (let i = 0; i < 30; i++) expect(upstream.submits.get(`cluster task ${i}`)).to.equal(1);
    const polled = [...upstream.prompts].filter(([, p]) => p.startsWith('cluster task ')).map(([id]) => upstream.polls.get(id));
    expect(polled).to.deep.equal(Array(30).fill(3));

    // Settlement: each task one hold and one settle (plus a release of what it did not use), the
    // ledger adds up to the wallet, nothing stays held.
    const ledger = await admin(b.url, 'GET', `/tenants/${tenantId}/wallet/ledger?limit=200`);
    const entries = ledger.data as { kind: string; ref: string; amount_milli: number }[];
    for (const id of ids) {
      const mine = entries.filter((e) => e.ref === id);
      expect(mine.map((e) => e.kind).filter((k) => k !== 'release').sort()).to.deep.equal(['hold', 'settle']);
      const sum = (kind: string) => mine.filter((e) => e.kind === kind).reduce((s, e) => s + e.amount_milli, 0);
      expect(sum('settle') + sum('release')).to.equal(sum('hold'));
    }
    const total = (kind: string) => entries.filter((e) => e.kind === kind).reduce((s, e) => s + e.amount_milli, 0);
    const wallet = await admin(a.url, 'GET', `/tenants/${tenantId}/wallet`);
    expect(wallet.held_milli).to.equal(0);
    expect(wallet.balance_milli).to.equal(total('topup') - total('settle'));
    expect(wallet.balance_milli).to.equal(100_000_000 - 30 * 34_000);

    // Every event arrived once per delivery id, signed with the endpoint's secret.
    await waitFor(async () => rx.requests.length >= 60, '60 webhook deliveries', 15_000);
    const byDelivery = new Map<string, { type: string; data: { payload: { task_info: { id: string } } } }>();
    for (const r of rx.requests) {
      const id = String(r.headers['x-service-webhook-id']);
      expect(r.headers['x-service-webhook-signature']).to.equal(independentSignature(secret, id, String(r.headers['x-service-webhook-timestamp']), r.body));
      byDelivery.set(id, JSON.parse(r.body.toString()));
    }
    expect(byDelivery.size).to.equal(60);
    for (const id of ids) {
      const types = [...byDelivery.values()].filter((e) => e.data.payload.task_info.id === id).map((e) => e.type).sort();
      expect(types).to.deep.equal(['task.created', 'task.succeeded']);
    }
  });

  it('moves old ledger lines to the archive once (two archivers) and answers the same ledger and CSV from either process', async () => {
    const { tenantId, key } = await tenantWithKey(b.url);
    const ids: string[] = [];
    for (let i = 0; i < 10; i++) {
      const created = await call((i % 2 ? a : b).url, 'POST', IMAGES, { key, body: { prompt: `archived task ${i}` } });
      expect(created.status, created.text).to.equal(202);
      ids.push(created.body.task_info.id);
    }
    await Promise.all(ids.map((id) => completed(key, id)));
    await settled(tenantId);
    const read = async (p: GatewayProcess) => {
      const pages: unknown[] = [];
      let cursor = '';
      do {
        const page = await call(p.url, 'GET', `/v1/ledger?limit=7${cursor ? `&cursor=${cursor}` : ''}`, { key });
        expect(page.status, page.text).to.equal(200);
        pages.push(page.body);
        cursor = page.body.next_cursor ?? '';
      } while (cursor);
      const csv = await (await fetch(`${p.url}/v1/ledger?format=csv`, { headers: { authorization: `Bearer ${key}` } })).text();
      return { pages, csv };
    };
    const before = await read(a);
    const lines = before.csv.split('\r\n').length - 2;
    expect(lines).to.be.at.least(21); // a top-up, then per task a hold, a settle and maybe a release
    const archived = () => {
      try {
        return readdirSync(join(archiveDir, tenantId), { recursive: true, encoding: 'utf8' })
          .filter((f) => /\d{16}$/.test(f))
          .flatMap((f) => readFileSync(join(archiveDir, tenantId, f), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as { seq: number }));
      } catch {
        return [];
      }
    };
    await waitFor(async () => archived().length >= lines, 'every line in the archive', 20_000);
    expect(archived().map((e) => e.seq).sort((x, y) => x - y), 'each line once').to.deep.equal(Array.from({ length: lines }, (_, i) => i + 1));
    expect(await read(b)).to.deep.equal(before);
    expect(await read(a)).to.deep.equal(before);
  });

  it('serves the console from either process: sessions, the task list (tenant index) and usage', async () => {
    const { tenantId, key } = await tenantWithKey(a.url);
    const signIn = await call(a.url, 'POST', '/console/v1/session', { body: { api_key: key } });
    expect(signIn.status, signIn.text).to.equal(201);
    const cookie = signIn.headers.getSetCookie()[0]!.split(';')[0]!;
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) {
      const created = await call((i % 2 ? a : b).url, 'POST', IMAGES, { key, body: { prompt: `console task ${i}` } });
      expect(created.status, created.text).to.equal(202);
      ids.push(created.body.task_info.id);
    }
    await Promise.all(ids.map((id) => completed(key, id)));
    const seen: string[] = [];
    let cursor: string | null = null;
    for (let i = 0; i < 2; i++) {
      const page = await call((i ? a : b).url, 'GET', `/v1/tasks?limit=3${cursor ? `&starting_after=${cursor}` : ''}`, { headers: { cookie } });
      expect(page.status, page.text).to.equal(200);
      seen.push(...page.body.data.map((t: { task_info: { id: string } }) => t.task_info.id));
      cursor = page.body.next_cursor;
    }
    expect(cursor).to.equal(null);
    expect([...seen].sort()).to.deep.equal([...ids].sort());
    await settled(tenantId);
    const usage = await call(b.url, 'GET', '/v1/usage', { headers: { cookie } });
    expect(usage.body.total_credits, usage.text).to.equal('204.000'); // 6 × 34 credits, as the ledger settled them
    const out = await call(b.url, 'DELETE', '/console/v1/session', { headers: { cookie, origin: b.url } });
    expect(out.status).to.equal(204);
    expect((await call(a.url, 'GET', '/v1/tasks', { headers: { cookie } })).status).to.equal(401);
  });

  it('counts a key\'s request rate across both processes exactly', async () => {
    const { tenantId, key } = await tenantWithKey(a.url);
    await admin(a.url, 'PUT', `/tenants/${tenantId}/limits`, { rate: { key: { per_minute: 10 } } });
    // The burst must fall in one clock-aligned minute window.
    const intoMinute = Date.now() % 60_000;
    if (intoMinute > 55_000) await sleep(60_000 - intoMinute + 100);
    const answers = await Promise.all(Array.from({ length: 16 }, (_, i) => call((i % 2 ? a : b).url, 'POST', IMAGES, { key, body: { prompt: `rate ${i}` } })));
    const statuses = answers.map((r) => r.status);
    expect(statuses.filter((s) => s === 202), JSON.stringify(statuses)).to.have.length(10);
    const refused = answers.filter((r) => r.status !== 202);
    expect(refused.map((r) => [r.status, r.body.error_code])).to.deep.equal(Array(6).fill([429, 1004]));
    // Both processes admitted some: the count is shared, not per process.
    const admittedBy = new Set(answers.flatMap((r, i) => (r.status === 202 ? [i % 2] : [])));
    expect(admittedBy.size).to.equal(2);
  });

  it('sync chats on both processes against a tight rate limit and a small balance: exactly the allowed number pass, each charged once, the ledger balances', async () => {
    // A balance of a few chats' holds: the holds (rates, funds and hold in one admission) run
    // grouped per tenant (one script for the burst's holds, one for its settlements).
    const { tenantId, key } = await tenantWithKey(a.url, '0.01');
    await admin(a.url, 'PUT', `/tenants/${tenantId}/limits`, { rate: { key: { per_minute: 24 } } });
    const intoMinute = Date.now() % 60_000;
    if (intoMinute > 50_000) await sleep(60_000 - intoMinute + 100);
    const body = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hello there' }], max_tokens: 20 };
    const answers = await Promise.all(Array.from({ length: 60 }, (_, i) => call((i % 2 ? a : b).url, 'POST', '/v1/chat/completions', { key, body })));
    const codes = answers.map((r) => (r.status === 200 ? 200 : r.body.error_code));
    // Rates first: exactly 24 pass them; of those, the funds decide.
    expect(codes.filter((c) => c === 1004), JSON.stringify(codes)).to.have.length(36);
    const served = codes.filter((c) => c === 200).length;
    expect(served + codes.filter((c) => c === 1003).length, JSON.stringify(codes)).to.equal(24);
    expect(served, 'some served, some refused for funds').to.be.within(1, 23);
    await sleep(300); // the settlements follow the answers
    const lines = await ledger(a.url, tenantId);
    const sum = (kind: string) => lines.filter((l) => l.kind === kind).reduce((s, l) => s + l.amount_milli, 0);
    const settledRefs = new Set(lines.filter((l) => l.kind === 'settle').map((l) => l.ref.replace(/\+$/, '')));
    expect(settledRefs.size, 'one charge per answer served').to.equal(served);
    expect(sum('hold') - sum('settle') - sum('release'), 'every hold closed').to.equal(0);
    const wallet = await admin(b.url, 'GET', `/tenants/${tenantId}/wallet`);
    expect(wallet.held_milli ?? 0).to.equal(0);
    expect(sum('topup') - sum('settle')).to.equal(wallet.balance_milli);
    console.log(`      ${served} served, ${24 - served} refused for funds (1003), 36 over the rate (1004); ${sum('settle')} milli charged`);
  });

  it('holds a tenant to its concurrent tasks across both processes, and frees the slots as tasks end', async () => {
    const { tenantId, key } = await tenantWithKey(a.url);
    await admin(a.url, 'PUT', `/tenants/${tenantId}/limits`, { concurrent_tasks: 4 });
    upstream.state.held = true;
    try {
      const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => call((i % 2 ? a : b).url, 'POST', IMAGES, { key, body: { prompt: `[hold] ${i}` } })));
      const ok = answers.filter((r) => r.status === 202);
      expect(ok, JSON.stringify(answers.map((r) => r.status))).to.have.length(4);
      expect(answers.filter((r) => r.status !== 202).map((r) => [r.status, r.body.error_code])).to.deep.equal(Array(6).fill([429, 1005]));
      // Still full while they run, whichever process is asked.
      const more = await call(b.url, 'POST', IMAGES, { key, body: { prompt: '[hold] one more' } });
      expect([more.status, more.body.error_code]).to.deep.equal([429, 1005]);
      upstream.state.held = false;
      await Promise.all(ok.map((r) => completed(key, r.body.task_info.id)));
    } finally {
      upstream.state.held = false;
    }
    const after = await call(a.url, 'POST', IMAGES, { key, body: { prompt: 'after the slots were freed' } });
    expect(after.status, after.text).to.equal(202);
    await completed(key, after.body.task_info.id);
    await settled(tenantId);
    const wallet = await admin(b.url, 'GET', `/tenants/${tenantId}/wallet`);
    expect(wallet.held_milli).to.equal(0);
    expect(wallet.balance_milli).to.equal(100_000_000 - 5 * 34_000);
  });

  it('replays an Idempotency-Key from the other process: the same task, created once', async () => {
    const { key } = await tenantWithKey(a.url);
    const headers = { 'idempotency-key': 'cluster-idem-1' };
    const body = { prompt: 'idempotent on a cluster' };
    const first = await call(a.url, 'POST', IMAGES, { key, body, headers });
    expect(first.status, first.text).to.equal(202);
    const again = await call(b.url, 'POST', IMAGES, { key, body, headers });
    expect(again.status, again.text).to.equal(202);
    expect(again.headers.get('idempotent-replayed')).to.equal('true');
    expect(again.body.task_info.id).to.equal(first.body.task_info.id);
    const other = await call(b.url, 'POST', IMAGES, { key, body: { prompt: 'another body' }, headers });
    expect(other.status, other.text).to.equal(409);
    await completed(key, first.body.task_info.id);
    expect(upstream.submits.get(body.prompt)).to.equal(1);
  });

  it('spreads the keys over the three masters, each tenant\'s on one, and no command crossed slots', async () => {
    const clients = nodes.map((n) => new Redis({ host: '127.0.0.1', port: n.port, lazyConnect: true }));
    try {
      const keysOf = async (c: Redis) => {
        const out: string[] = [];
        let cursor = '0';
        do {
          const [next, keys] = await c.scan(cursor, 'COUNT', 1000);
          out.push(...keys);
          cursor = next;
        } while (cursor !== '0');
        return out;
      };
      const perNode = await Promise.all(clients.map(keysOf));
      for (const [i, c] of clients.entries()) {
        expect(await c.dbsize(), `keys on master ${nodes[i]!.port}`).to.be.greaterThan(0);
        expect(perNode[i]!.filter((k) => k.startsWith(`${PREFIX}:{task:`)).length, `tasks on master ${nodes[i]!.port}`).to.be.greaterThan(0);
      }
      // A tenant's state shares one slot, hence one master.
      const tags = new Map<string, Set<number>>();
      perNode.forEach((keys, i) => {
        for (const k of keys) {
          const tag = /^cl:\{(t:[^}]+)\}/.exec(k)?.[1];
          if (tag) tags.set(tag, (tags.get(tag) ?? new Set()).add(i));
        }
      });
      expect(tags.size).to.be.at.least(4);
      for (const [tag, on] of tags) expect(on.size, tag).to.equal(1);
      // BullMQ's keys (the webhook deliveries) share the `{cl:jobs}` tag: one master holds them all.
      expect(perNode.filter((keys) => keys.some((k) => k.startsWith(`{${PREFIX}:jobs}`)))).to.have.length(1);
      // The task timers' due set is one key; its jobs are `<queue>\n<id>\n<payload>`, and the
      // finished tasks' polls have left it (each job removed once done, none run twice: the
      // first test counted three polls per task).
      const holders = perNode.map((keys, i) => (keys.includes(`${PREFIX}:{jobs}:due`) ? i : -1)).filter((i) => i >= 0);
      expect(holders).to.have.length(1);
      const due = await clients[holders[0]!]!.zrange(`${PREFIX}:{jobs}:due`, '0', '-1');
      for (const m of due) expect(m.split('\n'), m).to.have.length(3);
      expect(due.filter((m) => finishedIds.some((id) => m.includes(id)))).to.deep.equal([]);
      expect(due.some((m) => m.startsWith('task.sweep\n')), 'the sweep chain').to.equal(true);
    } finally {
      for (const c of clients) c.disconnect();
    }
    // A job failed for a store that did not answer in store.command_timeout_ms (a starved 2-core
    // machine: 'Command timed out', then 'Connection is closed.' as the connection is reset) is
    // the fail-fast answer, and the job runs again; any other failed job, or a slot error, is not.
    const transient = /"message":"[^"]*: (Command timed out|Connection is closed\.)"/;
    for (const p of [a, b]) {
      const lines = p.output().split('\n');
      expect(lines.filter((l) => /CROSSSLOT|MOVED|Too many Cluster redirections/.test(l) || (l.includes('job failed') && !transient.test(l)))).to.deep.equal([]);
    }
  });

  // Last: it leaves the cluster without one of its masters.
  // Rates and spend before funds, strictly, in one STEPS run on the tenant's master (a Cluster
  // client here, as the gateway's): the cases of test/limits/admission-order.test.ts.
  let direct: Cluster | undefined;
  let prefixes = 0;
  strictAdmission({
    isRedis: true,
    get a() {
      return (direct ??= new Cluster(nodes.map((n) => ({ host: '127.0.0.1', port: n.port }))));
    },
    prefix: () => `strict${++prefixes}:`,
  });

  it('refuses at once with 503 / 4003, and is not ready, once a master is gone', async () => {
    // The strict cases' own client first: it would follow the master killed below.
    direct?.disconnect();
    const { key } = await tenantWithKey(a.url);
    const gone = nodes[2]!.proc;
    gone.kill('SIGKILL');
    await new Promise((r) => (gone.exitCode === null && gone.signalCode === null ? gone.once('exit', r) : r(undefined)));
    // Tasks land on every master: some creates need the one that is gone.
    const started = Date.now();
    const answers = await Promise.all(Array.from({ length: 30 }, (_, i) => call((i % 2 ? a : b).url, 'POST', IMAGES, { key, body: { prompt: `outage ${i}` } })));
    expect(Date.now() - started).to.be.below(4_000); // store.command_timeout_ms is 2 s
    const outcomes = answers.map((r) => (r.status === 202 ? 202 : `${r.status}/${r.body.error_code}`));
    expect(outcomes.filter((o) => o !== 202 && o !== '503/4003'), JSON.stringify(outcomes)).to.deep.equal([]);
    expect(outcomes).to.include('503/4003');
    for (const r of answers.filter((x) => x.status === 503)) expect(r.headers.get('retry-after')).to.equal('1');
    for (const p of [a, b]) await waitFor(async () => (await fetch(`${p.url}/readyz`)).status === 503, `/readyz 503 on ${p.url}`);
  });
});
