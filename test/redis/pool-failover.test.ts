// Upstream pools across OS processes: two gateway processes on one Redis share provider_b's
// pool of two members; one member is killed mid-load. No accepted task is lost or charged
// twice, and what is submitted after the kill goes to the live member.
import { expect } from 'chai';
import { startRedis, type RedisServer } from '../helpers/redis.ts';
import { call } from '../helpers/gateway.ts';
import { countingImageToolUpstream, type CountingUpstream } from './image-tool-upstream.ts';
import { spawnGateway, tenantWithKey, writeConfig, type GatewayProcess } from './support.ts';

const IMAGES = '/vendors/provider_b/v1/tob/diffusion';

describe('redis mode: two gateway processes, one pool member killed mid-load', function () {
  this.timeout(120_000);
  let redis: RedisServer;
  let doomed: CountingUpstream;
  let live: CountingUpstream;
  const procs: GatewayProcess[] = [];

  before(async () => {
    redis = await startRedis();
    doomed = await countingImageToolUpstream().start();
    live = await countingImageToolUpstream().start();
    const config = writeConfig({ redisUrl: redis.url, prefix: 'pf', upstreamUrl: live.url, members: [{ id: 'x', url: doomed.url }, { id: 'y', url: live.url }] });
    procs.push(...(await Promise.all([spawnGateway(config, 'all'), spawnGateway(config, 'all')])));
  });
  after(async () => {
    await Promise.all(procs.map((p) => p.kill9()));
    await Promise.all([doomed?.close(), live?.close()].map((p) => p?.catch(() => undefined)));
    await redis?.stop();
  });

  it('loses no task, charges none twice, and sends later tasks to the live member', async () => {
    const { key } = await tenantWithKey(procs[0]!.url);
    const create = (i: number, tag: string) => call(procs[i % 2]!.url, 'POST', IMAGES, { key, body: { prompt: `${tag} ${i}` } });
    const before = await Promise.all(Array.from({ length: 20 }, (_, i) => create(i, 'before')));
    await doomed.close(); // its port now refuses connections
    const after = await Promise.all(Array.from({ length: 20 }, (_, i) => create(i, 'after')));
    const ids = [...before, ...after].map((r) => {
      expect(r.status, JSON.stringify(r.body)).to.equal(202);
      return r.body.task_info.id as string;
    });
    // Every task ends; those created after the kill complete (the live member accepted them).
    const deadline = Date.now() + 60_000;
    let done: { id: string; status: string }[] = [];
    while (Date.now() < deadline) {
      done = await Promise.all(ids.map(async (id, i) => ({ id, status: (await call(procs[i % 2]!.url, 'GET', `${IMAGES}/${id}`, { key })).body.task_info.status as string })));
      if (done.every((t) => t.status === 'completed' || t.status === 'failed')) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(done.filter((t) => t.status !== 'completed' && t.status !== 'failed'), 'unfinished tasks').to.deep.equal([]);
    expect(done.slice(20).map((t) => t.status)).to.deep.equal(Array(20).fill('completed'));
    // The dead member never saw a submission made after the kill; the live one got each exactly once.
    for (let i = 0; i < 20; i++) {
      expect(doomed.submits.get(`after ${i}`) ?? 0, `after ${i} on the dead member`).to.equal(0);
      expect(live.submits.get(`after ${i}`), `after ${i} on the live member`).to.equal(1);
    }
    // One hold and one settlement (or release) per task, across both processes.
    const ledger = (await call(procs[0]!.url, 'GET', '/v1/ledger?limit=200', { key })).body.data as { kind: string; ref: string }[];
    for (const t of done) {
      const kinds = ledger.filter((e) => e.ref === t.id).map((e) => e.kind).sort();
      expect(kinds, t.id).to.deep.equal(t.status === 'completed' ? ['hold', 'settle'] : ['hold', 'release']);
    }
  });
});
