// Work left by earlier versions, met by this one after an upgrade with tasks in flight (the
// lifecycle keeps a branch for each; engine/tasks/lifecycle-deps.ts and provider.ts say which
// version it serves):
//  - a `task.deadline` job, which versions before e36f5af (2026-11-23) scheduled per task: it
//    still fails the task with 4008 and releases its hold;
//  - a task accepted before upstream pools (3212d0e, 2026-11-24) carries no pool member: its
//    polls go to the route's first member, and it completes.
import { expect } from 'chai';
import type { Gateway } from '../../engine/gateway.ts';
import { JOBS } from '../../engine/tasks/lifecycle-deps.ts';
import { call, newTenant, startTestGateway, waitForTask } from '../helpers/gateway.ts';
import { FakeUpstream, json } from '../helpers/upstream.ts';
import { waitFor } from '../webhooks/support/harness.ts';

const D = '/vendors/provider_d/v1/model_d/generation';

describe('tasks and jobs of earlier versions', function () {
  this.timeout(30_000);
  let up: FakeUpstream;
  let gw: Gateway;
  let finish = false;

  before(async () => {
    up = new FakeUpstream();
    up.on('POST', '/api/v1/services/aigc/text2image/image-synthesis', (_req, res) => json(res, 200, { request_id: 'r', output: { task_id: `up-${Math.random().toString(36).slice(2)}`, task_status: 'PENDING' } }));
    up.on('GET', /^\/api\/v1\/tasks\/[^/]+$/, (req, res) => {
      const id = req.path.split('/')[4]!;
      if (!finish) return json(res, 200, { request_id: 'r', output: { task_id: id, task_status: 'RUNNING' } });
      json(res, 200, { request_id: 'r', output: { task_id: id, task_status: 'SUCCEEDED', results: [{ url: `https://results.example/${id}.png` }] } });
    });
    await up.start();
    gw = await startTestGateway({ sandbox: false, only: ['provider_d'], scale: 0.01, upstreams: { provider_d: { base_url: up.url, credentials: { api_key: 'sk-d' } } } });
  });
  after(async () => {
    await gw?.close();
    await up?.close();
  });

  async function running(key: string): Promise<string> {
    const created = await call(gw.url, 'POST', D, { key, body: { prompt: 'a fox in the snow', n: 1 } });
    expect(created.status, created.text).to.equal(202);
    const id: string = created.body.task_info.id;
    await waitFor(async () => (await gw.tasks.get(id))?.upstream_task_id, 5000, 'the upstream task id');
    return id;
  }

  it('a task.deadline job fails its task with 4008, released in full', async () => {
    finish = false;
    const { tenant, key } = await newTenant(gw, { credits: 100 });
    const id = await running(key);
    await gw.scheduler.schedule(JOBS.deadline, `${id}.deadline`, { id }, 0);
    const done = await waitForTask(gw.url, `${D}/${id}`, key);
    expect(done.body.task_info.status).to.equal('failed');
    expect(done.body.task_info.error.code).to.equal(4008);
    await waitFor(async () => (await gw.tasks.get(id))?.finalized === true, 5000, 'the task finalized');
    expect((await gw.billing.checkInvariant(tenant.id)).ok).to.equal(true);
    expect((await gw.billing.getWallet(tenant.id)).held).to.equal(0);
  });

  it('a task without a pool member is polled at the first member and completes', async () => {
    finish = false;
    const { key } = await newTenant(gw, { credits: 100 });
    const id = await running(key);
    // As a version before pools stored it: no upstream_member.
    await gw.tasks.transition(id, ['pending', 'processing'], { upstream_member: undefined });
    expect((await gw.tasks.get(id))!.upstream_member).to.equal(undefined);
    finish = true;
    const done = await waitForTask(gw.url, `${D}/${id}`, key);
    expect(done.body.task_info.status).to.equal('completed');
  });
});
