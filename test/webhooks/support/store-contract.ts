// The behaviour every WebhookStore adapter must show. Run against memory now; the Redis
// adapter will run the same suite.
import { expect } from 'chai';
import type { DeliveryRecord, EndpointRecord, WebhookStore } from '../../../engine/webhooks/store.ts';

const T1 = 'tenant-1';
const T2 = 'tenant-2';

export function endpointRecord(id: string, tenant = T1): EndpointRecord {
  return {
    id, tenant_id: tenant, url: `https://hooks.example.com/${id}`, events: ['task.created'], description: null,
    enabled: true, disabled_reason: null, secret: 'whsec_abcdefghijklmnopqrstuvwxyz012345', secret_preview: 'whsec_...2345',
    created_at: '2026-01-01T00:00:00.000Z', updated_at: '2026-01-01T00:00:00.000Z',
  };
}

export function deliveryRecord(id: string, over: Partial<DeliveryRecord> = {}): DeliveryRecord {
  return {
    id, tenant_id: T1, endpoint_id: 'we_1', event_id: `evt_${id}`, event_type: 'task.created', test: false, truncated: false,
    body: '{"id":"evt"}', status: 'pending', series: 1, attempt_count: 0, last_status_code: null, last_error: null,
    next_attempt_at: null, failure_reason: null, created_at: '2026-01-01T00:00:00.000Z', updated_at: '2026-01-01T00:00:00.000Z',
    ...over,
  };
}

const attempt = (delivery_id: string, series = 1, n = 1) => ({
  delivery_id, series, attempt: n, at: '2026-01-01T00:00:01.000Z', status_code: 500, latency_ms: 3, error: 'HTTP 500', next_attempt_at: null,
});

export function webhookStoreContract(name: string, make: () => WebhookStore): void {
  describe(`WebhookStore contract: ${name}`, () => {
    let store: WebhookStore;
    beforeEach(() => {
      store = make();
    });

    it('creates endpoints up to the limit, per tenant, even when racing', async () => {
      const results = await Promise.all([1, 2, 3, 4, 5, 6, 7].map((i) => store.createEndpointIfUnderLimit(endpointRecord(`we_${i}`), 5)));
      expect(results.filter(Boolean)).to.have.length(5);
      expect(await store.listEndpoints(T1)).to.have.length(5);
      expect(await store.createEndpointIfUnderLimit(endpointRecord('we_other', T2), 5)).to.equal(true);
    });

    it('scopes endpoints to their tenant', async () => {
      await store.createEndpointIfUnderLimit(endpointRecord('we_1'), 5);
      expect(await store.getEndpoint(T2, 'we_1')).to.equal(null);
      expect(await store.updateEndpoint(T2, 'we_1', { enabled: false, updated_at: 'x' })).to.equal(null);
      expect(await store.deleteEndpoint(T2, 'we_1')).to.equal(false);
      expect((await store.getEndpoint(T1, 'we_1'))?.enabled).to.equal(true);
    });

    it('patches endpoints and returns copies the caller cannot mutate', async () => {
      await store.createEndpointIfUnderLimit(endpointRecord('we_1'), 5);
      const updated = await store.updateEndpoint(T1, 'we_1', { description: 'hi', updated_at: '2026-01-02T00:00:00.000Z' });
      expect(updated?.description).to.equal('hi');
      updated!.events.push('balance.low');
      expect((await store.getEndpoint(T1, 'we_1'))?.events).to.deep.equal(['task.created']);
      expect(await store.deleteEndpoint(T1, 'we_1')).to.equal(true);
      expect(await store.listEndpoints(T1)).to.deep.equal([]);
    });

    it('keeps one delivery per (event, endpoint)', async () => {
      const first = await store.createDelivery(deliveryRecord('whd_a', { event_id: 'evt_1' }));
      const again = await store.createDelivery(deliveryRecord('whd_b', { event_id: 'evt_1' }));
      expect(first.created).to.equal(true);
      expect(again.created).to.equal(false);
      expect(again.delivery.id).to.equal('whd_a');
      expect((await store.createDelivery(deliveryRecord('whd_c', { event_id: 'evt_1', endpoint_id: 'we_2' }))).created).to.equal(true);
      expect((await store.deliveryStats('we_1')).created).to.equal(1);
    });

    it('records attempts only for the current series of a pending delivery', async () => {
      await store.createDelivery(deliveryRecord('whd_a'));
      const out = { status: 'pending' as const, next_attempt_at: '2026-01-01T00:00:16.000Z', updated_at: 'u1' };
      const d1 = await store.recordAttempt(attempt('whd_a'), out);
      expect(d1).to.include({ attempt_count: 1, last_status_code: 500, last_error: 'HTTP 500', status: 'pending' });
      expect(await store.recordAttempt(attempt('whd_a', 2), out)).to.equal(null); // stale series
      await store.recordAttempt(attempt('whd_a', 1, 2), { status: 'failed', next_attempt_at: null, updated_at: 'u2' });
      expect(await store.recordAttempt(attempt('whd_a', 1, 3), out)).to.equal(null); // finished
      expect((await store.listAttempts('whd_a')).map((a) => a.attempt)).to.deep.equal([1, 2]);
    });

    it('re-sends only finished deliveries, starting a new series', async () => {
      await store.createDelivery(deliveryRecord('whd_a'));
      expect(await store.beginResend(T1, 'whd_a', 'u')).to.equal(null); // still pending
      await store.failDelivery('whd_a', 1, 'endpoint deleted', 'u');
      expect(await store.beginResend(T2, 'whd_a', 'u')).to.equal(null); // other tenant
      const again = await store.beginResend(T1, 'whd_a', 'u2');
      expect(again).to.include({ status: 'pending', series: 2, failure_reason: null });
      expect(await store.beginResend(T1, 'whd_a', 'u3')).to.equal(null); // only one at a time
    });

    it('pages deliveries newest first with a cursor, per endpoint and per event', async () => {
      const rows: Array<[string, string]> = [['evt_A', 'we_1'], ['evt_B', 'we_1'], ['evt_A', 'we_2'], ['evt_C', 'we_1'], ['evt_D', 'we_1'], ['evt_A', 'we_3']];
      for (const [i, [event_id, endpoint_id]] of rows.entries()) await store.createDelivery(deliveryRecord(`whd_${i}`, { event_id, endpoint_id }));
      const p1 = await store.listDeliveriesByEndpoint(T1, 'we_1', { limit: 3 });
      expect(p1.data.map((d) => d.id)).to.deep.equal(['whd_4', 'whd_3', 'whd_1']);
      expect(p1.has_more).to.equal(true);
      const p2 = await store.listDeliveriesByEndpoint(T1, 'we_1', { limit: 3, starting_after: 'whd_1' });
      expect(p2.data.map((d) => d.id)).to.deep.equal(['whd_0']);
      expect(p2.has_more).to.equal(false);
      const byEvent = await store.listDeliveriesByEvent(T1, 'evt_A', { limit: 10 });
      expect(byEvent.data.map((d) => d.id)).to.deep.equal(['whd_5', 'whd_2', 'whd_0']);
      expect((await store.listDeliveriesByEvent(T2, 'evt_A', { limit: 10 })).data).to.deep.equal([]);
    });

    it('purges deliveries and their attempts created before the cutoff', async () => {
      await store.createDelivery(deliveryRecord('whd_old', { created_at: '2026-01-01T00:00:00.000Z' }));
      await store.createDelivery(deliveryRecord('whd_new', { created_at: '2026-01-31T00:00:00.001Z' }));
      await store.recordAttempt(attempt('whd_old'), { status: 'failed', next_attempt_at: null, updated_at: 'u' });
      expect(await store.purgeDeliveriesBefore(Date.parse('2026-01-31T00:00:00.001Z'))).to.equal(1);
      expect(await store.deliveryStats('we_1')).to.deep.equal({ created: 2, pending: 1, succeeded: 0, failed: 0, purged: 1 });
      expect(await store.getDelivery('whd_old')).to.equal(null);
      expect(await store.listAttempts('whd_old')).to.deep.equal([]);
      expect((await store.listDeliveriesByEndpoint(T1, 'we_1', { limit: 10 })).data.map((d) => d.id)).to.deep.equal(['whd_new']);
      // The (event, endpoint) pair is free again once its delivery is gone.
      expect((await store.createDelivery(deliveryRecord('whd_x', { event_id: 'evt_whd_old' }))).created).to.equal(true);
    });

    it('hands out send slots so that no window holds more than max, in order', async () => {
      const W = 1000;
      const max = 3;
      const slots: number[] = [];
      for (let i = 0; i < 10; i++) slots.push(await store.reserveSendSlot('we_1', 500, W, max, 0));
      expect(slots).to.deep.equal([500, 500, 500, 1500, 1500, 1500, 2500, 2500, 2500, 3500]);
      // Time moving on frees slots; another endpoint has its own.
      expect(await store.reserveSendSlot('we_1', 10_000, W, max, 0)).to.equal(10_000);
      expect(await store.reserveSendSlot('we_2', 600, W, max, 0)).to.equal(600);
    });

    it('holds the window from a late reservation\'s latest start, and paces the next slot from its slot', async () => {
      const slots: number[] = [];
      for (const late of [0, 500, 0, 0, 0]) slots.push(await store.reserveSendSlot('we_1', 0, 1000, 3, 10, late));
      // 10 may start as late as 510: the slot three after it waits for 510 + window, not 10 + window.
      expect(slots).to.deep.equal([0, 10, 20, 1000, 1510]);
    });

    it('paces a burst: consecutive slots at least minGap apart', async () => {
      const slots: number[] = [];
      for (let i = 0; i < 5; i++) slots.push(await store.reserveSendSlot('we_1', 1000, 10_000, 100, 50));
      expect(slots).to.deep.equal([1000, 1050, 1100, 1150, 1200]);
      expect(await store.reserveSendSlot('we_1', 5000, 10_000, 100, 50)).to.equal(5000);
    });

    it('keeps the sliding-window bound for arbitrary arrival times', async () => {
      const W = 100;
      const max = 4;
      const slots: number[] = [];
      let now = 0;
      for (let i = 0; i < 300; i++) {
        now += (i * 7919) % 13; // irregular arrivals, sometimes simultaneous
        const s = await store.reserveSendSlot('we_1', now, W, max, 5);
        expect(s).to.be.at.least(now);
        slots.push(s);
      }
      for (let i = 0; i + max < slots.length; i++) expect(slots[i + max]! - slots[i]!).to.be.at.least(W);
      for (let i = 1; i < slots.length; i++) expect(slots[i]! - slots[i - 1]!).to.be.at.least(5);
    });
  });
}
