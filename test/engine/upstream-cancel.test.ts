// The safety net against real upstream servers (issue 16, items 11 and 12): a task that never
// finishes fails with 4008, its hold is released, and when the route declares an upstream cancel
// the provider is asked once to stop it, with the poll's auth; a route without one sends nothing.
// And timing.scale shortens upstream timeouts too, so a scaled test reaches 3004.
import { expect } from 'chai';
import type { Gateway } from '../../engine/gateway.ts';
import { call, newTenant, startTestGateway, waitForTask } from '../helpers/gateway.ts';
import { FakeUpstream, json, type Seen } from '../helpers/upstream.ts';
import { waitFor } from '../webhooks/support/harness.ts';

const MODEL_D = '/vendors/provider_d/v1/model_d/generation'; // declares POST /api/v1/tasks/{id}/cancel; safety net 900 s (0.9 s scaled)
const IMAGES_B = '/vendors/provider_b/v1/tob/diffusion'; // no cancel; safety net 600 s (0.6 s scaled)
const VIDEOS_B = '/vendors/provider_b/v1/tob/video-diffusion'; // safety net 1800 s (1.8 s scaled)

describe('the safety net cancels upstream; scaled upstream timeouts', () => {
  let up: FakeUpstream;
  let gw: Gateway;
  let seq = 0;

  before(async () => {
    // Tasks of both styles stay running for ever; a prompt with "stall" makes model D's polls
    // (or provider_b's submission) never answer at all.
    up = new FakeUpstream();
    const stalled = new Set<string>();
    up.on('POST', '/api/v1/services/aigc/text2image/image-synthesis', (req, res) => {
      const id = `d-${++seq}`;
      if (String(req.body.input.prompt).includes('stall')) stalled.add(id);
      json(res, 200, { request_id: `r-${id}`, output: { task_id: id, task_status: 'PENDING' } });
    });
    up.on('GET', /^\/api\/v1\/tasks\/[^/]+$/, (req, res) => {
      const id = req.path.split('/')[4]!;
      if (stalled.has(id)) return; // no answer: the poll hangs until its timeout
      json(res, 200, { request_id: `r-${id}`, output: { task_id: id, task_status: 'RUNNING' } });
    });
    up.on('POST', /^\/api\/v1\/tasks\/[^/]+\/cancel$/, (req, res) => json(res, 200, { request_id: `r-cancel-${req.path.split('/')[4]}` }));
    const submitB = (req: Seen, res: Parameters<Parameters<FakeUpstream['on']>[2]>[1]) => {
      if (String(req.body.prompt).includes('stall')) return; // the submission hangs
      json(res, 200, { code: 1, description: 'Submit success', result: `b-${++seq}` });
    };
    up.on('POST', '/mj/submit/imagine', submitB).on('POST', '/mj/submit/video', submitB);
    up.on('GET', /^\/mj\/task\/[^/]+\/fetch$/, (req, res) => json(res, 200, { id: req.path.split('/')[3], status: 'IN_PROGRESS', imageUrls: null }));
    await up.start();
    gw = await startTestGateway({
      sandbox: false,
      only: ['provider_b', 'provider_d'],
      upstreams: {
        // 3000 s scaled by 0.001: a stalled poll hangs 3 s, well past model D's safety net.
        provider_d: { base_url: up.url, credentials: { api_key: 'sk-d-upstream' }, timeout_ms: 3_000_000 },
        // 1000 s scaled: 1 s, within the video route's 1.8 s safety net.
        provider_b: { base_url: up.url, credentials: { api_key: 'mj-upstream' }, timeout_ms: 1_000_000 },
      },
    });
  });
  after(async () => {
    await up.close(); // first: it cuts the stalled exchanges, so the gateway closes at once
    await gw.close();
  });

  /** Create a task, wait until it is terminal; returns it with its upstream id and the wallet after release. */
  async function runToEnd(path: string, body: Record<string, unknown>) {
    const { key } = await newTenant(gw, { credits: 1000 });
    const before = (await call(gw.url, 'GET', '/v1/balance', { key })).body;
    const created = await call(gw.url, 'POST', path, { key, body });
    expect(created.status, created.text).to.equal(202);
    const id = created.body.task_info.id;
    const done = await waitForTask(gw.url, `${path}/${id}`, key);
    // The release follows the failed transition: wait for it rather than race it.
    const wallet = await waitFor(async () => {
      const w = (await call(gw.url, 'GET', '/v1/balance', { key })).body;
      return w.held_milli === 0 ? w : undefined;
    }, 5000, 'the hold released');
    const stored = await gw.tasks.get(id);
    return { done, wallet, before, upstreamId: stored?.upstream_task_id };
  }

  const cancelsOf = (upstreamId: string | undefined) => up.seen.filter((s) => s.path.endsWith('/cancel') && s.path.includes(`/${upstreamId}/`));
  const settle = () => new Promise((r) => setTimeout(r, 300)); // room for a (wrong) second cancel

  it('a task running for ever: 4008 at the poll, hold released, one cancel with the poll\'s auth', async () => {
    const { done, wallet, before, upstreamId } = await runToEnd(MODEL_D, { prompt: 'a fox that never finishes' });
    expect(done.body.task_info.status).to.equal('failed');
    expect(done.body.task_info.error.code).to.equal(4008);
    expect(wallet.available_milli).to.equal(before.available_milli);
    await waitFor(() => cancelsOf(upstreamId).length > 0, 5000, 'the upstream cancel');
    await settle();
    const cancels = cancelsOf(upstreamId);
    expect(cancels.map((c) => [c.method, c.path])).to.deep.equal([['POST', `/api/v1/tasks/${upstreamId}/cancel`]]);
    expect(cancels[0]!.headers.authorization).to.equal('Bearer sk-d-upstream');
    const poll = up.seen.find((s) => s.method === 'GET' && s.path === `/api/v1/tasks/${upstreamId}`)!;
    expect(cancels[0]!.headers.authorization).to.equal(poll.headers.authorization);
  });

  it('a task whose poll hangs: the sweep fails it with 4008 and sends the one cancel', async () => {
    const { done, upstreamId } = await runToEnd(MODEL_D, { prompt: 'a fox that stalls' });
    expect(done.body.task_info.error.code).to.equal(4008);
    await waitFor(() => cancelsOf(upstreamId).length > 0, 5000, 'the upstream cancel');
    await settle();
    expect(cancelsOf(upstreamId)).to.have.length(1);
  });

  it('a route without an upstream cancel still fails with 4008 and sends nothing but its polls', async () => {
    const { done, wallet, before, upstreamId } = await runToEnd(IMAGES_B, { prompt: 'a lighthouse, provider_b style' });
    expect(done.body.task_info.error.code).to.equal(4008);
    expect(wallet.available_milli).to.equal(before.available_milli);
    await settle();
    const calls = up.seen.filter((s) => JSON.stringify(s.body ?? '').includes('provider_b style') || s.path.includes(`/${upstreamId}/`));
    expect([...new Set(calls.map((s) => `${s.method} ${s.path}`))]).to.deep.equal(['POST /mj/submit/imagine', `GET /mj/task/${upstreamId}/fetch`]);
  });

  it('the sandbox answers the cancel: a [sandbox:hang] task reads CANCELED upstream after its 4008', async () => {
    const sandboxed = await startTestGateway({ only: ['provider_d'] });
    try {
      const { key } = await newTenant(sandboxed, { credits: 1000 });
      const created = await call(sandboxed.url, 'POST', MODEL_D, { key, body: { prompt: 'a fox [sandbox:hang]' } });
      const done = await waitForTask(sandboxed.url, `${MODEL_D}/${created.body.task_info.id}`, key);
      expect(done.body.task_info.error.code).to.equal(4008);
      const upstreamId = (await sandboxed.tasks.get(created.body.task_info.id))!.upstream_task_id!;
      const upstreamPoll = `${sandboxed.sandbox!.urlFor('provider_d')}/api/v1/tasks/${upstreamId}`;
      await waitFor(async () => (await (await fetch(upstreamPoll)).json()).output.task_status === 'CANCELED', 5000, 'the sandbox task cancelled');
    } finally {
      await sandboxed.close();
    }
  });

  it('timing.scale scales the upstream timeout: a submission that never answers is 3004 in about a second', async () => {
    const started = Date.now();
    const { done, wallet, before } = await runToEnd(VIDEOS_B, { prompt: 'https://example.com/cat.png the cat stalls', video_type: 1 });
    expect(done.body.task_info.status).to.equal('failed');
    expect(done.body.task_info.error.code, JSON.stringify(done.body.task_info.error)).to.equal(3004);
    expect(Date.now() - started).to.be.below(1800); // before the 1.8 s safety net
    expect(wallet.available_milli).to.equal(before.available_milli);
  });
});
