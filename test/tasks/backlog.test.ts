// The bound on a process's own backlog of task calls (server.max_task_calls_running,
// docs/decisions.md "A bounded backlog of task calls"): past it, a create is refused with
// 503 / 4001 and Retry-After before anything is written or held, and taken again once the
// backlog drains. A real fixture upstream holds the submissions; the run's store (memory, or
// Redis with GATEWAY_TEST_STORE=redis).
import { expect } from 'chai';
import type { Gateway } from '../../engine/gateway.ts';
import { call, newTenant, startTestGateway, waitForTask } from '../helpers/gateway.ts';
import { metricValue } from '../helpers/metrics.ts';
import { FakeUpstream, json } from '../helpers/upstream.ts';

const D = '/vendors/provider_d/v1/model_d/generation';

describe(`backlog of task calls (${process.env.GATEWAY_TEST_STORE === 'redis' ? 'redis' : 'memory'} store)`, function () {
  this.timeout(30_000);
  let up: FakeUpstream;
  let gw: Gateway;
  let release: () => void = () => {};
  const held = new Promise<void>((r) => (release = r));
  let seq = 0;

  before(async () => {
    up = new FakeUpstream();
    // Submissions wait for `held`; polls find the task done.
    up.on('POST', '/api/v1/services/aigc/text2image/image-synthesis', async (_req, res) => {
      const id = `d-${++seq}`;
      await held;
      json(res, 200, { request_id: `r-${id}`, output: { task_id: id, task_status: 'PENDING' } });
    });
    up.on('GET', /^\/api\/v1\/tasks\/[^/]+$/, (req, res) => {
      const id = req.path.split('/')[4]!;
      json(res, 200, { request_id: `r-${id}`, output: { task_id: id, task_status: 'SUCCEEDED', results: [{ url: `https://results.example/${id}.png` }] } });
    });
    await up.start();
    gw = await startTestGateway({ only: ['provider_d'], sandbox: false, server: 'max_task_calls_running: 2', upstreams: { provider_d: { base_url: up.url, credentials: { api_key: 'k' } } } });
  });
  after(async () => {
    release();
    await gw.close();
    await up.close();
  });

  const create = (key: string) => call(gw.url, 'POST', D, { key, body: { prompt: 'a lighthouse at dusk' } });

  it('refuses creates past the bound with 503 / 4001 and Retry-After, writes and holds nothing, and takes them again once the backlog drains', async () => {
    const { tenant, key } = await newTenant(gw);
    const accepted = [await create(key), await create(key)];
    for (const r of accepted) expect(r.status, r.text).to.equal(202);
    for (let i = 0; up.seen.filter((s) => s.method === 'POST').length < 2; i++) {
      if (i > 500) throw new Error('the submissions never reached the upstream');
      await new Promise((r) => setTimeout(r, 10));
    }
    const wallet = await gw.billing.getWallet(tenant.id);

    const refused = await create(key);
    expect(refused.status, refused.text).to.equal(503);
    expect(refused.headers.get('content-type')).to.match(/^application\/problem\+json/);
    expect(refused.headers.get('retry-after')).to.equal('1');
    expect(refused.headers.get('traceparent')).to.be.a('string');
    expect(refused.body.error_code).to.equal(4001);
    expect(refused.body.detail).to.match(/nothing was created or charged/);
    // Nothing of it was written: no third task, no hold, no third submission.
    expect((await gw.tasks.listByTenant(tenant.id, { count: 10 }))?.tasks).to.have.length(2);
    expect(await gw.billing.getWallet(tenant.id)).to.deep.equal(wallet);
    expect(up.seen.filter((s) => s.method === 'POST')).to.have.length(2);
    const metrics = await (await fetch(gw.metricsUrl!)).text();
    expect(metricValue(metrics, 'gateway_task_calls_running')).to.equal(2);

    release();
    for (const r of accepted) await waitForTask(gw.url, `${D}/${r.body.task_info.id}`, key, ['completed']);
    // A task shows completed before the poll that completed it has finished its work (settlement).
    for (let i = 0; metricValue(await (await fetch(gw.metricsUrl!)).text(), 'gateway_task_calls_running') > 0; i++) {
      if (i > 500) throw new Error('the backlog never drained');
      await new Promise((r) => setTimeout(r, 10));
    }
    const again = await create(key);
    expect(again.status, again.text).to.equal(202);
    await waitForTask(gw.url, `${D}/${again.body.task_info.id}`, key, ['completed']);
  });
});
