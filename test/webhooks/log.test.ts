import { expect } from 'chai';
import { ManualClock } from '../../engine/util/clock.ts';
import { verifyWebhook } from '../../engine/webhooks/signature.ts';
import { PURGE_QUEUE } from '../../engine/webhooks/dispatcher.ts';
import { isUuid } from '../../engine/util/ids.ts';
import { harness, stubPool, waitFor, taskData, expectLedgerBalanced, TENANT, type Harness } from './support/harness.ts';
import { Receiver, independentSignature } from './support/receiver.ts';
import { startApi, type TestApi } from './support/app.ts';

const OTHER_TENANT = '11111111-2222-4333-8444-555555555555';
const DAY = 86_400_000;

describe('webhook delivery log', function () {
  this.timeout(20_000);
  let h: Harness;
  let api: TestApi;
  let rx: Receiver | undefined;

  afterEach(async () => {
    await api?.close();
    await h?.shutdown();
    await rx?.close();
    rx = undefined;
  });

  it('lists deliveries per endpoint (paged, newest first) and per event, without bodies or tenant ids', async () => {
    h = harness({ pool: stubPool(), resolveHost: async () => [{ address: '93.184.216.34', family: 4 }] });
    api = await startApi(h);
    const a = (await api.call('POST', '/v1/webhooks/endpoints', { url: 'https://a.example.com/h', events: ['task.created'] })).body;
    const b = (await api.call('POST', '/v1/webhooks/endpoints', { url: 'https://b.example.com/h', events: ['task.created', 'task.failed'] })).body;
    const events = [];
    for (let i = 0; i < 5; i++) events.push(await h.bus.emit(TENANT, 'task.created', taskData('pending')));
    await waitFor(async () => (await h.store.deliveryStats(b.id)).succeeded === 5);

    const page1 = (await api.call('GET', `/v1/webhooks/endpoints/${a.id}/deliveries?limit=2`)).body;
    expect(page1.has_more).to.equal(true);
    expect(page1.data.map((d: { event_id: string }) => d.event_id)).to.deep.equal([events[4]!.id, events[3]!.id]);
    const page3 = (await api.call('GET', `/v1/webhooks/endpoints/${a.id}/deliveries?limit=2&starting_after=${(await api.call('GET', `/v1/webhooks/endpoints/${a.id}/deliveries?limit=4`)).body.data[3].id}`)).body;
    expect(page3.data.map((d: { event_id: string }) => d.event_id)).to.deep.equal([events[0]!.id]);
    expect(page3.has_more).to.equal(false);
    for (const d of page1.data) {
      expect(d).to.not.have.any.keys('body', 'tenant_id');
      expect(d).to.include({ endpoint_id: a.id, event_type: 'task.created', status: 'succeeded', attempt_count: 1, test: false });
    }

    const byEvent = (await api.call('GET', `/v1/events/${events[2]!.id}/deliveries`)).body;
    expect(byEvent.data.map((d: { endpoint_id: string }) => d.endpoint_id).sort()).to.deep.equal([a.id, b.id].sort());
    expect((await api.call('GET', `/v1/events/${events[2]!.id}/deliveries`, undefined, { tenant: OTHER_TENANT })).body.data).to.deep.equal([]);
    expect((await api.call('GET', '/v1/events/evt_unknown/deliveries')).body).to.deep.equal({ data: [], has_more: false });

    const detail = (await api.call('GET', `/v1/webhooks/deliveries/${byEvent.data[0].id}`)).body;
    expect(detail.payload).to.deep.equal({ id: events[2]!.id, type: 'task.created', created_at: events[2]!.created_at, data: events[2]!.data });
    expect(detail.attempts).to.have.length(1);
    expect(detail.attempts[0]).to.have.all.keys('series', 'attempt', 'at', 'status_code', 'latency_ms', 'error', 'next_attempt_at');
    expect((await api.call('GET', `/v1/webhooks/deliveries/${byEvent.data[0].id}`, undefined, { tenant: OTHER_TENANT })).status).to.equal(404);
  });

  it('re-sends a finished delivery by hand: same delivery id and body, a new attempt series', async () => {
    rx = await Receiver.start((r) => ({ status: r.n <= 2 ? 500 : 200 }));
    h = harness({ config: { retry_schedule_ms: [400] } });
    api = await startApi(h);
    const ep = await h.endpoints.create(TENANT, { url: rx.url(), events: ['task.succeeded'] });
    const event = await h.bus.emit(TENANT, 'task.succeeded', taskData('completed'));
    const id = (await h.store.listDeliveriesByEvent(TENANT, event.id, { limit: 1 })).data[0]!.id;

    await waitFor(() => rx!.requests.length === 1);
    const busy = await api.call('POST', `/v1/webhooks/deliveries/${id}/resend`);
    expect(busy.status).to.equal(409); // still retrying
    await waitFor(async () => (await h.store.getDelivery(id))?.status === 'failed', 5000, 'failed');

    const res = await api.call('POST', `/v1/webhooks/deliveries/${id}/resend`);
    expect(res.status).to.equal(202);
    expect(res.body).to.include({ id, status: 'pending', series: 2 });
    await waitFor(async () => (await h.store.getDelivery(id))?.status === 'succeeded', 5000, 'succeeded');

    const detail = (await api.call('GET', `/v1/webhooks/deliveries/${id}`)).body;
    expect(detail.attempts.map((a: { series: number; attempt: number; status_code: number }) => [a.series, a.attempt, a.status_code])).to.deep.equal([
      [1, 1, 500], [1, 2, 500], [2, 1, 200],
    ]);
    expect(detail).to.include({ attempt_count: 3, status: 'succeeded', last_status_code: 200 });
    expect(rx.requests.map((r) => r.headers['x-service-webhook-id'])).to.deep.equal([id, id, id]);
    expect(rx.requests[2]!.body.equals(rx.requests[0]!.body)).to.equal(true);
    verifyWebhook(rx.requests[2]!.body, rx.requests[2]!.headers, ep.secret);

    // A succeeded delivery can be re-sent too; one whose endpoint is gone cannot.
    expect((await api.call('POST', `/v1/webhooks/deliveries/${id}/resend`)).status).to.equal(202);
    await waitFor(() => rx!.requests.length === 4);
    await waitFor(async () => (await h.store.getDelivery(id))?.status === 'succeeded');
    await h.endpoints.delete(TENANT, ep.id);
    const orphan = await api.call('POST', `/v1/webhooks/deliveries/${id}/resend`);
    expect(orphan.status).to.equal(409);
    expect(orphan.body.detail).to.match(/deleted/);
    expect((await h.store.deliveryStats(ep.id)).created).to.equal(1);
  });

  it('delivers a test event (evt_test_, task.succeeded, realistic payload) to that one endpoint', async () => {
    rx = await Receiver.start();
    h = harness();
    const target = await h.endpoints.create(TENANT, { url: rx.url('/target'), events: ['task.failed'] });
    await h.endpoints.create(TENANT, { url: rx.url('/other'), events: ['task.succeeded'] });
    const { event, delivery } = await h.endpoints.sendTestEvent(TENANT, target.id);
    await waitFor(() => rx!.requests.length === 1);
    await waitFor(async () => (await h.store.getDelivery(delivery.id))?.status === 'succeeded');

    const r = rx.requests[0]!;
    expect(r.path).to.equal('/target');
    expect(r.headers['x-service-webhook-signature']).to.equal(
      independentSignature(target.secret, delivery.id, r.headers['x-service-webhook-timestamp'] as string, r.body),
    );
    const body = verifyWebhook(r.body, r.headers, target.secret) as {
      id: string; type: string; created_at: string;
      data: { vendor: string; model_name: string; payload: { task_info: Record<string, string>; images: string[] } };
    };
    expect(body.id).to.equal(event.id).and.match(/^evt_test_[0-9A-Za-z]{24}$/);
    expect(body.type).to.equal('task.succeeded');
    expect(body.data.vendor).to.be.a('string').and.not.empty;
    expect(body.data.model_name).to.be.a('string').and.not.empty;
    const info = body.data.payload.task_info;
    expect(isUuid(info.id!)).to.equal(true);
    expect(info.status).to.equal('completed');
    expect(Date.parse(info.created_at!)).to.be.below(Date.parse(info.updated_at!));
    expect(body.data.payload.images.length).to.be.at.least(1);
    for (const url of body.data.payload.images) expect(url).to.match(/^https:\/\//);
    expect((await h.store.getDelivery(delivery.id))?.test).to.equal(true);
    // Test events never go through the bus, so no other endpoint saw it.
    expect(rx.requests.filter((x) => x.path === '/other')).to.have.length(0);
  });

  describe('retention', () => {
    it('purges deliveries and attempts older than 30 days (ManualClock)', async () => {
      const clock = new ManualClock(Date.parse('2026-01-01T00:00:00Z'));
      h = harness({ clock, pool: stubPool(), resolveHost: async () => [{ address: '93.184.216.34', family: 4 }] });
      const ep = await h.endpoints.create(TENANT, { url: 'https://a.example.com/h', events: ['task.created'] });
      const old = await h.bus.emit(TENANT, 'task.created', taskData('pending'));
      await waitFor(async () => (await h.store.deliveryStats(ep.id)).succeeded === 1);
      const oldId = (await h.store.listDeliveriesByEvent(TENANT, old.id, { limit: 1 })).data[0]!.id;
      expect(await h.store.listAttempts(oldId)).to.have.length(1);

      clock.advance(20 * DAY);
      const recent = await h.bus.emit(TENANT, 'task.created', taskData('pending'));
      await waitFor(async () => (await h.store.deliveryStats(ep.id)).succeeded === 2);

      clock.advance(10 * DAY); // exactly 30 days after the first: still kept
      expect(await h.dispatcher.purgeExpired()).to.equal(0);
      clock.advance(1);
      expect(await h.dispatcher.purgeExpired()).to.equal(1);
      expect(await h.store.getDelivery(oldId)).to.equal(null);
      expect(await h.store.listAttempts(oldId)).to.deep.equal([]);
      expect((await h.store.listDeliveriesByEndpoint(TENANT, ep.id, { limit: 10 })).data.map((d) => d.event_id)).to.deep.equal([recent.id]);
      let notFound: unknown;
      await h.deliveries.get(TENANT, oldId).catch((e) => (notFound = e));
      expect(notFound).to.have.property('code', 2005);
      expect(h.logs.some((l) => l.msg === 'webhook deliveries purged' && (l.obj as { removed: number }).removed === 1)).to.equal(true);
    });

    it('runs the purge as a recurring scheduler job, honouring retention_days', async () => {
      const clock = new ManualClock(Date.parse('2026-03-01T00:00:00Z'));
      h = harness({ clock, pool: stubPool(), resolveHost: async () => [{ address: '93.184.216.34', family: 4 }], config: { retention_days: 7, purge_interval_ms: 20 } });
      const ep = await h.endpoints.create(TENANT, { url: 'https://a.example.com/h', events: ['task.created'] });
      await h.bus.emit(TENANT, 'task.created', taskData('pending'));
      await waitFor(async () => (await h.store.deliveryStats(ep.id)).succeeded === 1);
      await h.dispatcher.startPurgeSchedule();
      await waitFor(() => h.scheduler.scheduled.filter((s) => s.queue === PURGE_QUEUE).length >= 3, 2000, 'purge job to recur');
      expect((await h.store.listDeliveriesByEndpoint(TENANT, ep.id, { limit: 10 })).data).to.have.length(1);

      clock.advance(7 * DAY + 1);
      await waitFor(async () => (await h.store.listDeliveriesByEndpoint(TENANT, ep.id, { limit: 10 })).data.length === 0, 2000, 'purged');
      expect(h.jobErrors).to.deep.equal([]);
      expect(await expectLedgerBalanced(h, ep.id)).to.deep.equal({ created: 1, pending: 0, succeeded: 0, failed: 0, purged: 1 });
    });
  });
});
