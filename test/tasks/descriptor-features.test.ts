// The descriptor features of issue 31 through the real HTTP surface against real fixture
// upstreams (test/tasks/support/answer-vendors.ts describes the two descriptors), on the run's
// store (memory, or Redis with GATEWAY_TEST_STORE=redis): a result fetched by a second request,
// paths taken from the provider's answer (and refused when they would leave its base URL), the
// HTTP status of poll and result answers, optional result fields, the callback URL as a query
// parameter, and the cancel policies `{method, path}` and `none` (409 / 2006). Each ends with the
// ledger: a hold, then exactly one settle or one release. The sandbox plays both descriptors.
import { expect } from 'chai';
import { rmSync } from 'node:fs';
import type { Gateway } from '../../engine/gateway.ts';
import { call, DEMO_KEY, startTestGateway, waitForTask } from '../helpers/gateway.ts';
import { checkedTenants } from '../helpers/tenants.ts';
import { FakeUpstream, json } from '../helpers/upstream.ts';
import { waitFor } from '../webhooks/support/harness.ts';
import { answerVendorsDir } from './support/answer-vendors.ts';

const FAL = '/vendors/qfal/v1/image';
const FAL_DIRECT = '/vendors/qfal/v1/image-direct';
const VEO = '/vendors/qveo/v1/video';
const PUBLIC = 'https://gw.example.com';

interface FalTask {
  state: 'IN_QUEUE' | 'IN_PROGRESS' | 'COMPLETED';
  error?: string;
  /** The result URL's answer once COMPLETED. */
  result?: { status: number; body: unknown };
  /** Where the status URL points (a provider steering calls elsewhere). */
  statusUrl?: string;
}

describe(`descriptor features against fixture upstreams (${process.env.GATEWAY_TEST_STORE === 'redis' ? 'redis' : 'memory'} store)`, function () {
  this.timeout(60_000);
  let up: FakeUpstream;
  let elsewhere: FakeUpstream;
  let gw: Gateway;
  let dir: string;
  const fal = new Map<string, FalTask>();
  const veo = new Map<string, { done: boolean; samples?: boolean }>();
  let seq = 0;
  const tenant = checkedTenants(() => gw);

  before(async () => {
    dir = answerVendorsDir();
    elsewhere = await new FakeUpstream().start();
    up = new FakeUpstream();
    const submit = (req: { body: any }, res: Parameters<Parameters<FakeUpstream['on']>[2]>[1]) => {
      const id = `req-${++seq}`;
      const t: FalTask = { state: 'IN_QUEUE' };
      if (String(req.body.prompt).includes('elsewhere')) t.statusUrl = `${elsewhere.url}/fal-ai/flux/requests/${id}/status`;
      if (String(req.body.prompt).includes('dotdot')) t.statusUrl = `${up.url}/fal-ai/flux/requests/../../admin/${id}`;
      fal.set(id, t);
      const base = `${up.url}/fal-ai/flux/requests/${id}`;
      json(res, 200, { request_id: id, status_url: t.statusUrl ?? `${base}/status`, response_url: base, cancel_url: `${base}/cancel` });
    };
    up.on('POST', '/fal-ai/flux/dev', submit).on('POST', '/fal-ai/flux/schnell', submit);
    up.on('GET', /^\/fal-ai\/flux\/requests\/[^/]+\/status$/, (req, res) => {
      const t = fal.get(req.path.split('/')[4]!);
      if (!t) return json(res, 404, { detail: 'Request not found' });
      json(res, t.state === 'COMPLETED' ? 200 : 202, { status: t.state, ...(t.error ? { error: t.error } : {}) });
    });
    up.on('GET', /^\/fal-ai\/flux\/requests\/[^/]+$/, (req, res) => {
      const t = fal.get(req.path.split('/')[4]!);
      if (!t) return json(res, 404, { detail: 'Request not found' });
      if (t.state !== 'COMPLETED' || !t.result) return json(res, 400, { detail: 'Request is still in progress' });
      json(res, t.result.status, t.result.body);
    });
    up.on('PUT', /^\/fal-ai\/flux\/requests\/[^/]+\/cancel$/, (req, res) => json(res, 202, { status: 'CANCELLATION_REQUESTED', id: req.path.split('/')[4] }));
    up.on('POST', '/v1beta/models/veo-3.0-generate-001:predictLongRunning', (_req, res) => {
      const id = `op${++seq}`;
      veo.set(id, { done: false });
      json(res, 200, { name: `models/veo-3.0-generate-001/operations/${id}` });
    });
    up.on('GET', /^\/v1beta\/models\/veo-3\.0-generate-001\/operations\/[^/]+$/, (req, res) => {
      const id = req.path.split('/')[5]!;
      const t = veo.get(id);
      if (!t) return json(res, 404, { error: { code: 404, message: 'not found' } });
      const response = t.samples ? { generateVideoResponse: { generatedSamples: [{ video: { uri: `https://files.example/${id}.mp4` } }] } } : { generateVideoResponse: {} };
      json(res, 200, { name: `models/veo-3.0-generate-001/operations/${id}`, done: t.done, ...(t.done ? { response } : {}) });
    });
    await up.start();
    gw = await startTestGateway({
      sandbox: false,
      vendorsDir: dir,
      scale: 0.01, // polls every 10 ms
      server: `public_base_url: "${PUBLIC}/"`,
      upstreams: {
        qfal: { base_url: up.url, credentials: { api_key: 'fal-key' }, timeout_ms: 1_000_000 },
        qveo: { base_url: up.url, credentials: { api_key: 'veo-key' }, timeout_ms: 1_000_000 },
      },
    });
  });
  after(async () => {
    await gw?.close();
    await up?.close();
    await elsewhere?.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const ledgerOf = async (tenantId: string, id: string) => {
    await waitFor(async () => (await gw.tasks.get(id))?.finalized === true, 5000, 'the task finalized');
    return (await gw.billing.listLedger(tenantId, { limit: 200 })).entries.filter((e) => e.ref === id).sort((a, b) => a.seq - b.seq).map((e) => e.kind);
  };
  async function create(path: string, key: string, prompt: string) {
    const r = await call(gw.url, 'POST', path, { key, body: { prompt } });
    expect(r.status, r.text).to.equal(202);
    const id: string = r.body.task_info.id;
    return { id, upstreamId: await waitFor(async () => (await gw.tasks.get(id))?.upstream_task_id ?? ((await gw.tasks.get(id))?.status === 'failed' ? '-' : undefined), 5000, 'the upstream id') };
  }

  it('result fetch: polls the status URL it was given (202 while queued), then fetches response_url; optional seed kept; settled on the images', async () => {
    const { tenant: t, key } = await tenant();
    const { id, upstreamId } = await create(FAL, key, 'a fox');
    await new Promise((r) => setTimeout(r, 50));
    expect((await gw.tasks.get(id))!.status).to.equal('pending'); // 202 IN_QUEUE is an answer, not a failed poll
    Object.assign(fal.get(upstreamId)!, { state: 'COMPLETED', result: { status: 200, body: { images: [{ url: 'https://v3.fal.media/a.png' }, { url: 'https://v3.fal.media/b.png' }], seed: 7 } } });
    const done = await waitForTask(gw.url, `${FAL}/${id}`, key);
    expect(done.body).to.deep.include({ images: ['https://v3.fal.media/a.png', 'https://v3.fal.media/b.png'], seed: [7] });
    expect((await gw.tasks.get(id))!.charge).to.equal(2 * 2500); // 0.025 USD x 2 images delivered (4 held), at 100 credits per USD
    const calls = up.seen.filter((s) => s.path.includes(upstreamId)).map((s) => `${s.method} ${s.path}`);
    expect(calls).to.include(`GET /fal-ai/flux/requests/${upstreamId}/status`).and.to.include(`GET /fal-ai/flux/requests/${upstreamId}`);
    expect(up.seen.find((s) => s.path.endsWith(`/${upstreamId}`))!.headers.authorization).to.equal('Key fal-key');
    expect(await ledgerOf(t.id, id)).to.deep.equal(['hold', 'settle', 'release']); // the two images not delivered are released
  });

  it('result fetch: a missing optional field is left out; a missing required one fails with 3003; a 422 answer is mapped by the rules (stage result)', async () => {
    const { tenant: t, key } = await tenant();
    const a = await create(FAL, key, 'no seed');
    Object.assign(fal.get(a.upstreamId)!, { state: 'COMPLETED', result: { status: 200, body: { images: [{ url: 'https://v3.fal.media/c.png' }] } } });
    const done = await waitForTask(gw.url, `${FAL}/${a.id}`, key);
    expect(done.body.task_info.status).to.equal('completed');
    expect(done.body).to.not.have.property('seed');
    const b = await create(FAL, key, 'no images');
    Object.assign(fal.get(b.upstreamId)!, { state: 'COMPLETED', result: { status: 200, body: { seed: 1 } } });
    const empty = await waitForTask(gw.url, `${FAL}/${b.id}`, key);
    expect(empty.body.task_info.error).to.include({ code: 3003 });
    const c = await create(FAL, key, 'refused input');
    Object.assign(fal.get(c.upstreamId)!, { state: 'COMPLETED', result: { status: 422, body: { detail: [{ msg: 'prompt contains forbidden words' }] } } });
    const refused = await waitForTask(gw.url, `${FAL}/${c.id}`, key);
    expect(refused.body.task_info.error).to.deep.include({ code: 3002, detail: 'The provider refused the input: prompt contains forbidden words' });
    expect(await ledgerOf(t.id, a.id)).to.deep.equal(['hold', 'settle', 'release']);
    expect(await ledgerOf(t.id, b.id)).to.deep.equal(['hold', 'release']);
    expect(await ledgerOf(t.id, c.id)).to.deep.equal(['hold', 'release']);
  });

  it('COMPLETED with an error field is a failure (3005, the provider\'s message); released', async () => {
    const { tenant: t, key } = await tenant();
    const { id, upstreamId } = await create(FAL, key, 'breaks');
    Object.assign(fal.get(upstreamId)!, { state: 'COMPLETED', error: 'GPU out of memory' });
    const failed = await waitForTask(gw.url, `${FAL}/${id}`, key);
    expect(failed.body.task_info.error).to.include({ code: 3005 });
    expect(failed.body.task_info.error.detail).to.contain('GPU out of memory');
    expect(await ledgerOf(t.id, id)).to.deep.equal(['hold', 'release']);
  });

  it('a non-2xx poll answer the status maps ("not ready", 400) is an answer: the task goes on and completes', async () => {
    const { tenant: t, key } = await tenant();
    const { id, upstreamId } = await create(FAL_DIRECT, key, 'direct');
    await waitFor(async () => (await gw.tasks.get(id))?.status === 'processing', 5000, 'processing on a 400');
    await new Promise((r) => setTimeout(r, 60)); // several 400 polls: more than timing.poll_error_limit (3)
    expect((await gw.tasks.get(id))!).to.include({ status: 'processing', poll_failures: 0 });
    Object.assign(fal.get(upstreamId)!, { state: 'COMPLETED', result: { status: 200, body: { images: [{ url: 'https://v3.fal.media/d.png' }] } } });
    const done = await waitForTask(gw.url, `${FAL_DIRECT}/${id}`, key);
    expect(done.body.images).to.deep.equal(['https://v3.fal.media/d.png']);
    expect(await ledgerOf(t.id, id)).to.deep.equal(['hold', 'settle']);
  });

  it('the callback URL goes in the fal_webhook query parameter; its push completes the task through the result fetch', async () => {
    const { tenant: t, key } = await tenant();
    const { id, upstreamId } = await create(FAL, key, 'pushed');
    const submitted = up.seen.find((s) => s.method === 'POST' && s.body?.prompt === 'pushed')!;
    const hook = submitted.query.get('fal_webhook')!;
    expect(hook).to.match(new RegExp(`^${PUBLIC}/callbacks/${id}/[A-Za-z0-9_-]{32}$`));
    expect(submitted.body).to.deep.equal({ prompt: 'pushed' }); // not in the body
    Object.assign(fal.get(upstreamId)!, { state: 'COMPLETED', result: { status: 200, body: { images: [{ url: 'https://v3.fal.media/e.png' }] } } });
    const r = await call(gw.url, 'POST', hook.slice(PUBLIC.length), { body: { request_id: upstreamId, status: 'OK', payload: {} } });
    expect([r.status, r.body]).to.deep.equal([200, { status: 'accepted' }]);
    expect((await gw.tasks.get(id))!).to.deep.include({ status: 'completed', result: { images: ['https://v3.fal.media/e.png'] } });
    expect(await ledgerOf(t.id, id)).to.deep.equal(['hold', 'settle', 'release']);
  });

  it('a cancel request {method, path} goes to the cancel_url the provider named (PUT)', async () => {
    const { tenant: t, key } = await tenant();
    const { id, upstreamId } = await create(FAL, key, 'to cancel');
    const r = await call(gw.url, 'POST', `${FAL}/${id}/cancel`, { key });
    expect(r.status, r.text).to.equal(200);
    expect(r.body.task_info.error).to.include({ code: 4009 });
    await waitFor(async () => up.seen.some((s) => s.method === 'PUT' && s.path === `/fal-ai/flux/requests/${upstreamId}/cancel`), 5000, 'the PUT cancel');
    expect(await ledgerOf(t.id, id)).to.deep.equal(['hold', 'release']);
  });

  it('a status URL on another host, or with .. in it, fails the task at submission with 3003; nothing is sent there', async () => {
    const { tenant: t, key } = await tenant();
    const a = await create(FAL, key, 'elsewhere');
    const away = await waitForTask(gw.url, `${FAL}/${a.id}`, key);
    expect(away.body.task_info.error).to.include({ code: 3003 });
    expect(away.body.task_info.error.detail).to.match(/its status URL names another scheme, host or port than the provider's base URL/);
    const b = await create(FAL, key, 'dotdot');
    const dots = await waitForTask(gw.url, `${FAL}/${b.id}`, key);
    expect(dots.body.task_info.error.detail).to.match(/its status URL holds a \.\. segment/);
    await new Promise((r) => setTimeout(r, 50));
    expect(elsewhere.seen).to.deep.equal([]);
    expect(up.seen.filter((s) => s.path.includes('admin'))).to.deep.equal([]);
    expect(await ledgerOf(t.id, a.id)).to.deep.equal(['hold', 'release']);
    expect(await ledgerOf(t.id, b.id)).to.deep.equal(['hold', 'release']);
  });

  it('a Gemini operation name is polled as a path ({upstream_task_id:path}); cancel: none refuses with 409 / 2006 and the task runs on to completion', async () => {
    const { tenant: t, key } = await tenant();
    const { id, upstreamId } = await create(VEO, key, 'a fox running');
    expect(upstreamId).to.match(/^models\/veo-3\.0-generate-001\/operations\/op\d+$/);
    const refused = await call(gw.url, 'POST', `${VEO}/${id}/cancel`, { key });
    expect(refused.status, refused.text).to.equal(409);
    expect(refused.body).to.deep.include({ error_code: 2006, title: 'Task Not Cancellable' });
    expect(refused.body.task_info.status).to.be.oneOf(['pending', 'processing']);
    Object.assign(veo.get(upstreamId.split('/').at(-1)!)!, { done: true, samples: true });
    const done = await waitForTask(gw.url, `${VEO}/${id}`, key);
    expect(done.body.videos, JSON.stringify(done.body)).to.deep.equal([`https://files.example/${upstreamId.split('/').at(-1)}.mp4`]);
    expect(up.seen.some((s) => s.path === `/v1beta/${upstreamId}`)).to.equal(true);
    expect(await ledgerOf(t.id, id)).to.deep.equal(['hold', 'settle']);
  });

  it('done:true without samples (a filtered video) fails with 3005 through the error rules; released', async () => {
    const { tenant: t, key } = await tenant();
    const { id, upstreamId } = await create(VEO, key, 'filtered');
    Object.assign(veo.get(upstreamId.split('/').at(-1)!)!, { done: true, samples: false });
    const failed = await waitForTask(gw.url, `${VEO}/${id}`, key);
    expect(failed.body.task_info.error).to.deep.include({ code: 3005, detail: 'The provider filtered the video: no sample was returned.' });
    expect(await ledgerOf(t.id, id)).to.deep.equal(['hold', 'release']);
  });
});

describe('the sandbox plays the descriptor features', function () {
  this.timeout(30_000);
  let gw: Gateway;
  let dir: string;
  before(async () => {
    dir = answerVendorsDir();
    gw = await startTestGateway({ vendorsDir: dir });
  });
  after(async () => {
    await gw?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  for (const [path, field] of [[FAL, 'images'], [FAL_DIRECT, 'images'], [VEO, 'videos']] as const) {
    it(`${path}: completes with the fixture's result, and [sandbox:fail] fails`, async () => {
      const ok = await call(gw.url, 'POST', path, { key: DEMO_KEY, body: { prompt: 'a fox' } });
      expect(ok.status, ok.text).to.equal(202);
      const done = await waitForTask(gw.url, `${path}/${ok.body.task_info.id}`, DEMO_KEY);
      expect(done.body.task_info.status, JSON.stringify(done.body)).to.equal('completed');
      expect(done.body[field]).to.have.length(1);
      const bad = await call(gw.url, 'POST', path, { key: DEMO_KEY, body: { prompt: 'a fox [sandbox:fail]' } });
      const failed = await waitForTask(gw.url, `${path}/${bad.body.task_info.id}`, DEMO_KEY);
      expect(failed.body.task_info.status).to.equal('failed');
    });
  }
});
