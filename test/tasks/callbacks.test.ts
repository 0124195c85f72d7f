// Push callbacks (issue 20, item 3), through the real HTTP surface against a real fixture
// upstream, on the run's store (memory, or Redis with GATEWAY_TEST_STORE=redis). No shipped
// vendor documents a completion callback, so model D's descriptor is copied with
// `upstream.callback` added (the callback URL in parameters.callback_url, the pushed body shaped
// as its poll answer). With server.public_base_url set the gateway sends
// <public_base_url>/callbacks/<task_id>/<token> and accepts the push at once (billed once);
// a bad token and an unknown task get the same 404; a replay after completion is ignored; a push
// racing a poll settles once; polls go on at ten times the interval as the safety net; without
// public_base_url nothing changes (no URL sent, no route). The sandbox pushes too.
import { expect } from 'chai';
import { rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Gateway } from '../../engine/gateway.ts';
import { call, newTenant, startTestGateway, waitForFinalized, waitForTask } from '../helpers/gateway.ts';
import { checkedTenants } from '../helpers/tenants.ts';
import { FakeUpstream, json } from '../helpers/upstream.ts';
import { waitFor } from '../helpers/wait.ts';
import { vendorsWithCallback } from './callback-vendor.ts';

const D = '/vendors/provider_d/v1/model_d/generation';
const PUBLIC = 'https://gw.example.com';

interface UpTask {
  status: 'PENDING' | 'RUNNING' | 'SUCCEEDED' | 'FAILED';
  callbackUrl?: string;
}

const succeeded = (id: string) => ({ request_id: `r-${id}`, output: { task_id: id, task_status: 'SUCCEEDED', results: [{ url: `https://results.example/${id}/0.png` }] } });

describe(`push callbacks (${process.env.GATEWAY_TEST_STORE === 'redis' ? 'redis' : 'memory'} store)`, function () {
  this.timeout(60_000);
  let up: FakeUpstream;
  let gw: Gateway;
  let dir: string;
  const upTasks = new Map<string, UpTask>();
  let seq = 0;
  const tenant = checkedTenants(() => gw);

  before(async () => {
    dir = vendorsWithCallback();
    up = new FakeUpstream();
    up.on('POST', '/api/v1/services/aigc/text2image/image-synthesis', (req, res) => {
      const id = `cb-${++seq}`;
      upTasks.set(id, { status: 'RUNNING', callbackUrl: req.body.parameters?.callback_url });
      json(res, 200, { request_id: `r-${id}`, output: { task_id: id, task_status: 'PENDING' } });
    });
    up.on('GET', /^\/api\/v1\/tasks\/[^/]+$/, (req, res) => {
      const id = req.path.split('/')[4]!;
      const t = upTasks.get(id);
      if (!t) return json(res, 404, { code: 'NotFound', message: 'no such task' });
      json(res, 200, t.status === 'SUCCEEDED' ? succeeded(id) : { request_id: `r-${id}`, output: { task_id: id, task_status: t.status } });
    });
    await up.start();
    gw = await startTestGateway({
      sandbox: false,
      vendorsDir: dir,
      only: ['provider_d'],
      // Polls every 30 ms (300 ms while a push is expected); model D's deadline at 9 s.
      scale: 0.01,
      server: `public_base_url: "${PUBLIC}/"`,
      upstreams: { provider_d: { base_url: up.url, credentials: { api_key: 'sk-d-upstream' }, timeout_ms: 1_000_000 } },
    });
  });
  after(async () => {
    await gw?.close();
    await up?.close();
    rmSync(dir, { recursive: true, force: true });
  });
  /** A model D task the provider has accepted, with the callback URL it was given. */
  async function submitted(key: string) {
    const created = await call(gw.url, 'POST', D, { key, body: { prompt: 'a fox in the snow', n: 1 } });
    expect(created.status, created.text).to.equal(202);
    const id: string = created.body.task_info.id;
    const upstreamId = await waitFor(async () => (await gw.tasks.get(id))?.upstream_task_id, 5000, 'the upstream task id');
    const callbackUrl = upTasks.get(upstreamId)!.callbackUrl!;
    return { id, upstreamId, callbackUrl, path: callbackUrl.slice(PUBLIC.length) };
  }

  const push = (path: string, body: unknown) => call(gw.url, 'POST', path, { body });
  const ledgerOf = async (tenantId: string, id: string) => (await gw.billing.listLedger(tenantId, { limit: 200 })).entries.filter((e) => e.ref === id).sort((a, b) => a.seq - b.seq).map((e) => e.kind);
  const finalized = (id: string) => waitForFinalized(gw, id);
  const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

  it('sends <public_base_url>/callbacks/<task_id>/<token> in the submit body; the push completes the task at once, billed once', async () => {
    const { tenant: t, key } = await tenant();
    const { id, upstreamId, callbackUrl, path } = await submitted(key);
    expect(callbackUrl).to.match(new RegExp(`^${PUBLIC}/callbacks/${id}/[A-Za-z0-9_-]{32}$`));
    const r = await push(path, succeeded(upstreamId));
    expect([r.status, r.body], r.text).to.deep.equal([200, { status: 'accepted' }]);
    // Moved by the push itself, not a later poll.
    const task = (await gw.tasks.get(id))!;
    expect(task.status).to.equal('completed');
    expect(task.result).to.deep.equal({ images: [`https://results.example/${upstreamId}/0.png`] });
    await finalized(id);
    expect(await ledgerOf(t.id, id)).to.deep.equal(['hold', 'settle']);
    const got = await call(gw.url, 'GET', `${D}/${id}`, { key });
    expect(got.body.task_info.status).to.equal('completed');
  });

  it('a failed push fails the task through the error mapping, released in full', async () => {
    const { tenant: t, key } = await tenant();
    const { id, upstreamId, path } = await submitted(key);
    const r = await push(path, { output: { task_id: upstreamId, task_status: 'FAILED', code: 'DataInspectionFailed', message: 'inspection' } });
    expect([r.status, r.body]).to.deep.equal([200, { status: 'accepted' }]);
    const task = (await gw.tasks.get(id))!;
    expect([task.status, task.error?.code, task.error?.detail]).to.deep.equal(['failed', 3005, "The provider's content inspection refused the input or the output."]);
    await finalized(id);
    expect(await ledgerOf(t.id, id)).to.deep.equal(['hold', 'release']);
  });

  it('a bad token and an unknown task answer the same 404; nothing changes', async () => {
    const { key } = await tenant();
    const { id, upstreamId, path } = await submitted(key);
    const bad = await push(`/callbacks/${id}/${'x'.repeat(32)}`, succeeded(upstreamId));
    const unknown = await push(`/callbacks/00000000-0000-4000-8000-000000000000/${path.split('/').at(-1)}`, succeeded(upstreamId));
    for (const r of [bad, unknown]) {
      expect(r.status, r.text).to.equal(404);
      expect(r.headers.get('content-type')).to.equal('application/problem+json');
      expect(r.body).to.include({ error_code: 2005, detail: 'No such callback.' });
      expect(r.text).not.to.contain(path.split('/').at(-1)); // the token is not echoed back
    }
    expect((await gw.tasks.get(id))!.status).to.be.oneOf(['pending', 'processing']);
    // Wrong method on the route: not ours for GET (the token is not an API surface).
    expect((await call(gw.url, 'GET', path)).status).to.equal(405);
  });

  it('a replay after completion answers 200 ignored: no second settlement, nothing changes', async () => {
    const { tenant: t, key } = await tenant();
    const { id, upstreamId, path } = await submitted(key);
    expect((await push(path, succeeded(upstreamId))).body).to.deep.equal({ status: 'accepted' });
    await finalized(id);
    const before = await gw.tasks.get(id);
    for (let i = 0; i < 3; i++) {
      const r = await push(path, succeeded(upstreamId));
      expect([r.status, r.body]).to.deep.equal([200, { status: 'ignored' }]);
    }
    // Even a contrary replay leaves the finished task as it ended.
    expect((await push(path, { output: { task_status: 'FAILED' } })).body).to.deep.equal({ status: 'ignored' });
    expect(await gw.tasks.get(id)).to.deep.equal(before);
    expect(await ledgerOf(t.id, id)).to.deep.equal(['hold', 'settle']);
    expect((await gw.billing.getWallet(t.id)).held).to.equal(0);
  });

  it('20 concurrent identical pushes: exactly one answers accepted, the rest ignored; settled once', async () => {
    const { tenant: t, key } = await tenant();
    for (const final of ['succeeded', 'failed'] as const) {
      const { id, upstreamId, path } = await submitted(key);
      const body = final === 'succeeded' ? succeeded(upstreamId) : { output: { task_id: upstreamId, task_status: 'FAILED', message: 'no' } };
      const answers = await Promise.all(Array.from({ length: 20 }, () => push(path, body)));
      expect(answers.map((r) => r.status)).to.deep.equal(Array(20).fill(200));
      const statuses = answers.map((r) => r.body.status as string);
      expect(statuses.filter((x) => x === 'accepted'), `${final}: ${statuses.join(',')}`).to.have.length(1);
      expect(statuses.filter((x) => x === 'ignored')).to.have.length(19);
      await finalized(id);
      expect(await ledgerOf(t.id, id)).to.deep.equal(['hold', final === 'succeeded' ? 'settle' : 'release']);
    }
  });

  it('a push racing a poll (10 rounds): each task settles exactly once', async () => {
    const { tenant: t, key } = await tenant();
    for (let round = 0; round < 10; round++) {
      const { id, upstreamId, path } = await submitted(key);
      upTasks.get(upstreamId)!.status = 'SUCCEEDED';
      const task = (await gw.tasks.get(id))!;
      const results = await Promise.all([push(path, succeeded(upstreamId)), gw.lifecycle.poll(id, (task.poll_n ?? 0) + 100), push(path, succeeded(upstreamId))]);
      for (const r of [results[0], results[2]]) expect(r.status, r.text).to.equal(200);
      await finalized(id);
      expect(await ledgerOf(t.id, id), `round ${round}`).to.deep.equal(['hold', 'settle']);
    }
    await pause(400); // room for a (wrong) late poll to settle again
    const w = await gw.billing.getWallet(t.id);
    expect(w.held).to.equal(0);
    const settles = (await gw.billing.listLedger(t.id, { limit: 200 })).entries.filter((e) => e.kind === 'settle');
    expect(settles).to.have.length(10);
  });

  it('without a push, polls go on at the slow cadence (10× the interval) and still finish the task', async () => {
    const { tenant: t, key } = await tenant();
    const { id, upstreamId } = await submitted(key);
    upTasks.get(upstreamId)!.status = 'SUCCEEDED';
    await waitForTask(gw.url, `${D}/${id}`, key, ['completed'], 5000);
    await finalized(id);
    // Polls every 300 ms instead of 30 ms: one or two before the task completed.
    const polls = up.seen.filter((s) => s.method === 'GET' && s.path === `/api/v1/tasks/${upstreamId}`);
    expect(polls.length).to.be.within(1, 3);
    expect(await ledgerOf(t.id, id)).to.deep.equal(['hold', 'settle']);
  });

  it('without server.public_base_url: no callback URL is sent, no callback route, tasks are polled as before', async () => {
    const plain = await startTestGateway({
      sandbox: false,
      vendorsDir: dir,
      only: ['provider_d'],
      scale: 0.01,
      upstreams: { provider_d: { base_url: up.url, credentials: { api_key: 'sk-d-upstream' }, timeout_ms: 1_000_000 } },
    });
    try {
      const { key } = await newTenant(plain, { credits: 1000 });
      const created = await call(plain.url, 'POST', D, { key, body: { prompt: 'a plain fox', n: 1 } });
      const id: string = created.body.task_info.id;
      const upstreamId = await waitFor(async () => (await plain.tasks.get(id))?.upstream_task_id, 5000, 'the upstream task id');
      const submit = up.seen.find((s) => s.method === 'POST' && s.body?.input?.prompt === 'a plain fox')!;
      expect(submit.body.parameters).not.to.have.property('callback_url');
      expect(upTasks.get(upstreamId)!.callbackUrl).to.equal(undefined);
      expect((await plain.tasks.get(id))!.callback_token).to.equal(undefined);
      expect((await call(plain.url, 'POST', `/callbacks/${id}/whatever`, { body: {} })).status).to.equal(404);
      upTasks.get(upstreamId)!.status = 'SUCCEEDED';
      await waitForTask(plain.url, `${D}/${id}`, key, ['completed'], 5000);
    } finally {
      await plain.close();
    }
  });

  it('the sandbox pushes the terminal fixture to the callback URL', async () => {
    // The simulator reaches the gateway through a relay standing for the public address.
    let target = '';
    const relayed: Array<{ path: string; status: number; body: string }> = [];
    const relay: Server = createServer(async (req, res) => {
      const chunks: Buffer[] = [];
      for await (const c of req) chunks.push(c as Buffer);
      const r = await fetch(`${target}${req.url}`, { method: req.method, headers: { 'content-type': 'application/json' }, body: Buffer.concat(chunks) });
      const text = await r.text();
      relayed.push({ path: req.url ?? '', status: r.status, body: text });
      res.writeHead(r.status, { 'content-type': r.headers.get('content-type') ?? 'application/json' }).end(text);
    });
    await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
    const relayUrl = `http://127.0.0.1:${(relay.address() as AddressInfo).port}`;
    const sandboxed = await startTestGateway({ vendorsDir: dir, only: ['provider_d'], scale: 0.01, server: `public_base_url: "${relayUrl}"` });
    target = sandboxed.url;
    try {
      const { key } = await newTenant(sandboxed, { credits: 1000 });
      const created = await call(sandboxed.url, 'POST', D, { key, body: { prompt: 'a sandboxed fox', n: 1 } });
      const id: string = created.body.task_info.id;
      const done = await waitForTask(sandboxed.url, `${D}/${id}`, key, ['completed', 'failed'], 15_000);
      expect(done.body.task_info.status, done.text).to.equal('completed');
      const token = (await sandboxed.tasks.get(id))!.callback_token;
      expect(token).to.be.a('string');
      // The simulator pushed its `succeeded` fixture to the task's callback URL (the push, or a
      // poll just before it, finished the task: accepted or ignored, never refused).
      const pushed = await waitFor(() => relayed.find((r) => r.path === `/callbacks/${id}/${token}`), 5000, 'the sandbox push');
      expect(pushed.status).to.equal(200);
      expect(JSON.parse(pushed.body).status).to.be.oneOf(['accepted', 'ignored']);
    } finally {
      await sandboxed.close();
      relay.closeAllConnections();
      await new Promise<void>((resolve) => relay.close(() => resolve()));
    }
  });
});
