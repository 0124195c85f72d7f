// Redis mode with several processes: two stateless api processes and one worker over one
// real redis-server. Tasks created on one are read on the other; the worker polls each task to
// the end exactly once per scheduled poll; nothing is settled twice; webhooks arrive.
import { expect } from 'chai';
import { crc32, deflateSync } from 'node:zlib';
import { startRedis, type RedisServer } from '../helpers/redis.ts';
import { FakeUpstream, json } from '../helpers/upstream.ts';
import { call } from '../helpers/gateway.ts';
import { testPki } from '../webhooks/support/pki.ts';
import { Receiver } from '../webhooks/support/receiver.ts';
import { countingImageToolUpstream, type CountingUpstream } from './image-tool-upstream.ts';
import { admin, spawnGateway, tenantWithKey, writeConfig, type GatewayProcess } from './support.ts';

const IMAGES = '/vendors/provider_b/v1/tob/diffusion';
const MODEL_A = '/vendors/provider_a/v1/model_a/generation';

/** A real PNG of random pixels (incompressible, so the Base64 is large). */
function pngBase64(width: number, height: number): string {
  const chunk = (type: string, data: Buffer) => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(data.length);
    const body = Buffer.concat([Buffer.from(type), data]);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(body));
    return Buffer.concat([len, body, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr.set([8, 2, 0, 0, 0], 8); // 8-bit RGB
  const raw = Buffer.alloc((width * 3 + 1) * height);
  for (let i = 0; i < raw.length; i++) raw[i] = i % (width * 3 + 1) === 0 ? 0 : (Math.random() * 256) | 0;
  const png = Buffer.concat([Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]), chunk('IHDR', ihdr), chunk('IDAT', deflateSync(raw)), chunk('IEND', Buffer.alloc(0))]);
  return png.toString('base64');
}

/** Video model A's "content generation tasks" upstream: succeeds at the first poll. */
function modelAUpstream(): FakeUpstream {
  let seq = 0;
  return new FakeUpstream()
    .on('POST', '/api/v3/contents/generations/tasks', (_req, res) => json(res, 200, { id: `cgt-${++seq}` }))
    .on('GET', /^\/api\/v3\/contents\/generations\/tasks\/[^/]+$/, (req, res) =>
      json(res, 200, { id: req.path.split('/').at(-1), status: 'succeeded', content: { video_url: 'https://cdn.example.com/v.mp4' }, duration: 5, usage: { completion_tokens: 1, duration: 5 } }));
}

describe('redis mode: two api processes and a worker over one Redis', function () {
  this.timeout(120_000);
  let redis: RedisServer;
  let up: CountingUpstream;
  let rx: Receiver;
  const procs: GatewayProcess[] = [];

  let modelA: FakeUpstream;
  before(async () => {
    redis = await startRedis();
    up = await countingImageToolUpstream().start();
    modelA = await modelAUpstream().start();
    rx = await Receiver.start();
    const config = writeConfig({ redisUrl: redis.url, prefix: 'mp', upstreamUrl: up.url, modelAUrl: modelA.url, caPem: testPki().caPem });
    procs.push(...(await Promise.all([spawnGateway(config, 'api'), spawnGateway(config, 'api'), spawnGateway(config, 'worker')])));
  });
  after(async () => {
    for (const p of procs) expect(await p.stop(), p.output().slice(-2000)).to.equal(0);
    await rx.close();
    await up.close();
    await modelA.close();
    await redis.stop();
  });

  it('an image uploaded to one api process reaches the upstream from the worker', async () => {
    const [a] = procs as [GatewayProcess];
    const { key } = await tenantWithKey(a.url);
    const image = pngBase64(600, 600); // about 1.4 MB: parsed and checked in the media pool
    expect(image.length).to.be.greaterThan(1_000_000);
    const created = await call(a.url, 'POST', MODEL_A, { key, body: { prompt: 'the cat turns', first_frame: `data:image/png;base64,${image}` } });
    expect(created.status, created.text).to.equal(200);
    for (let i = 0; ; i++) {
      const r = await call(a.url, 'GET', `${MODEL_A}/${created.body.task_info.id}`, { key });
      if (r.body.task_info.status === 'completed') break;
      expect(r.body.task_info.status, JSON.stringify(r.body)).not.to.equal('failed');
      if (i > 1000) throw new Error('model A task did not complete');
      await new Promise((res) => setTimeout(res, 20));
    }
    const submit = modelA.seen.find((s) => s.method === 'POST')!;
    const frame = submit.body.content.find((c: { role?: string }) => c.role === 'first_frame');
    expect(frame.image_url.url).to.equal(`data:image/png;base64,${image}`);
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
