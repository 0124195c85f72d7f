// Task cancellation (issue 20, item 1), through the real HTTP surface against a real fixture
// upstream, on the run's store (memory, or Redis with GATEWAY_TEST_STORE=redis):
// POST <path>/{task_id}/cancel fails a pending or processing task with 4009, releases its whole
// hold, sends task.failed and the provider's cancel; a finished task answers 409 with its state;
// a cancel racing a completion ends one way only (the repeated race below); the sandbox's
// [sandbox:no-cancel] plays a provider that refuses to stop a task; a status route cancels too.
import { expect } from 'chai';
import { appendFileSync, cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import type { ServerResponse } from 'node:http';
import type { Gateway } from '../../engine/gateway.ts';
import { createLogger } from '../../engine/log/logger.ts';
import { eventId } from '../../engine/tasks/ending.ts';
import { call, newTenant, ROOT, startTestGateway, waitForFinalized, waitForTask } from '../helpers/gateway.ts';
import { checkedTenants } from '../helpers/tenants.ts';
import { FakeUpstream, json } from '../helpers/upstream.ts';
import { waitFor } from '../helpers/wait.ts';
import { testPki } from '../webhooks/support/pki.ts';
import { Receiver } from '../webhooks/support/receiver.ts';
import { metricValue } from '../helpers/metrics.ts';

const D = '/vendors/provider_d/v1/model_d/generation'; // declares POST /api/v1/tasks/{id}/cancel upstream
const IMAGES_B = '/vendors/provider_b/v1/tob/diffusion'; // another vendor's route (its own scope)


/** The upstream's state of one task, as the fake provider plays it. */
interface UpTask {
  status: 'PENDING' | 'RUNNING' | 'SUCCEEDED' | 'FAILED' | 'CANCELED';
  /** Set by the race: the next poll is held until `release`, then answers SUCCEEDED. */
  hold?: { arrived: () => void; release: Promise<void> };
}

describe(`task cancellation (${process.env.GATEWAY_TEST_STORE === 'redis' ? 'redis' : 'memory'} store)`, function () {
  this.timeout(60_000);
  let up: FakeUpstream;
  let gw: Gateway;
  let rx: Receiver;
  const upTasks = new Map<string, UpTask>();
  let seq = 0;
  const tenant = checkedTenants(() => gw);

  before(async () => {
    // The prompt says how the provider plays the task: "queue" stays PENDING, "done" succeeds at
    // once, "fail" fails, "slow-submit" answers its submission only after 300 ms; anything else runs.
    up = new FakeUpstream();
    up.on('POST', '/api/v1/services/aigc/text2image/image-synthesis', async (req, res) => {
      const id = `d-${++seq}`;
      const prompt = String(req.body.input.prompt);
      upTasks.set(id, { status: prompt.includes('queue') ? 'PENDING' : prompt.includes('done') ? 'SUCCEEDED' : prompt.includes('fail') ? 'FAILED' : 'RUNNING' });
      if (prompt.includes('slow-submit')) await new Promise((r) => setTimeout(r, 300));
      json(res, 200, { request_id: `r-${id}`, output: { task_id: id, task_status: 'PENDING' } });
    });
    up.on('GET', /^\/api\/v1\/tasks\/[^/]+$/, async (req, res) => {
      const id = req.path.split('/')[4]!;
      const t = upTasks.get(id);
      if (!t) return json(res, 404, { code: 'NotFound', message: 'no such task' });
      const hold = t.hold;
      if (hold) {
        t.hold = undefined;
        hold.arrived();
        await hold.release;
        t.status = 'SUCCEEDED';
      }
      answerPoll(res, id, t.status);
    });
    up.on('POST', /^\/api\/v1\/tasks\/[^/]+\/cancel$/, (req, res) => {
      const t = upTasks.get(req.path.split('/')[4]!);
      if (!t) return json(res, 404, { code: 'NotFound', message: 'no such task' });
      t.status = 'CANCELED';
      json(res, 200, { request_id: 'r-cancel' });
    });
    await up.start();
    rx = await Receiver.start();
    gw = await startTestGateway({
      sandbox: false,
      only: ['provider_b', 'provider_d'],
      // Polls every 30 ms and model D's safety net at 9 s: room to cancel a running task.
      scale: 0.01,
      upstreams: {
        provider_d: { base_url: up.url, credentials: { api_key: 'sk-d-upstream' }, timeout_ms: 1_000_000 },
        provider_b: { base_url: up.url, credentials: { api_key: 'mj-upstream' }, timeout_ms: 1_000_000 },
      },
      yaml: `webhooks: { allow_private_cidrs: ["127.0.0.1/32"], ca_pem: ${JSON.stringify([testPki().caPem])} }`,
    });
  });
  after(async () => {
    await gw?.close();
    await up?.close();
    await rx?.close();
  });
  function answerPoll(res: ServerResponse, id: string, status: UpTask['status']): void {
    const output: Record<string, unknown> = { task_id: id, task_status: status };
    if (status === 'SUCCEEDED') output.results = [0, 1].map((i) => ({ url: `https://results.example/${id}/${i}.png` }));
    if (status === 'FAILED') Object.assign(output, { code: 'InternalError', message: 'the model failed' });
    json(res, 200, { request_id: `r-${id}`, output });
  }

  /** Create a model D task and wait until the provider has it and the gateway shows `status`. */
  async function started(key: string, prompt: string, status: 'pending' | 'processing' | 'completed' | 'failed') {
    const created = await call(gw.url, 'POST', D, { key, body: { prompt, n: 2 } });
    expect(created.status, created.text).to.equal(202);
    const id: string = created.body.task_info.id;
    await waitForTask(gw.url, `${D}/${id}`, key, [status]);
    const upstreamId = await waitFor(async () => (await gw.tasks.get(id))?.upstream_task_id, 5000, 'the upstream task id');
    return { id, upstreamId };
  }

  const cancel = (key: string, id: string, path = D) => call(gw.url, 'POST', `${path}/${id}/cancel`, { key });
  const upstreamCancels = (upstreamId: string) => up.seen.filter((s) => s.method === 'POST' && s.path === `/api/v1/tasks/${upstreamId}/cancel`);
  const ledgerOf = async (tenantId: string, id: string) => (await gw.billing.listLedger(tenantId, { limit: 200 })).entries.filter((e) => e.ref === id).sort((a, b) => a.seq - b.seq).map((e) => e.kind);
  const finalized = (id: string) => waitForFinalized(gw, id);
  const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

  it('a processing task: 200 with the task failed (4009), hold released in full, the provider\'s cancel called once', async () => {
    const { tenant: t, key } = await tenant();
    const { id, upstreamId } = await started(key, 'a fox that runs', 'processing');
    expect((await gw.billing.getWallet(t.id)).held).to.be.greaterThan(0);
    const r = await cancel(key, id);
    expect(r.status, r.text).to.equal(200);
    expect(r.body.task_info).to.include({ id, status: 'failed' });
    expect(r.body.task_info.error).to.deep.equal({ code: 4009, title: 'Task Cancelled', detail: 'The task was cancelled by the client while processing; it is not billed.' });
    // GET answers the same body from now on.
    expect((await call(gw.url, 'GET', `${D}/${id}`, { key })).body).to.deep.equal(r.body);
    const w = await gw.billing.getWallet(t.id);
    expect([w.balance, w.held]).to.deep.equal([1_000_000, 0]);
    expect(await ledgerOf(t.id, id)).to.deep.equal(['hold', 'release']);
    await waitFor(() => upstreamCancels(upstreamId).length > 0, 5000, 'the upstream cancel');
    await pause(100); // room for a (wrong) second cancel or a late poll moving the task
    expect(upstreamCancels(upstreamId)).to.have.length(1);
    expect(upstreamCancels(upstreamId)[0]!.headers.authorization).to.equal('Bearer sk-d-upstream');
    expect((await gw.tasks.get(id))!.error!.code).to.equal(4009);
  });

  it('a pending task (the provider has it queued): 200, failed 4009 naming the state, one upstream cancel', async () => {
    const { tenant: t, key } = await tenant();
    const { id, upstreamId } = await started(key, 'a fox in the queue', 'pending');
    const r = await cancel(key, id);
    expect(r.status, r.text).to.equal(200);
    expect(r.body.task_info.status).to.equal('failed');
    expect(r.body.task_info.error.code).to.equal(4009);
    expect(r.body.task_info.error.detail).to.contain('while pending');
    expect(await ledgerOf(t.id, id)).to.deep.equal(['hold', 'release']);
    await waitFor(() => upstreamCancels(upstreamId).length > 0, 5000, 'the upstream cancel');
    await pause(100);
    expect(upstreamCancels(upstreamId)).to.have.length(1);
  });

  it('a task cancelled while its submission is in flight: the provider is asked to stop it once it answers, and it is never polled', async () => {
    const { tenant: t, key } = await tenant();
    const created = await call(gw.url, 'POST', D, { key, body: { prompt: 'a fox, slow-submit' } });
    const id: string = created.body.task_info.id;
    await waitFor(() => up.seen.some((s) => s.body?.input?.prompt === 'a fox, slow-submit'), 5000, 'the submission sent');
    const r = await cancel(key, id);
    expect(r.status, r.text).to.equal(200);
    expect(r.body.task_info.error.code).to.equal(4009);
    expect(await ledgerOf(t.id, id)).to.deep.equal(['hold', 'release']);
    const upstreamId = `d-${seq}`;
    await waitFor(() => upstreamCancels(upstreamId).length > 0, 5000, 'the upstream cancel after the submission answered');
    await pause(100);
    expect(upstreamCancels(upstreamId)).to.have.length(1);
    expect(up.seen.filter((s) => s.method === 'GET' && s.path === `/api/v1/tasks/${upstreamId}`)).to.have.length(0);
    expect((await gw.tasks.get(id))!.upstream_task_id).to.equal(undefined);
  });

  it('a completed task: 409 / 2000 naming the state, with its task_info; still billed once', async () => {
    const { tenant: t, key } = await tenant();
    const { id, upstreamId } = await started(key, 'a fox, done', 'completed');
    await finalized(id);
    const r = await cancel(key, id);
    expect(r.status, r.text).to.equal(409);
    expect(r.headers.get('content-type')).to.equal('application/problem+json');
    expect(r.body).to.include({ status: 409, error_code: 2000, title: 'Conflict' });
    expect(r.body.detail).to.equal(`Task ${id} is already completed; only a pending or processing task can be cancelled.`);
    expect(r.body.task_info).to.include({ id, status: 'completed' });
    expect(await ledgerOf(t.id, id)).to.deep.equal(['hold', 'settle']);
    expect(upstreamCancels(upstreamId)).to.have.length(0);
    expect((await call(gw.url, 'GET', `${D}/${id}`, { key })).body.task_info.status).to.equal('completed');
  });

  it('a failed task: 409 naming the state and its error; nothing changes', async () => {
    const { tenant: t, key } = await tenant();
    const { id, upstreamId } = await started(key, 'a fox that will fail', 'failed');
    await finalized(id);
    const r = await cancel(key, id);
    expect(r.status, r.text).to.equal(409);
    expect(r.body.detail).to.equal(`Task ${id} is already failed (3005 Upstream Service Execution Failed); only a pending or processing task can be cancelled.`);
    expect(r.body.task_info.error.code).to.equal(3005);
    expect(await ledgerOf(t.id, id)).to.deep.equal(['hold', 'release']);
    expect(upstreamCancels(upstreamId)).to.have.length(0);
  });

  it('a second cancel of a cancelled task: 409, whose task_info shows the 4009 of the first; one release, one upstream cancel', async () => {
    const { tenant: t, key } = await tenant();
    const { id, upstreamId } = await started(key, 'a fox that runs twice', 'processing');
    expect((await cancel(key, id)).status).to.equal(200);
    const again = await cancel(key, id);
    expect(again.status, again.text).to.equal(409);
    expect(again.body.detail).to.equal(`Task ${id} is already failed (4009 Task Cancelled); only a pending or processing task can be cancelled.`);
    expect(again.body.task_info.error.code).to.equal(4009);
    expect(await ledgerOf(t.id, id)).to.deep.equal(['hold', 'release']);
    await waitFor(() => upstreamCancels(upstreamId).length > 0, 5000, 'the upstream cancel');
    await pause(100);
    expect(upstreamCancels(upstreamId)).to.have.length(1);
  });

  it('unknown, malformed, another tenant\'s or another route\'s task: answered as GET answers them', async () => {
    const { key } = await tenant();
    const { key: other } = await tenant();
    const { id } = await started(key, 'a fox that runs, not yours', 'processing');
    const unknown = await cancel(key, '0b1e2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d');
    expect([unknown.status, unknown.body.error_code]).to.deep.equal([404, 2005]);
    const foreign = await cancel(other, id);
    expect([foreign.status, foreign.body.error_code, foreign.body.detail]).to.deep.equal([404, 2005, `No task ${id}.`]);
    const elsewhere = await cancel(key, id, IMAGES_B);
    expect([elsewhere.status, elsewhere.body.error_code]).to.deep.equal([404, 2005]);
    const malformed = await cancel(key, 'not-a-uuid');
    expect([malformed.status, malformed.body.error_code]).to.deep.equal([400, 2001]);
    expect((await call(gw.url, 'POST', `${D}/${id}/cancel`)).status).to.equal(401);
    // The route answers POST only; the task path itself still answers GET only.
    const get = await call(gw.url, 'GET', `${D}/${id}/cancel`, { key });
    expect([get.status, get.headers.get('allow')]).to.deep.equal([405, 'POST']);
    expect((await call(gw.url, 'GET', `${D}/${id}`, { key })).body.task_info.status).to.equal('processing');
    expect((await cancel(key, id)).status).to.equal(200);
  });

  it('needs <vendor>:create: a read-only key gets 403 / 1002 and the task runs on', async () => {
    const { tenant: t, key } = await tenant();
    const { key: readOnly } = await gw.tenants.issueKey(t.id, { scopes: ['provider_d:read'] });
    const { key: otherVendor } = await gw.tenants.issueKey(t.id, { scopes: ['provider_b:create', 'provider_d:read'] });
    const { key: creator } = await gw.tenants.issueKey(t.id, { scopes: ['provider_d:create'] });
    const { id } = await started(key, 'a fox that runs, scoped', 'processing');
    for (const k of [readOnly, otherVendor]) {
      const r = await cancel(k, id);
      expect([r.status, r.body.error_code, r.body.detail]).to.deep.equal([403, 1002, 'This API key lacks the scope provider_d:create.']);
    }
    expect((await call(gw.url, 'GET', `${D}/${id}`, { key: readOnly })).body.task_info.status).to.equal('processing');
    expect((await cancel(creator, id)).status).to.equal(200);
  });

  it('task.failed carries the cancel error, and gateway_tasks_finished_total{code="4009"} moves by one', async () => {
    const { tenant: t, key } = await tenant();
    const ep = await call(gw.url, 'POST', '/v1/webhooks/endpoints', { key, body: { url: rx.url('/cancel'), events: ['task.failed'] } });
    expect(ep.status, ep.text).to.equal(201);
    const { id } = await started(key, 'a fox that runs, watched', 'processing');
    const labels = { vendor: 'provider_d', route: 'provider_d/image_generation', outcome: 'failed', code: '4009' };
    const before = metricValue(await (await fetch(gw.metricsUrl!)).text(), 'gateway_tasks_finished_total', labels);
    const r = await cancel(key, id);
    expect(r.status).to.equal(200);
    const after = metricValue(await (await fetch(gw.metricsUrl!)).text(), 'gateway_tasks_finished_total', labels);
    expect(after - before).to.equal(1);
    const hook = await waitFor(() => rx.requests.find((q) => q.path === '/cancel'), 10_000, 'the task.failed delivery');
    const event = JSON.parse(hook.body.toString('utf8'));
    expect(event).to.include({ id: eventId(id, 'task.failed'), type: 'task.failed' });
    expect(event.data).to.deep.equal({ vendor: 'provider_d', model_name: event.data.model_name, payload: { task_info: r.body.task_info } });
    expect(event.data.payload.task_info.error).to.include({ code: 4009, title: 'Task Cancelled' });
    expect(await ledgerOf(t.id, id)).to.deep.equal(['hold', 'release']);
  });

  it('a cancel racing the completion, 50 times: each task ends one way only (completed and settled, or cancelled and released)', async function () {
    const outcomes = { cancelled: 0, completed: 0 };
    for (let round = 0; round < 50; round++) {
      const { tenant: t, key } = await tenant();
      const { id, upstreamId } = await started(key, `a fox that races ${round}`, 'processing');
      // The next poll is held at the provider; it answers SUCCEEDED as the cancel goes out.
      let arrived!: () => void;
      let release!: () => void;
      const polled = new Promise<void>((r) => (arrived = r));
      upTasks.get(upstreamId)!.hold = { arrived, release: new Promise<void>((r) => (release = r)) };
      await polled;
      // Which goes first, and by how much (the poll's answer up to 2 ms first, or the cancel up
      // to 4 ms first: it has more to do before its transition), varies by round.
      const lead = ((round * 7) % 13) / 2 - 2;
      let answer: Promise<Awaited<ReturnType<typeof cancel>>>;
      if (lead < 0) {
        release();
        await pause(-lead);
        answer = cancel(key, id);
      } else {
        answer = cancel(key, id);
        await pause(lead);
        release();
      }
      const r = await answer;
      await finalized(id);
      const task = (await gw.tasks.get(id))!;
      const kinds = await ledgerOf(t.id, id);
      if (r.status === 200) {
        outcomes.cancelled++;
        expect([task.status, task.error?.code, r.body.task_info.error.code], `round ${round}`).to.deep.equal(['failed', 4009, 4009]);
        expect(kinds, `round ${round}`).to.deep.equal(['hold', 'release']);
        await waitFor(() => upstreamCancels(upstreamId).length > 0, 5000, 'the upstream cancel');
      } else {
        outcomes.completed++;
        expect(r.status, `round ${round}: ${r.text}`).to.equal(409);
        expect([task.status, r.body.task_info.status], `round ${round}`).to.deep.equal(['completed', 'completed']);
        expect(kinds, `round ${round}`).to.deep.equal(['hold', 'settle']);
        expect(upstreamCancels(upstreamId), `round ${round}`).to.have.length(0);
      }
      const w = await gw.billing.getWallet(t.id);
      expect(w.held, `round ${round}`).to.equal(0);
      expect(w.balance, `round ${round}`).to.equal(task.status === 'completed' ? 1_000_000 - task.charge! : 1_000_000);
    }
    expect(outcomes.cancelled + outcomes.completed).to.equal(50);
    // Both ways were really raced (else the rounds proved nothing about the race).
    expect(outcomes.cancelled, JSON.stringify(outcomes)).to.be.greaterThan(0);
    expect(outcomes.completed, JSON.stringify(outcomes)).to.be.greaterThan(0);
    this.test!.title += ` [cancelled ${outcomes.cancelled}, completed ${outcomes.completed}]`;
  });

  describe('the sandbox', () => {
    let sandboxed: Gateway;
    const lines: Record<string, unknown>[] = [];
    before(async () => {
      const sink = new Writable({
        write(chunk, _enc, done) {
          for (const l of String(chunk).split('\n')) if (l) lines.push(JSON.parse(l));
          done();
        },
      });
      sandboxed = await startTestGateway({ only: ['provider_d'], scale: 0.01, logger: createLogger('info', sink) });
    });
    after(() => sandboxed?.close());

    /** A sandbox task that runs until cancelled; returns its id, the key and its upstream poll URL. */
    async function running(prompt: string) {
      const { tenant: t, key } = await newTenant(sandboxed, { credits: 1000 });
      const created = await call(sandboxed.url, 'POST', D, { key, body: { prompt } });
      const id: string = created.body.task_info.id;
      await waitForTask(sandboxed.url, `${D}/${id}`, key, ['processing']);
      const upstreamId = (await sandboxed.tasks.get(id))!.upstream_task_id!;
      return { tenantId: t.id, key, id, upstreamId, upstreamPoll: `${sandboxed.sandbox!.urlFor('provider_d')}/api/v1/tasks/${upstreamId}` };
    }

    it('cancels the simulated upstream task too: it then reads CANCELED', async () => {
      const { key, id, upstreamPoll } = await running('a fox [sandbox:hang]');
      const r = await call(sandboxed.url, 'POST', `${D}/${id}/cancel`, { key });
      expect([r.status, r.body.task_info.error.code]).to.deep.equal([200, 4009]);
      await waitFor(async () => (await (await fetch(upstreamPoll)).json()).output.task_status === 'CANCELED', 5000, 'the sandbox task cancelled');
    });

    it('[sandbox:no-cancel]: the upstream refuses, the refusal is logged, and the task is still cancelled and released here', async () => {
      const { tenantId, key, id, upstreamId, upstreamPoll } = await running('a fox [sandbox:hang] [sandbox:no-cancel]');
      const r = await call(sandboxed.url, 'POST', `${D}/${id}/cancel`, { key });
      expect([r.status, r.body.task_info.status, r.body.task_info.error.code]).to.deep.equal([200, 'failed', 4009]);
      const refused = await waitFor(() => lines.find((l) => l.upstream_task_id === upstreamId && l.msg === 'the provider refused to cancel the task'), 5000, 'the refusal logged');
      expect(refused).to.include({ task_id: id, http_status: 409, reason: 'cancelled by the client' });
      expect((await (await fetch(upstreamPoll)).json()).output.task_status).to.equal('RUNNING');
      const w = await sandboxed.billing.getWallet(tenantId);
      expect([w.balance, w.held]).to.deep.equal([1_000_000, 0]);
      expect((await call(sandboxed.url, 'GET', `${D}/${id}`, { key })).body.task_info.error.code).to.equal(4009);
    });

    it('a status route (kind: status) cancels the tasks it reads, at its own path + /cancel', async () => {
      // provider_d as shipped, plus a status route reading model D's tasks.
      const dir = mkdtempSync(join(tmpdir(), 'gw-cancel-'));
      cpSync(join(ROOT, 'vendors/provider_d.yaml'), join(dir, 'provider_d.yaml'));
      cpSync(join(ROOT, 'vendors/provider_d'), join(dir, 'provider_d'), { recursive: true });
      appendFileSync(join(dir, 'provider_d.yaml'), '\n  - id: task_status\n    kind: status\n    method: GET\n    path: /v1/tasks\n    tasks_of: [image_generation]\n');
      const withStatus = await startTestGateway({ vendorsDir: dir, scale: 0.01 });
      try {
        const { key } = await newTenant(withStatus, { credits: 1000 });
        const created = await call(withStatus.url, 'POST', D, { key, body: { prompt: 'a fox [sandbox:hang]' } });
        const id: string = created.body.task_info.id;
        await waitForTask(withStatus.url, `/vendors/provider_d/v1/tasks/${id}`, key, ['processing']);
        const r = await call(withStatus.url, 'POST', `/vendors/provider_d/v1/tasks/${id}/cancel`, { key });
        expect([r.status, r.body.task_info.status, r.body.task_info.error?.code], r.text).to.deep.equal([200, 'failed', 4009]);
        expect((await call(withStatus.url, 'POST', `${D}/${id}/cancel`, { key })).status).to.equal(409);
      } finally {
        await withStatus.close();
        rmSync(dir, { recursive: true, force: true });
      }
    });
  });
});
