import { expect } from 'chai';
import { harness, stubPool, waitFor, taskData, expectLedgerBalanced, TENANT, type Harness } from './support/harness.ts';
import { createInProcessPool, type SendPool } from '../../engine/webhooks/pool.ts';
import { resolveWebhookConfig } from '../../engine/webhooks/config.ts';
import { ManualClock } from '../../engine/util/clock.ts';
import { verifyWebhook, WebhookVerificationError } from '../../engine/webhooks/signature.ts';
import { Receiver } from './support/receiver.ts';
import { testPki } from './support/pki.ts';

const publicDns = async () => [{ address: '93.184.216.34', family: 4 }];

describe('webhook dispatcher bookkeeping', function () {
  this.timeout(10_000);
  let h: Harness;
  afterEach(async () => h?.shutdown());

  it('maps an event published twice onto one delivery per endpoint', async () => {
    const pool = stubPool();
    h = harness({ pool, resolveHost: publicDns });
    const ep = await h.endpoints.create(TENANT, { url: 'https://a.example.com/h', events: ['task.created'] });
    const event = await h.bus.emit(TENANT, 'task.created', taskData('pending'));
    await h.bus.publish(event);
    await waitFor(async () => (await h.store.deliveryStats(ep.id)).succeeded === 1);
    expect(await expectLedgerBalanced(h, ep.id)).to.include({ created: 1 });
    expect(pool.calls).to.equal(1);
  });

  it('ignores endpoints of other tenants, disabled ones and other event types', async () => {
    const pool = stubPool();
    h = harness({ pool, resolveHost: publicDns });
    await h.endpoints.create(TENANT, { url: 'https://a.example.com/h', events: ['task.failed'] });
    await h.endpoints.create(TENANT, { url: 'https://a.example.com/h', events: ['task.created'], enabled: false });
    await h.endpoints.create('other-tenant', { url: 'https://a.example.com/h', events: ['task.created'] });
    const event = await h.bus.emit(TENANT, 'task.created', taskData('pending'));
    expect((await h.store.listDeliveriesByEvent(TENANT, event.id, { limit: 10 })).data).to.deep.equal([]);
    expect(pool.calls).to.equal(0);
  });

  it('ends a pending delivery whose endpoint was deleted or disabled meanwhile', async () => {
    h = harness({ pool: stubPool(() => ({ ok: false, status_code: 500, error: 'HTTP 500' })), resolveHost: publicDns, config: { retry_schedule_ms: [150] } });
    const gone = await h.endpoints.create(TENANT, { url: 'https://a.example.com/h', events: ['task.created'] });
    const paused = await h.endpoints.create(TENANT, { url: 'https://b.example.com/h', events: ['task.created'] });
    const event = await h.bus.emit(TENANT, 'task.created', taskData('pending'));
    await waitFor(async () => (await h.store.listDeliveriesByEvent(TENANT, event.id, { limit: 10 })).data.every((d) => d.attempt_count === 1));
    await h.endpoints.delete(TENANT, gone.id);
    await h.endpoints.update(TENANT, paused.id, { enabled: false });
    const done = await waitFor(async () => {
      const ds = (await h.store.listDeliveriesByEvent(TENANT, event.id, { limit: 10 })).data;
      return ds.every((d) => d.status === 'failed') && ds;
    });
    const reason = (id: string) => done.find((d) => d.endpoint_id === id)!.failure_reason;
    expect(reason(gone.id)).to.equal('endpoint deleted');
    expect(reason(paused.id)).to.equal('endpoint disabled (disabled_by_user)');
    expect(done.every((d) => d.attempt_count === 1)).to.equal(true);
  });

  it('counts a crashed worker as a failed attempt and retries', async () => {
    let n = 0;
    const pool: SendPool = {
      async ready() {},
      async run(task) {
        n += 1;
        if (n === 1) throw new Error('worker exited');
        return { ok: true, started_at: Date.now() + task.clockOffsetMs, status_code: 204, latency_ms: 2, error: null };
      },
      async destroy() {},
    };
    h = harness({ pool, resolveHost: publicDns, config: { retry_schedule_ms: [20] } });
    const ep = await h.endpoints.create(TENANT, { url: 'https://a.example.com/h', events: ['task.created'] });
    const event = await h.bus.emit(TENANT, 'task.created', taskData('pending'));
    const d = await waitFor(async () => {
      const x = (await h.store.listDeliveriesByEvent(TENANT, event.id, { limit: 1 })).data[0];
      return x?.status === 'succeeded' && x;
    });
    const attempts = await h.store.listAttempts(d.id);
    expect(attempts.map((a) => [a.status_code, a.error])).to.deep.equal([[null, 'internal: delivery worker failed'], [204, null]]);
    expect(h.logs.some((l) => l.level === 'error' && l.msg === 'webhook worker failed')).to.equal(true);
    expect(await expectLedgerBalanced(h, ep.id)).to.include({ created: 1, succeeded: 1 });
  });

  it('signs with the injected clock (in-process pool): the timestamp follows the gateway clock', async () => {
    const clock = new ManualClock(Date.parse('2030-06-01T12:00:00Z'));
    const rx = await Receiver.start();
    const pool = createInProcessPool(resolveWebhookConfig({ ca_pem: [testPki().caPem], allow_private_cidrs: ['127.0.0.1/32'] }));
    try {
      h = harness({ clock, pool });
      const ep = await h.endpoints.create(TENANT, { url: rx.url(), events: ['task.created'] });
      await h.bus.emit(TENANT, 'task.created', taskData('pending'));
      await waitFor(() => rx.requests.length === 1);
      const r = rx.requests[0]!;
      expect(r.headers['x-service-webhook-timestamp']).to.equal(String(Math.floor(clock.now() / 1000)));
      expect(() => verifyWebhook(r.body, r.headers, ep.secret, { now: () => clock.now() })).to.not.throw();
      expect(() => verifyWebhook(r.body, r.headers, ep.secret)).to.throw(WebhookVerificationError).with.property('reason', 'timestamp_skew');
      const d = await waitFor(async () => (await h.store.listDeliveriesByEndpoint(TENANT, ep.id, { limit: 1 })).data.find((x) => x.status === 'succeeded'));
      const [attempt] = await h.store.listAttempts(d.id);
      expect(Math.abs(Date.parse(attempt!.at) - clock.now())).to.be.below(1000);
    } finally {
      await h.shutdown();
      await pool.destroy();
      await rx.close();
    }
  });
});
