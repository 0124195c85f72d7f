// Upstream pools (issue 20, item 2) through real HTTP servers: a vendor's upstream as weighted
// members with a circuit breaker each. Submissions fail over before the provider accepted them
// (connect refusal, 503, 429, timeout) with one hold and one settlement per task and the same
// idempotency key on every member; polls go to the member that accepted the task; the breaker
// opens after N failures and comes back after its cool-down with one trial call; the chat proxy
// fails over before the first byte and never after; in Redis mode two gateways share breakers.
import { expect } from 'chai';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfigText } from '../../engine/load-config.ts';
import { LoadError } from '../../engine/config/yaml-source.ts';
import type { Gateway } from '../../engine/gateway.ts';
import { memberBreakerState } from '../../engine/metrics/metrics.ts';
import type { UpstreamPool } from '../../engine/upstream/pool.ts';
import { call, newTenant, ROOT, startTestGateway, STORE_MODE, waitForTask, type TestGatewayOptions } from '../helpers/gateway.ts';
import { freePort } from '../helpers/net.ts';
import { FakeUpstream, json } from '../helpers/upstream.ts';
import { waitFor } from '../webhooks/support/harness.ts';

const MODEL_D = '/vendors/provider_d/v1/model_d/generation';
const SUBMIT_D = '/api/v1/services/aigc/text2image/image-synthesis';
const SCALE = 0.01; // model D's safety net: 9 s; its polls every 30 ms; a member timeout of 100 s: 1 s
const IDEMPOTENCY = 'X-Idempotency-Key';

type Mode = 'ok' | '503' | '429' | 'hang' | 'stream-break';

/** A provider D and provider C (chat) upstream whose submissions and completions do what `mode` says. */
class Member {
  readonly up = new FakeUpstream();
  mode: Mode = 'ok';
  private seq = 0;
  /** Tasks whose polls answer RUNNING for ever (a prompt with "running"). */
  private readonly running = new Set<string>();
  readonly name: string;
  constructor(name: string) {
    this.name = name;
    this.up.on('POST', SUBMIT_D, (_req, res) => {
      if (this.fails(res)) return;
      const id = `${this.name}-${++this.seq}`;
      if (String(_req.body.input.prompt).includes('running')) this.running.add(id);
      json(res, 200, { request_id: `r-${id}`, output: { task_id: id, task_status: 'PENDING' } });
    });
    this.up.on('GET', /^\/api\/v1\/tasks\/[^/]+$/, (req, res) => {
      const id = req.path.split('/')[4]!;
      if (this.running.has(id)) return json(res, 200, { request_id: `r-${id}`, output: { task_id: id, task_status: 'RUNNING' } });
      json(res, 200, { request_id: `r-${id}`, output: { task_id: id, task_status: 'SUCCEEDED', results: [{ url: `https://example.com/${id}.png` }] }, usage: { image_count: 1 } });
    });
    this.up.on('POST', '/v1/chat/completions', (req, res) => {
      if (this.fails(res)) return;
      const usage = { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 };
      if (req.body.stream !== true) {
        return json(res, 200, { id: `chatcmpl-${this.name}`, object: 'chat.completion', model: req.body.model, choices: [{ index: 0, message: { role: 'assistant', content: this.name }, finish_reason: 'stop' }], usage });
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const chunk = (content: string) => `data: ${JSON.stringify({ id: `chatcmpl-${this.name}`, object: 'chat.completion.chunk', model: req.body.model, choices: [{ index: 0, delta: { content }, finish_reason: null }] })}\n\n`;
      res.write(chunk(this.name));
      if (this.mode === 'stream-break') {
        setTimeout(() => res.destroy(), 20);
        return;
      }
      res.end(`${chunk('!')}data: ${JSON.stringify({ id: `chatcmpl-${this.name}`, object: 'chat.completion.chunk', model: req.body.model, choices: [], usage })}\n\ndata: [DONE]\n\n`);
    });
  }

  /** True when the mode answered (or will never answer) in place of the provider. */
  private fails(res: ServerResponse): boolean {
    if (this.mode === '503') json(res, 503, { code: 'ServiceUnavailable', message: 'down' });
    else if (this.mode === '429') json(res, 429, { code: 'Throttling', message: 'slow down' });
    else if (this.mode !== 'hang') return false;
    return true;
  }

  submits(): { headers: Record<string, unknown>; body: any }[] {
    return this.up.seen.filter((s) => s.method === 'POST' && s.path === SUBMIT_D);
  }
  polls(upstreamId: string): number {
    return this.up.seen.filter((s) => s.method === 'GET' && s.path === `/api/v1/tasks/${upstreamId}`).length;
  }
  chats(): number {
    return this.up.seen.filter((s) => s.path === '/v1/chat/completions').length;
  }
  async start(): Promise<this> {
    await this.up.start();
    return this;
  }
}

/** provider_c and provider_d in a folder of their own; provider_d declares an idempotency header. */
function vendorsDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'pool-vendors-'));
  for (const v of ['provider_c', 'provider_d']) {
    cpSync(join(ROOT, 'vendors', `${v}.yaml`), join(dir, `${v}.yaml`));
    cpSync(join(ROOT, 'vendors', v), join(dir, v), { recursive: true });
  }
  const d = join(dir, 'provider_d.yaml');
  writeFileSync(d, readFileSync(d, 'utf8').replace('  timeout_ms: 30000\n', `  timeout_ms: 30000\n  submit_idempotency_header: ${IDEMPOTENCY}\n`));
  return dir;
}

type MemberSpec = { id: string; url: string; weight?: number };

function pools(members: MemberSpec[], breaker: { failures?: number; cooldown_ms?: number } = {}): TestGatewayOptions['upstreams'] {
  const of = (key: string) => ({
    members: members.map((m) => ({ id: m.id, base_url: m.url, credentials: { api_key: `${key}-${m.id}` }, weight: m.weight ?? 1, timeout_ms: 100_000 })),
    breaker,
  });
  return { provider_d: of('sk-d'), provider_c: of('sk-c') };
}

const poolOf = (gw: Gateway, vendor: string): UpstreamPool => gw.vendors.find((v) => v.vendor === vendor)!.pool;

async function ledgerOf(gw: Gateway, key: string): Promise<{ kind: string; ref: string }[]> {
  const res = await call(gw.url, 'GET', '/v1/ledger?limit=100', { key });
  return res.body.data;
}

/** One model D task to its end; with its stored record and the tenant's ledger once the hold is closed. */
async function runTask(gw: Gateway, prompt = 'a lighthouse') {
  const { key } = await newTenant(gw, { credits: 1000 });
  const created = await call(gw.url, 'POST', MODEL_D, { key, body: { prompt, n: 1 } });
  expect(created.status, created.text).to.equal(202);
  const id: string = created.body.task_info.id;
  const done = await waitForTask(gw.url, `${MODEL_D}/${id}`, key, ['completed', 'failed'], 15_000);
  const ledger = await waitFor(async () => {
    const l = await ledgerOf(gw, key);
    return l.some((e) => e.kind === 'settle' || e.kind === 'release') ? l : undefined;
  }, 5000, 'the hold closed');
  return { id, done, ledger, task: (await gw.tasks.get(id))! };
}

describe('upstream pool config', () => {
  const load = (upstreams: string) => loadConfigText(`sandbox: { enabled: false }\nvendors: { dir: vendors }\nupstreams:\n${upstreams}`, ROOT, { env: {} });
  const problems = (upstreams: string): string[] => {
    try {
      load(upstreams);
    } catch (err) {
      if (err instanceof LoadError) return err.problems.map((p) => `${p.pointer}: ${p.message}`);
      throw err;
    }
    return [];
  };

  it('members with weights (default 1) and the breaker\'s defaults; the single form stays valid', () => {
    const c = load('  provider_d:\n    members:\n      - { id: eu, base_url: "http://eu.example", credentials: { api_key: k1 }, weight: 3 }\n      - { id: us, base_url: "http://us.example", timeout_ms: 5000 }\n  provider_c: { base_url: "http://c.example" }');
    expect(c.upstreams.provider_d!.members!.map((m) => [m.id, m.weight])).to.deep.equal([['eu', 3], ['us', 1]]);
    expect(c.upstreams.provider_d!.breaker).to.deep.equal({ failures: 3, cooldown_ms: 30000 });
    expect(c.upstreams.provider_c!.base_url).to.equal('http://c.example');
  });

  it('refuses duplicate ids, weights not above 0, and both forms at once, at their positions', () => {
    expect(problems('  provider_d:\n    members:\n      - { id: a, base_url: "http://a.example" }\n      - { id: a, base_url: "http://b.example" }')).to.deep.equal(['/upstreams/provider_d/members/1/id: member id "a" is used twice']);
    expect(problems('  provider_d:\n    members:\n      - { id: a, base_url: "http://a.example", weight: 0 }').join()).to.contain('/upstreams/provider_d/members/0/weight');
    expect(problems('  provider_d:\n    base_url: "http://x.example"\n    members:\n      - { id: a, base_url: "http://a.example" }')).to.deep.equal(['/upstreams/provider_d/base_url: with members, each member has its own base_url']);
    expect(problems('  provider_d:\n    breaker: { failures: 0 }').join()).to.contain('/upstreams/provider_d/breaker/failures');
  });
});

describe(`upstream pools (${STORE_MODE})`, function () {
  this.timeout(60_000);
  let dir: string;
  let a: Member;
  let b: Member;

  before(async () => {
    dir = vendorsDir();
    a = await new Member('a').start();
    b = await new Member('b').start();
  });
  after(async () => {
    await a.up.close();
    await b.up.close();
    rmSync(dir, { recursive: true, force: true });
  });
  beforeEach(() => {
    a.mode = 'ok';
    b.mode = 'ok';
  });

  const start = (members: MemberSpec[], breaker: { failures?: number; cooldown_ms?: number } = {}, o: TestGatewayOptions = {}) =>
    startTestGateway({ sandbox: false, vendorsDir: dir, scale: SCALE, upstreams: pools(members, breaker), ...o });

  describe('submission failover', () => {
    let gw: Gateway;
    // The first member nearly always comes first; a breaker that never opens here.
    before(async () => (gw = await start([{ id: 'first', url: a.up.url, weight: 1_000_000 }, { id: 'second', url: b.up.url, weight: 0.000001 }], { failures: 1000 })));
    after(() => gw.close());

    for (const mode of ['503', '429', 'hang'] as const) {
      it(`the first member ${mode === 'hang' ? 'times out' : `answers ${mode}`}: the second takes the task; one hold, one settlement, one idempotency key`, async () => {
        a.mode = mode;
        const aBefore = a.submits().length;
        const bBefore = b.submits().length;
        const { id, done, ledger, task } = await runTask(gw);
        expect(done.body.task_info.status, done.text).to.equal('completed');
        expect(task.upstream_member).to.equal('second');
        expect(task.upstream_task_id).to.match(/^b-/);
        const tried = [...a.submits().slice(aBefore), ...b.submits().slice(bBefore)].filter((s) => s.headers[IDEMPOTENCY.toLowerCase()] === id);
        expect(tried.map((s) => s.headers.authorization)).to.deep.equal(['Bearer sk-d-first', 'Bearer sk-d-second']);
        const mine = ledger.filter((e) => e.ref === id).map((e) => e.kind).sort();
        expect(mine).to.deep.equal(['hold', 'settle']);
        // Its polls went to the member that accepted it, none to the other.
        expect(b.polls(task.upstream_task_id!)).to.be.greaterThan(0);
        expect(a.polls(task.upstream_task_id!)).to.equal(0);
      });
    }

    it('a client\'s cancel goes to the member that accepted the task, none to the other', async () => {
      a.mode = '503'; // the first refuses the submission, the second accepts it
      const { key } = await newTenant(gw, { credits: 1000 });
      const created = await call(gw.url, 'POST', MODEL_D, { key, body: { prompt: 'running for ever', n: 1 } });
      const id = created.body.task_info.id;
      const upstreamId = await waitFor(async () => (await gw.tasks.get(id))?.upstream_task_id, 5000, 'accepted');
      expect((await gw.tasks.get(id))!.upstream_member).to.equal('second');
      a.mode = 'ok';
      const cancelled = await call(gw.url, 'POST', `${MODEL_D}/${id}/cancel`, { key });
      expect([cancelled.status, cancelled.body.task_info.error.code]).to.deep.equal([200, 4009]);
      const cancelPath = `/api/v1/tasks/${upstreamId}/cancel`;
      await waitFor(async () => b.up.seen.some((s) => s.method === 'POST' && s.path === cancelPath), 5000, 'the upstream cancel');
      expect(a.up.seen.filter((s) => s.path === cancelPath)).to.have.length(0);
    });

    it('every member refuses: the task fails with the last answer, its hold released once', async () => {
      a.mode = '503';
      b.mode = '503';
      const { id, done, ledger } = await runTask(gw);
      expect(done.body.task_info.status).to.equal('failed');
      expect(done.body.task_info.error.code).to.be.within(3000, 3999);
      expect(ledger.filter((e) => e.ref === id).map((e) => e.kind).sort()).to.deep.equal(['hold', 'release']);
    });

    it('a member removed from config: the task\'s polls fail with 3001 naming it, after the poll error limit', async () => {
      const { key } = await newTenant(gw, { credits: 1000 });
      const created = await call(gw.url, 'POST', MODEL_D, { key, body: { prompt: 'running for ever', n: 1 } });
      const id = created.body.task_info.id;
      await waitFor(async () => (await gw.tasks.get(id))?.upstream_member, 5000, 'accepted');
      // As if the config had lost the member since: a task record naming a member not in the pool.
      await gw.tasks.transition(id, ['pending', 'processing'], { upstream_member: 'gone' });
      const done = await waitForTask(gw.url, `${MODEL_D}/${id}`, key, ['completed', 'failed'], 10_000);
      expect(done.body.task_info.status).to.equal('failed');
      expect(done.body.task_info.error.code).to.equal(3001);
      expect(done.body.task_info.error.detail).to.contain('"gone"');
      await waitFor(async () => (await ledgerOf(gw, key)).some((e) => e.ref === id && e.kind === 'release'), 5000, 'released');
    });
  });

  it('a refused connection (closed port) fails over to the next member', async () => {
    const closed = `http://127.0.0.1:${await freePort()}`;
    const gw = await start([{ id: 'dead', url: closed, weight: 1_000_000 }, { id: 'live', url: b.up.url, weight: 0.000001 }], { failures: 1000 });
    try {
      const { id, done, ledger, task } = await runTask(gw);
      expect(done.body.task_info.status).to.equal('completed');
      expect(task.upstream_member).to.equal('live');
      expect(ledger.filter((e) => e.ref === id).map((e) => e.kind).sort()).to.deep.equal(['hold', 'settle']);
    } finally {
      await gw.close();
    }
  });

  it('the breaker opens after N consecutive failures, and a trial call after the cool-down closes it', async () => {
    // cooldown_ms 100 s scaled: 1 s.
    const gw = await start([{ id: 'a', url: a.up.url }, { id: 'b', url: b.up.url }], { failures: 3, cooldown_ms: 100_000 });
    try {
      const pool = poolOf(gw, 'provider_d');
      a.mode = '503';
      const aStart = a.submits().length;
      for (let i = 0; i < 40 && a.submits().length - aStart < 3; i++) await runTask(gw);
      expect(a.submits().length - aStart).to.equal(3);
      expect((await pool.states()).a).to.equal('open');
      const gauge = (await memberBreakerState.get()).values.find((v) => v.labels.vendor === 'provider_d' && v.labels.member === 'a');
      expect(gauge?.value).to.equal(2);
      // Out: nothing goes to it while it is open.
      for (let i = 0; i < 6; i++) expect((await runTask(gw)).task.upstream_member).to.equal('b');
      expect(a.submits().length - aStart).to.equal(3);
      // Back after the cool-down: one trial call, which succeeds and closes it.
      a.mode = 'ok';
      await new Promise((r) => setTimeout(r, 1100));
      const trial = await runTask(gw);
      expect(trial.task.upstream_member).to.equal('a');
      expect(a.submits().length - aStart).to.equal(4);
      expect((await pool.states()).a).to.equal('closed');
    } finally {
      await gw.close();
    }
  });

  it('a failed trial call re-opens the breaker for another cool-down', async () => {
    const gw = await start([{ id: 'a', url: a.up.url }, { id: 'b', url: b.up.url }], { failures: 1, cooldown_ms: 100_000 });
    try {
      const pool = poolOf(gw, 'provider_d');
      a.mode = '503';
      const aStart = a.submits().length;
      for (let i = 0; i < 40 && a.submits().length === aStart; i++) await runTask(gw);
      expect((await pool.states()).a).to.equal('open');
      await new Promise((r) => setTimeout(r, 1100));
      expect((await pool.states()).a).to.equal('half_open');
      const trial = await runTask(gw); // the trial goes to a, fails, the task fails over to b
      expect(trial.task.upstream_member).to.equal('b');
      expect(a.submits().length - aStart).to.equal(2);
      expect((await pool.states()).a).to.equal('open');
    } finally {
      await gw.close();
    }
  });

  it('weights are honoured: 3:1 over 200 submissions', async () => {
    const gw = await start([{ id: 'a', url: a.up.url, weight: 3 }, { id: 'b', url: b.up.url, weight: 1 }]);
    try {
      const { key } = await newTenant(gw, { credits: 100_000 });
      const ids: string[] = [];
      for (let i = 0; i < 200; i += 20) {
        const batch = await Promise.all(Array.from({ length: 20 }, () => call(gw.url, 'POST', MODEL_D, { key, body: { prompt: 'weights', n: 1 } })));
        ids.push(...batch.map((r) => r.body.task_info.id as string));
      }
      const members = await waitFor(async () => {
        const tasks = await Promise.all(ids.map((id) => gw.tasks.get(id)));
        return tasks.every((t) => t?.upstream_member) ? tasks.map((t) => t!.upstream_member!) : undefined;
      }, 20_000, 'every task accepted');
      const onA = members.filter((m) => m === 'a').length;
      // Expected 150 (sd about 6): within five of them.
      expect(onA).to.be.within(120, 180);
    } finally {
      await gw.close();
    }
  });

  describe('chat (sync and stream proxy)', () => {
    let gw: Gateway;
    let key: string;
    before(async () => {
      gw = await start([{ id: 'first', url: a.up.url, weight: 1_000_000 }, { id: 'second', url: b.up.url, weight: 0.000001 }], { failures: 1000 });
      key = (await newTenant(gw, { credits: 1000 })).key;
    });
    after(() => gw.close());
    const chat = (stream: boolean) => call(gw.url, 'POST', '/v1/chat/completions', { key, body: { model: 'gpt-4o-mini', stream, messages: [{ role: 'user', content: 'hi' }] } });

    for (const mode of ['503', '429', 'hang'] as const) {
      it(`the first member ${mode === 'hang' ? 'gives no answer head in time' : `answers ${mode}`}: the second answers, sync and stream`, async () => {
        a.mode = mode;
        const sync = await chat(false);
        expect(sync.status, sync.text).to.equal(200);
        expect(sync.body.choices[0].message.content).to.equal('b');
        const streamed = await chat(true);
        expect(streamed.status, streamed.text).to.equal(200);
        expect(streamed.text).to.contain('"content":"b"').and.contain('[DONE]');
      });
    }

    it('a refused connection fails over too', async () => {
      const closed = `http://127.0.0.1:${await freePort()}`;
      const g = await start([{ id: 'dead', url: closed, weight: 1_000_000 }, { id: 'live', url: b.up.url, weight: 0.000001 }], { failures: 1000 });
      try {
        const k = (await newTenant(g, { credits: 1000 })).key;
        const res = await call(g.url, 'POST', '/v1/chat/completions', { key: k, body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] } });
        expect(res.status, res.text).to.equal(200);
        expect(res.body.choices[0].message.content).to.equal('b');
      } finally {
        await g.close();
      }
    });

    it('no failover once a stream has started: the client sees the broken stream', async () => {
      a.mode = 'stream-break';
      const bBefore = b.chats();
      const res = await chat(true);
      expect(res.status).to.equal(200);
      expect(res.text).to.contain('"content":"a"').and.contain('"error"').and.not.contain('[DONE]');
      expect(b.chats()).to.equal(bBefore);
    });
  });

  it('the sandbox plays [sandbox:member-down]: the first member answers 503, the second takes the task', async () => {
    const gw = await startTestGateway({
      sandbox: true,
      only: ['provider_b'],
      scale: SCALE,
      upstreams: { provider_b: { members: [{ id: 'one', base_url: 'http://unused.invalid', weight: 1_000_000 }, { id: 'two', base_url: 'http://unused.invalid', weight: 0.000001 }] } },
    });
    try {
      const { key } = await newTenant(gw, { credits: 1000 });
      const path = '/vendors/provider_b/v1/tob/diffusion';
      const created = await call(gw.url, 'POST', path, { key, body: { prompt: 'a lighthouse [sandbox:member-down]' } });
      expect(created.status, created.text).to.equal(202);
      const id = created.body.task_info.id;
      const done = await waitForTask(gw.url, `${path}/${id}`, key, ['completed', 'failed'], 15_000);
      expect(done.body.task_info.status, done.text).to.equal('completed');
      expect((await gw.tasks.get(id))!.upstream_member).to.equal('two');
    } finally {
      await gw.close();
    }
  });

  (STORE_MODE === 'redis' ? it : it.skip)('redis: two gateways, one member killed mid-load: no task lost, none charged twice, later tasks on the live member', async () => {
    const store = `{ kind: redis, redis_url: "${process.env.GATEWAY_TEST_REDIS_URL}", key_prefix: "t${process.pid}kill${Date.now()}" }`;
    const doomed = await new Member('x').start();
    const live = await new Member('y').start();
    const members = [{ id: 'x', url: doomed.up.url }, { id: 'y', url: live.up.url }];
    const gws = [await start(members, { failures: 3 }, { store }), await start(members, { failures: 3 }, { store })];
    try {
      const { key } = await newTenant(gws[0]!, { credits: 100_000 });
      const create = (i: number) => call(gws[i % 2]!.url, 'POST', MODEL_D, { key, body: { prompt: `load ${i}`, n: 1 } });
      const before = await Promise.all(Array.from({ length: 20 }, (_, i) => create(i)));
      await doomed.up.close(); // refused connections from now on
      const after = await Promise.all(Array.from({ length: 20 }, (_, i) => create(i)));
      const ids = [...before, ...after].map((r) => {
        expect(r.status, r.text).to.equal(202);
        return r.body.task_info.id as string;
      });
      const tasks = await waitFor(async () => {
        const all = await Promise.all(ids.map((id) => gws[0]!.tasks.get(id)));
        return all.every((t) => t && (t.status === 'completed' || t.status === 'failed') && t.finalized) ? all.map((t) => t!) : undefined;
      }, 20_000, 'every task finished');
      // Submitted after the kill: all on the live member, all completed.
      for (const t of tasks.slice(20)) {
        expect(t.upstream_member).to.equal('y');
        expect(t.status).to.equal('completed');
      }
      // One hold and one settlement (or release) per task, across both gateways.
      const ledger = (await call(gws[0]!.url, 'GET', '/v1/ledger?limit=200', { key })).body.data as { kind: string; ref: string }[];
      for (const t of tasks) {
        const kinds = ledger.filter((e) => e.ref === t.id).map((e) => e.kind).sort();
        expect(kinds, t.id).to.deep.equal(t.status === 'completed' ? ['hold', 'settle'] : ['hold', 'release']);
      }
    } finally {
      for (const g of gws) await g.close();
      await live.up.close();
    }
  });

  (STORE_MODE === 'redis' ? it : it.skip)('redis: two gateways share the breakers', async () => {
    const store = `{ kind: redis, redis_url: "${process.env.GATEWAY_TEST_REDIS_URL}", key_prefix: "t${process.pid}pools${Date.now()}" }`;
    const members = [{ id: 'a', url: a.up.url }, { id: 'b', url: b.up.url }];
    const gw1 = await start(members, { failures: 3, cooldown_ms: 1_000_000 }, { store });
    const gw2 = await start(members, { failures: 3, cooldown_ms: 1_000_000 }, { store });
    try {
      a.mode = '503';
      const aStart = a.submits().length;
      for (let i = 0; i < 40 && a.submits().length - aStart < 3; i++) await runTask(gw1);
      expect(a.submits().length - aStart).to.equal(3);
      // gw2 never saw "a" fail; it reads the shared breaker (cached for at most 10 ms here).
      await new Promise((r) => setTimeout(r, 50));
      expect((await poolOf(gw2, 'provider_d').states()).a).to.equal('open');
      for (let i = 0; i < 5; i++) expect((await runTask(gw2)).task.upstream_member).to.equal('b');
      expect(a.submits().length - aStart).to.equal(3);
    } finally {
      await gw1.close();
      await gw2.close();
    }
  });
});
