// Redis mode with several processes: two stateless api processes and one worker over one
// real redis-server. Tasks created on one are read on the other; the worker polls each task to
// the end exactly once per scheduled poll; nothing is settled twice; webhooks arrive.
import { expect } from 'chai';
import { startRedis, type RedisServer } from '../helpers/redis.ts';
import { call } from '../helpers/gateway.ts';
import { testPki } from '../webhooks/support/pki.ts';
import { Receiver } from '../webhooks/support/receiver.ts';
import { countingImageToolUpstream, type CountingUpstream } from './image-tool-upstream.ts';
import { admin, spawnGateway, tenantWithKey, writeConfig, type GatewayProcess } from './support.ts';

const IMAGES = '/vendors/provider_b/v1/tob/diffusion';

describe('redis mode: two api processes and a worker over one Redis', function () {
  this.timeout(120_000);
  let redis: RedisServer;
  let up: CountingUpstream;
  let rx: Receiver;
  const procs: GatewayProcess[] = [];

  before(async () => {
    redis = await startRedis();
    up = await countingImageToolUpstream().start();
    rx = await Receiver.start();
    const config = writeConfig({ redisUrl: redis.url, prefix: 'mp', upstreamUrl: up.url, caPem: testPki().caPem });
    procs.push(...(await Promise.all([spawnGateway(config, 'api'), spawnGateway(config, 'api'), spawnGateway(config, 'worker')])));
  });
  after(async () => {
    for (const p of procs) expect(await p.stop(), p.output().slice(-2000)).to.equal(0);
    await rx.close();
    await up.close();
    await redis.stop();
  });

  it('shares tasks across processes and finishes each exactly once', async () => {
    const [a, b] = procs as [GatewayProcess, GatewayProcess];
    const { tenantId, key } = await tenantWithKey(a.url);
    const ep = await call(b.url, 'POST', '/v1/webhooks/endpoints', { key, body: { url: rx.url('/mp'), events: ['task.created', 'task.succeeded'] } });
    expect(ep.status).to.equal(201);

    const ids: string[] = [];
    for (let i = 0; i < 30; i++) {
      const [on, other] = i % 2 ? [a, b] : [b, a];
      const created = await call(on.url, 'POST', IMAGES, { key, body: { prompt: `task ${i}` } });
      expect(created.status, created.text).to.equal(202);
      const id = created.body.task_info.id;
      ids.push(id);
      const read = await call(other.url, 'GET', `${IMAGES}/${id}`, { key });
      expect(read.status).to.equal(200);
      expect(read.body.task_info.id).to.equal(id);
    }
    const deadline = Date.now() + 30_000;
    for (const id of ids) {
      for (;;) {
        const r = await call(a.url, 'GET', `${IMAGES}/${id}`, { key });
        if (r.body.task_info.status === 'completed') break;
        expect(r.body.task_info.status).not.to.equal('failed');
        if (Date.now() > deadline) throw new Error(`task ${id} not completed`);
        await new Promise((res) => setTimeout(res, 20));
      }
    }
    // One submission per task, and exactly three polls per upstream task: no doubled poll chain.
    expect([...up.submits.values()].every((n) => n === 1)).to.equal(true);
    expect(up.submits.size).to.equal(30);
    expect([...up.polls.values()]).to.deep.equal(Array(30).fill(3));

    const ledger = await admin(a.url, 'GET', `/tenants/${tenantId}/wallet/ledger?limit=200`);
    for (const id of ids) {
      expect(ledger.data.filter((e: { ref: string }) => e.ref === id).map((e: { kind: string }) => e.kind).sort()).to.deep.equal(['hold', 'settle']);
    }
    const wallet = await admin(b.url, 'GET', `/tenants/${tenantId}/wallet`);
    expect(wallet.held_milli).to.equal(0);
    expect(wallet.balance_milli).to.equal(100_000_000 - 30 * 34_000);

    // Every event reached the receiver (at least once; exactly once per delivery id here).
    for (const deadline2 = Date.now() + 10_000; rx.requests.length < 60 && Date.now() < deadline2; ) await new Promise((r) => setTimeout(r, 20));
    const byDelivery = new Map(rx.requests.map((r) => [String(r.headers['x-service-webhook-id']), JSON.parse(r.body.toString())]));
    expect(byDelivery.size).to.equal(60);
    for (const id of ids) {
      const types = [...byDelivery.values()].filter((e) => e.data.payload.task_info.id === id).map((e) => e.type).sort();
      expect(types).to.deep.equal(['task.created', 'task.succeeded']);
    }
  });
});
