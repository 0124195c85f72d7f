// The WebhookStore contract (test/webhooks/support/store-contract.ts) on every backend, plus
// races over two connections, the stats ledger, batched purges and (Redis) key hygiene/memory.
import { expect } from 'chai';
import { MemoryWebhookStore } from '../../engine/store/memory/webhooks.ts';
import { RedisWebhookStore } from '../../engine/store/redis/webhooks.ts';
import type { AttemptOutcome, WebhookStore } from '../../engine/webhooks/store.ts';
import { deliveryRecord, endpointRecord, webhookStoreContract } from '../webhooks/support/store-contract.ts';
import { forEachBackend, keysUnder } from './support.ts';

const T1 = 'tenant-1';
const attempt = (delivery_id: string, series = 1, n = 1, status_code: number | null = 500) => ({
  delivery_id, series, attempt: n, at: '2026-01-01T00:00:01.000Z', status_code, latency_ms: 3, error: status_code === 200 ? null : 'HTTP 500', next_attempt_at: null,
});
const out = (status: AttemptOutcome['status']): AttemptOutcome => ({ status, next_attempt_at: null, updated_at: '2026-01-01T00:00:02.000Z' });
const at = (ms: number) => new Date(Date.parse('2026-01-01T00:00:00.000Z') + ms).toISOString();

forEachBackend('WebhookStore', (env) => {
  webhookStoreContract(env.backend, () => env.pair<WebhookStore>(() => new MemoryWebhookStore(), (client, p) => new RedisWebhookStore({ client, prefix: p })).a);

  describe('races, stats and purges', () => {
    let a: WebhookStore;
    let b: WebhookStore;
    let prefix: string;
    beforeEach(() => {
      ({ a, b, prefix } = env.pair<WebhookStore>(() => new MemoryWebhookStore(), (client, p) => new RedisWebhookStore({ client, prefix: p })));
    });

    it('race: 7 endpoint creations on two connections, limit 5', async () => {
      const rs = await Promise.all([1, 2, 3, 4, 5, 6, 7].map((i) => (i % 2 ? a : b).createEndpointIfUnderLimit(endpointRecord(`we_${i}`), 5)));
      expect(rs.filter(Boolean)).to.have.length(5);
      expect(await b.listEndpoints(T1)).to.have.length(5);
      const refused = [1, 2, 3, 4, 5, 6, 7].filter((_, i) => !rs[i]).map((i) => `we_${i}`);
      for (const id of refused) expect(await a.getEndpoint(T1, id)).to.equal(null);
      // deleting one makes room for exactly one more
      await a.deleteEndpoint(T1, (await a.listEndpoints(T1))[0]!.id);
      const again = await Promise.all([8, 9, 10].map((i) => (i % 2 ? a : b).createEndpointIfUnderLimit(endpointRecord(`we_${i}`), 5)));
      expect(again.filter(Boolean)).to.have.length(1);
    });

    it('race: 10 deliveries of one (event, endpoint) on two connections: one is created, all get it', async () => {
      const rs = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 ? a : b).createDelivery(deliveryRecord(`whd_${i}`, { event_id: 'evt_1' }))));
      expect(rs.filter((r) => r.created)).to.have.length(1);
      const id = rs.find((r) => r.created)!.delivery.id;
      expect(rs.every((r) => r.delivery.id === id)).to.equal(true);
      for (let i = 0; i < 10; i++) expect((await a.getDelivery(`whd_${i}`))?.id ?? null).to.equal(`whd_${i}` === id ? id : null);
      expect(await b.deliveryStats('we_1')).to.deep.equal({ created: 1, pending: 1, succeeded: 0, failed: 0, purged: 0 });
    });

    it('race: attempts, a failure and re-sends of one delivery on two connections: each state change once', async () => {
      await a.createDelivery(deliveryRecord('whd_a'));
      const rs = await Promise.all([
        ...Array.from({ length: 8 }, (_, i) => (i % 2 ? a : b).recordAttempt(attempt('whd_a', 1, 1, 200), out('succeeded'))),
        a.failDelivery('whd_a', 1, 'endpoint deleted', 'u'),
        b.failDelivery('whd_a', 1, 'endpoint deleted', 'u'),
      ]);
      expect(rs.filter((r) => r !== null)).to.have.length(1);
      const final = (await b.getDelivery('whd_a'))!;
      expect(['succeeded', 'failed']).to.include(final.status);
      expect((await a.listAttempts('whd_a')).length).to.equal(final.status === 'succeeded' ? 1 : 0);
      const resends = await Promise.all(Array.from({ length: 6 }, (_, i) => (i % 2 ? a : b).beginResend(T1, 'whd_a', `r${i}`)));
      expect(resends.filter((r) => r !== null)).to.have.length(1);
      expect(await a.getDelivery('whd_a')).to.include({ status: 'pending', series: 2 });
      expect(await a.deliveryStats('we_1')).to.deep.equal({ created: 1, pending: 1, succeeded: 0, failed: 0, purged: 0 });
    });

    it('attempts update the delivery: count, last status/error, outcome; stats follow every change', async () => {
      await a.createDelivery(deliveryRecord('whd_a'));
      await a.createDelivery(deliveryRecord('whd_b', { event_id: 'evt_2' }));
      await a.createDelivery(deliveryRecord('whd_c', { event_id: 'evt_3' }));
      const d = await b.recordAttempt(attempt('whd_a', 1, 1, null), { status: 'pending', next_attempt_at: at(16_000), updated_at: at(1_000) });
      expect(d).to.include({ attempt_count: 1, last_status_code: null, last_error: 'HTTP 500', next_attempt_at: at(16_000), updated_at: at(1_000), status: 'pending' });
      expect(await a.recordAttempt(attempt('whd_a', 1, 2, 200), out('succeeded'))).to.include({ attempt_count: 2, last_status_code: 200, last_error: null, status: 'succeeded' });
      await b.failDelivery('whd_b', 1, 'endpoint disabled', 'u');
      expect(await a.getDelivery('whd_b')).to.include({ status: 'failed', failure_reason: 'endpoint disabled', next_attempt_at: null });
      expect(await a.deliveryStats('we_1')).to.deep.equal({ created: 3, pending: 1, succeeded: 1, failed: 1, purged: 0 });
      await a.beginResend(T1, 'whd_a', 'u');
      expect(await b.deliveryStats('we_1')).to.deep.equal({ created: 3, pending: 2, succeeded: 0, failed: 1, purged: 0 });
      expect(await a.recordAttempt(attempt('whd_a', 1, 3), out('failed'))).to.equal(null); // old series
      await a.recordAttempt(attempt('whd_a', 2, 1, 200), out('succeeded'));
      expect((await a.listAttempts('whd_a')).map((x) => [x.series, x.attempt])).to.deep.equal([[1, 1], [1, 2], [2, 1]]);
      expect(await a.recordAttempt(attempt('whd_missing'), out('failed'))).to.equal(null);
      expect(await a.failDelivery('whd_missing', 1, 'x', 'u')).to.equal(null);
      expect(await a.listAttempts('whd_missing')).to.deep.equal([]);
      expect(await a.deliveryStats('we_unknown')).to.deep.equal({ created: 0, pending: 0, succeeded: 0, failed: 0, purged: 0 });
    });

    it('pages deliveries of an event with a cursor across pages', async () => {
      for (let i = 0; i < 7; i++) await a.createDelivery(deliveryRecord(`whd_${i}`, { event_id: 'evt_X', endpoint_id: `we_${i}` }));
      const p1 = await b.listDeliveriesByEvent(T1, 'evt_X', { limit: 3 });
      expect([p1.data.map((d) => d.id), p1.has_more]).to.deep.equal([['whd_6', 'whd_5', 'whd_4'], true]);
      const p2 = await b.listDeliveriesByEvent(T1, 'evt_X', { limit: 3, starting_after: 'whd_4' });
      expect([p2.data.map((d) => d.id), p2.has_more]).to.deep.equal([['whd_3', 'whd_2', 'whd_1'], true]);
      const p3 = await b.listDeliveriesByEvent(T1, 'evt_X', { limit: 3, starting_after: 'whd_1' });
      expect([p3.data.map((d) => d.id), p3.has_more]).to.deep.equal([['whd_0'], false]);
      expect(await b.listDeliveriesByEvent(T1, 'evt_X', { limit: 3, starting_after: 'whd_nope' })).to.deep.equal({ data: [], has_more: false });
      expect(await b.listDeliveriesByEndpoint(T1, 'we_1', { limit: 3, starting_after: 'whd_nope' })).to.deep.equal({ data: [], has_more: false });
    });

    it('purges hundreds of deliveries in batches, from two connections at once, counting each once', async () => {
      const N = 450;
      for (let i = 0; i < N; i++) {
        const old = i % 3 !== 0;
        const tenant = i % 5 === 0 ? 'tenant-2' : T1;
        await a.createDelivery(deliveryRecord(`whd_${i}`, { tenant_id: tenant, endpoint_id: tenant === T1 ? 'we_1' : 'we_9', event_id: `evt_${i}`, created_at: old ? at(i) : at(86_400_000 + i) }));
        if (i % 4 === 0) await a.recordAttempt(attempt(`whd_${i}`, 1, 1, 200), out('succeeded'));
      }
      const removed = await Promise.all([a.purgeDeliveriesBefore(Date.parse(at(86_400_000))), b.purgeDeliveriesBefore(Date.parse(at(86_400_000)))]);
      const expected = Array.from({ length: N }, (_, i) => i).filter((i) => i % 3 !== 0).length;
      expect(removed[0]! + removed[1]!).to.equal(expected);
      const s1 = await a.deliveryStats('we_1');
      const s9 = await b.deliveryStats('we_9');
      expect(s1.purged + s9.purged).to.equal(expected);
      for (const s of [s1, s9]) expect(s.created).to.equal(s.pending + s.succeeded + s.failed + s.purged);
      expect(s1.created + s9.created).to.equal(N);
      expect(await a.getDelivery('whd_1')).to.equal(null);
      expect(await a.getDelivery('whd_3')).to.include({ id: 'whd_3' });
      expect((await a.listDeliveriesByEndpoint(T1, 'we_1', { limit: 500 })).data).to.have.length(s1.pending + s1.succeeded + s1.failed);
      expect(await a.purgeDeliveriesBefore(Date.parse(at(86_400_000)))).to.equal(0);
    });

    it('race: 30 send slots reserved on two connections keep the window bound and the gap', async () => {
      const slots = await Promise.all(Array.from({ length: 30 }, (_, i) => (i % 2 ? a : b).reserveSendSlot('we_1', 1_000, 1_000, 4, 10)));
      const sorted = [...slots].sort((x, y) => x - y);
      expect(new Set(slots).size).to.equal(30);
      for (let i = 0; i + 4 < sorted.length; i++) expect(sorted[i + 4]! - sorted[i]!).to.be.at.least(1_000);
      for (let i = 1; i < sorted.length; i++) expect(sorted[i]! - sorted[i - 1]!).to.be.at.least(10);
      expect(sorted[0]).to.equal(1_000);
    });

    it('deleting an endpoint forgets its send slots', async () => {
      await a.createEndpointIfUnderLimit(endpointRecord('we_1'), 5);
      expect(await a.reserveSendSlot('we_1', 0, 1_000, 1, 0)).to.equal(0);
      expect(await a.reserveSendSlot('we_1', 0, 1_000, 1, 0)).to.equal(1_000);
      await b.deleteEndpoint(T1, 'we_1');
      expect(await a.reserveSendSlot('we_1', 0, 1_000, 1, 0)).to.equal(0);
    });

    if (env.isRedis) {
      it('redis: a purge leaves only counters and pointers of endpoints behind', async () => {
        await a.createEndpointIfUnderLimit(endpointRecord('we_1'), 5);
        for (let i = 0; i < 5; i++) {
          await a.createDelivery(deliveryRecord(`whd_${i}`, { event_id: `evt_${i % 3}`, endpoint_id: `we_${1 + (i % 2)}` }));
          await b.recordAttempt(attempt(`whd_${i}`), out('failed'));
        }
        expect(await a.purgeDeliveriesBefore(Date.parse(at(1)))).to.equal(5);
        const t = `${prefix}{t:${T1}}:`;
        expect(await keysUnder(env.a, prefix)).to.deep.equal([`${prefix}wh:tenants`, `${prefix}{we:we_1}`, `${prefix}{we:we_2}`, `${t}we`, `${t}we_ids`, `${t}wd_seq`, `${t}wst`].sort());
      });

      it('redis: a delivery with its attempts and index entries stays small', async () => {
        const body = JSON.stringify({ id: 'evt_9f8e7d6c5b4a39281706f5e4', type: 'task.succeeded', created_at: at(0), data: { task_info: { id: '9f8e7d6c-5b4a-4928-9706-f5e4d3c2b1a0', status: 'completed' }, images: ['https://cdn.example.com/o/9f8e7d6c/image_0.png'] } });
        const id = 'whd_9f8e7d6c5b4a39281706f5e4';
        await a.createDelivery(deliveryRecord(id, { event_id: 'evt_9f8e7d6c5b4a39281706f5e4', endpoint_id: 'we_ABCDEFGHIJKLMNOPQRSTUVWX', body }));
        for (let n = 1; n <= 3; n++) await a.recordAttempt(attempt(id, 1, n, n === 3 ? 200 : 500), out(n === 3 ? 'succeeded' : 'pending'));
        const t = `${prefix}{t:${T1}}:`;
        const usage = async (k: string) => Number(await env.a.call('MEMORY', 'USAGE', k, 'SAMPLES', '0'));
        const own = (await usage(`${t}wd:${id}`)) + (await usage(`${t}wa:${id}`)) + (await usage(`${prefix}{wd:${id}}`));
        expect(own - body.length).to.be.within(1, 1_536);
      });
    }
  });
});
