// Crash safety in redis mode. Under a steady load of task creation, one of two gateway
// processes is killed with SIGKILL and restarted: every task the client saw accepted (202)
// reaches a terminal state, no task is billed twice, the ledger balances, and every event
// reaches the receiver at least once. Then redis-server itself restarts (AOF on).
import { expect } from 'chai';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BillingService } from '../../engine/billing/service.ts';
import { RedisWalletStore } from '../../engine/store/redis/index.ts';
import { startRedis } from '../helpers/redis.ts';
import { call } from '../helpers/gateway.ts';
import { testPki } from '../webhooks/support/pki.ts';
import { Receiver } from '../webhooks/support/receiver.ts';
import { countingImageToolUpstream, type CountingUpstream } from './image-tool-upstream.ts';
import { freePort, ledger, spawnGateway, tenantWithKey, writeConfig } from './support.ts';

const IMAGES = '/vendors/provider_b/v1/tob/diffusion';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function waitTerminal(base: string, key: string, ids: string[], timeoutMs: number): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  const deadline = Date.now() + timeoutMs;
  for (const id of ids) {
    for (;;) {
      const r = await call(base, 'GET', `${IMAGES}/${id}`, { key }).catch(() => undefined);
      const status = r?.body?.task_info?.status;
      if (status === 'completed' || status === 'failed') {
        out.set(id, status === 'failed' ? `failed ${r!.body.task_info.error?.code}` : status);
        break;
      }
      if (Date.now() > deadline) throw new Error(`task ${id} is still ${status ?? `unreadable (${r?.status})`}`);
      await sleep(25);
    }
  }
  return out;
}

describe('redis mode: crashes lose nothing that was accepted', function () {
  this.timeout(180_000);
  let up: CountingUpstream;
  let rx: Receiver;
  before(async () => {
    up = await countingImageToolUpstream().start();
    rx = await Receiver.start();
  });
  after(async () => {
    await rx.close();
    await up.close();
  });

  it('kill -9 of a gateway process under load, then restart', async () => {
    const redis = await startRedis();
    const config = writeConfig({ redisUrl: redis.url, prefix: 'cr', upstreamUrl: up.url, caPem: testPki().caPem });
    const portA = await freePort();
    let a = await spawnGateway(config, 'all', portA);
    const b = await spawnGateway(config, 'all');
    try {
      const { tenantId, key } = await tenantWithKey(b.url);
      const ep = await call(b.url, 'POST', '/v1/webhooks/endpoints', { key, body: { url: rx.url('/crash'), events: ['task.created', 'task.succeeded', 'task.failed'] } });
      expect(ep.status).to.equal(201);

      // Steady load for 3 s on both processes; A is killed at 1 s and restarted at 2 s.
      const accepted: string[] = [];
      let refused = 0;
      let sent = 0;
      const load = (async () => {
        const started = Date.now();
        const inflight: Promise<void>[] = [];
        for (let i = 0; Date.now() - started < 3000; i++) {
          sent++;
          const target = i % 2 ? `http://127.0.0.1:${portA}` : b.url;
          inflight.push(
            call(target, 'POST', IMAGES, { key, body: { prompt: `load ${i}` } }).then(
              (r) => void (r.status === 202 ? accepted.push(r.body.task_info.id) : refused++),
              () => void refused++,
            ),
          );
          await sleep(10);
        }
        await Promise.all(inflight);
      })();
      await sleep(1000);
      await a.kill9();
      await sleep(1000);
      a = await spawnGateway(config, 'all', portA);
      await load;
      // How many were sent depends on the machine's speed (one every 10 ms at best); B alone
      // takes half of them, so well over a third must have been accepted.
      expect(sent).to.be.greaterThan(100);
      expect(accepted.length).to.be.greaterThan(sent / 3);
      expect(refused).to.be.greaterThan(0); // some creates hit the dead process

      const states = await waitTerminal(b.url, key, accepted, 90_000);
      // A task whose submission was in flight at the kill was sent, its answer never recorded:
      // provider_b cannot dedupe, so it fails with 4010 instead of being sent again.
      expect([...states.values()].every((s) => s === 'completed' || s === 'failed 4010'), JSON.stringify([...states])).to.equal(true);
      expect([...up.submits.values()].every((n) => n === 1), 'a prompt reached the provider twice').to.equal(true);

      // Billing: one hold and one settlement (a 4010: one release) per accepted task; the ledger balances, nothing is held.
      const lines = await ledger(b.url, tenantId);
      for (const id of accepted) expect(lines.filter((e) => e.ref === id).map((e) => e.kind).sort(), id).to.deep.equal(states.get(id) === 'completed' ? ['hold', 'settle'] : ['hold', 'release']);
      const billing = new BillingService({ store: new RedisWalletStore({ client: redis.client(), prefix: 'cr:' }) });
      for (const deadline = Date.now() + 30_000; (await billing.getWallet(tenantId)).held !== 0; ) {
        if (Date.now() > deadline) throw new Error('holds of unaccepted tasks were never released');
        await sleep(100);
      }
      const report = await billing.checkInvariant(tenantId);
      expect(report.ok, JSON.stringify(report)).to.equal(true);

      // Webhooks: at least once; after de-duplication by delivery id, exactly the expected set.
      const want = accepted.length * 2;
      const events = () => {
        const byDelivery = new Map(rx.requests.filter((r) => r.path === '/crash').map((r) => [String(r.headers['x-service-webhook-id']), JSON.parse(r.body.toString())]));
        return [...byDelivery.values()].filter((e) => accepted.includes(e.data.payload.task_info.id));
      };
      for (const deadline = Date.now() + 60_000; events().length < want && Date.now() < deadline; ) await sleep(100);
      for (const id of accepted) {
        expect(events().filter((e) => e.data.payload.task_info.id === id).map((e) => e.type).sort(), id).to.deep.equal(['task.created', states.get(id) === 'completed' ? 'task.succeeded' : 'task.failed']);
      }
    } finally {
      await Promise.allSettled([a.stop(), b.stop()]);
      await redis.stop();
    }
  });

  it('redis-server killed and restarted with AOF (appendfsync everysec): what was fsynced survives', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gw-aof-'));
    let redis = await startRedis({ aof: true, dir, args: ['--appendfsync', 'everysec'] });
    const config = writeConfig({ redisUrl: redis.url, prefix: 'aof', upstreamUrl: up.url, caPem: testPki().caPem });
    const gw = await spawnGateway(config, 'all');
    try {
      const { key } = await tenantWithKey(gw.url);
      const ids: string[] = [];
      for (let i = 0; i < 20; i++) ids.push((await call(gw.url, 'POST', IMAGES, { key, body: { prompt: `aof ${i}` } })).body.task_info.id);
      await sleep(1500); // more than one fsync interval
      redis.process.kill('SIGKILL');
      await sleep(300);
      redis = await startRedis({ aof: true, dir, port: redis.port, args: ['--appendfsync', 'everysec'] });
      // The gateway reconnects by itself; every task accepted before the last fsync finishes.
      const states = await waitTerminal(gw.url, key, ids, 60_000);
      expect([...states.values()].every((s) => s === 'completed')).to.equal(true);
      const after = await call(gw.url, 'POST', IMAGES, { key, body: { prompt: 'after restart' } });
      expect(after.status).to.equal(202);
    } finally {
      await gw.stop();
      await redis.stop();
    }
  });
});
