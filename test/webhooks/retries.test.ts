import { expect } from 'chai';
import { harness, waitFor, taskData, expectLedgerBalanced, TENANT, type Harness } from './support/harness.ts';
import { Receiver } from './support/receiver.ts';
import { ATTEMPT_QUEUE } from '../../engine/webhooks/dispatcher.ts';
import type { DeliveryRecord } from '../../engine/webhooks/store.ts';

const SPEC_SCHEDULE = [15_000, 60_000, 300_000, 1_800_000, 3_600_000];

describe('webhook retries', function () {
  this.timeout(20_000);
  let h: Harness;
  let rx: Receiver;

  afterEach(async () => {
    await h?.shutdown();
    await rx?.close();
  });

  const only = async (eventId: string): Promise<DeliveryRecord> =>
    (await h.store.listDeliveriesByEvent(TENANT, eventId, { limit: 10 })).data[0]!;
  const settled = (eventId: string) =>
    waitFor(async () => {
      const d = await only(eventId);
      return d && d.status !== 'pending' && d;
    }, 10_000, 'delivery to settle');
  // Attempts as scheduled; not a send that started too late for its rate-limit slot and was
  // planned again (`.m<n>` ids, see dispatcher.ts): a machine this loaded may stall the event
  // loop past a slot's margin.
  const attemptDelays = () => h.scheduler.scheduled.filter((s) => s.queue === ATTEMPT_QUEUE && !/\.m\d+$/.test(s.jobId)).map((s) => s.delayMs);
  const gaps = () => rx.requests.slice(1).map((r, i) => r.at - rx.requests[i]!.at);

  it('uses the spec schedule by default: 15 s, 1 min, 5 min, 30 min, 1 h (6 attempts)', async () => {
    h = harness();
    expect(h.config.retry_schedule_ms).to.deep.equal(SPEC_SCHEDULE);
    expect(h.config.timeout_ms).to.equal(30_000);
    expect(h.config.rate_limit_per_minute).to.equal(600);
  });

  it('a receiver failing 3 times then succeeding gets exactly 4 attempts at the scaled offsets', async () => {
    rx = await Receiver.start((r) => ({ status: r.n <= 3 ? 500 : 200 }));
    h = harness({ config: { time_scale: 0.002, timeout_ms: 1_000_000 } }); // 30 ms, 120 ms, 600 ms, ...; 2 s timeout
    const ep = await h.endpoints.create(TENANT, { url: rx.url(), events: ['task.created'] });
    const event = await h.bus.emit(TENANT, 'task.created', taskData('pending'));

    const d = await settled(event.id);
    expect(d.status).to.equal('succeeded');
    expect(d.attempt_count).to.equal(4);
    expect(rx.requests).to.have.length(4);
    expect(attemptDelays()).to.deep.equal([0, 30, 120, 600]); // no 5th attempt was scheduled
    const expected = [30, 120, 600];
    gaps().forEach((gap, i) => {
      expect(gap, `gap ${i + 1}`).to.be.at.least(expected[i]! - 1);
      expect(gap, `gap ${i + 1}`).to.be.below(expected[i]! + 150);
    });

    const attempts = await h.store.listAttempts(d.id);
    expect(attempts.map((a) => [a.attempt, a.status_code, a.error])).to.deep.equal([
      [1, 500, 'HTTP 500'], [2, 500, 'HTTP 500'], [3, 500, 'HTTP 500'], [4, 200, null],
    ]);
    attempts.slice(0, 3).forEach((a, i) => {
      // The delay runs from the end of the failed attempt.
      expect(Date.parse(a.next_attempt_at!) - Date.parse(a.at) - a.latency_ms).to.be.within(expected[i]! - 2, expected[i]! + 50);
    });
    expect(attempts[3]!.next_attempt_at).to.equal(null);
    for (const a of attempts) expect(a.latency_ms).to.be.a('number').and.at.least(0);
    expect(await expectLedgerBalanced(h, ep.id)).to.deep.equal({ created: 1, pending: 0, succeeded: 1, failed: 0, purged: 0 });
  });

  it('a receiver that always fails gets 6 attempts, then the delivery is failed', async () => {
    rx = await Receiver.start(() => ({ status: 503 }));
    h = harness({ config: { time_scale: 0.0002, timeout_ms: 5_000_000 } }); // 3, 12, 60, 360, 720 ms
    const ep = await h.endpoints.create(TENANT, { url: rx.url(), events: ['task.failed'] });
    const event = await h.bus.emit(TENANT, 'task.failed', taskData('failed'));

    const pendingSeen = await waitFor(async () => (await only(event.id)).attempt_count >= 2 && (await expectLedgerBalanced(h, ep.id)));
    expect(pendingSeen.pending).to.equal(1);

    const d = await settled(event.id);
    expect(d).to.include({ status: 'failed', attempt_count: 6, last_status_code: 503, next_attempt_at: null });
    expect(rx.requests).to.have.length(6);
    expect(attemptDelays()).to.deep.equal([0, 3, 12, 60, 360, 720]);
    [3, 12, 60, 360, 720].forEach((ms, i) => expect(gaps()[i], `gap ${i + 1}`).to.be.at.least(ms - 1).and.below(ms + 150));
    const attempts = await h.store.listAttempts(d.id);
    expect(attempts.map((a) => a.attempt)).to.deep.equal([1, 2, 3, 4, 5, 6]);
    expect(attempts[5]!.next_attempt_at).to.equal(null);
    expect(await expectLedgerBalanced(h, ep.id)).to.deep.equal({ created: 1, pending: 0, succeeded: 0, failed: 1, purged: 0 });
    expect(h.logs.some((l) => l.level === 'warn' && l.msg === 'webhook delivery failed')).to.equal(true);
  });

  it('a response slower than the (scaled) timeout is a failed attempt', async () => {
    rx = await Receiver.start((r) => ({ status: 200, delayMs: r.n === 1 ? 1500 : 0 }));
    h = harness({ config: { time_scale: 0.01, timeout_ms: 300 } }); // timeout 300 ms (below the 1 s floor of scaling: kept), first retry after 150 ms
    await h.endpoints.create(TENANT, { url: rx.url(), events: ['task.created'] });
    const event = await h.bus.emit(TENANT, 'task.created', taskData('pending'));
    const d = await settled(event.id);
    expect(d).to.include({ status: 'succeeded', attempt_count: 2 });
    const [first, second] = await h.store.listAttempts(d.id);
    expect(first).to.include({ status_code: null, error: 'timeout: no response within 300 ms' });
    expect(first!.latency_ms).to.be.within(290, 1000);
    expect(second).to.include({ status_code: 200, error: null });
  });

  it('a 3xx is a failed attempt and the redirect is never followed', async () => {
    rx = await Receiver.start((r) => (r.path === '/landing' ? { status: 200 } : { status: r.n === 1 ? 302 : 307, headers: { location: '/landing' } }));
    h = harness({ config: { retry_schedule_ms: [20] } });
    await h.endpoints.create(TENANT, { url: rx.url('/hook'), events: ['task.created'] });
    const event = await h.bus.emit(TENANT, 'task.created', taskData('pending'));
    const d = await settled(event.id);
    expect(d).to.include({ status: 'failed', attempt_count: 2 });
    const attempts = await h.store.listAttempts(d.id);
    expect(attempts.map((a) => [a.status_code, a.error])).to.deep.equal([
      [302, 'redirect (HTTP 302) not followed'],
      [307, 'redirect (HTTP 307) not followed'],
    ]);
    expect(rx.requests.map((r) => r.path)).to.deep.equal(['/hook', '/hook']);
  });

  it('a 410 disables the endpoint, ends its deliveries and says so in the log', async () => {
    rx = await Receiver.start((r) => ({ status: JSON.parse(r.body.toString()).type === 'task.failed' ? 410 : 500 }));
    h = harness({ config: { retry_schedule_ms: [250, 250] } });
    const ep = await h.endpoints.create(TENANT, { url: rx.url(), events: ['task.created', 'task.failed'] });
    const retrying = await h.bus.emit(TENANT, 'task.created', taskData('pending')); // 500, will retry
    await waitFor(async () => (await only(retrying.id)).attempt_count === 1);
    const gone = await h.bus.emit(TENANT, 'task.failed', taskData('failed')); // 410

    const d = await settled(gone.id);
    expect(d).to.include({ status: 'failed', attempt_count: 1, last_status_code: 410 });
    const [attempt] = await h.store.listAttempts(d.id);
    expect(attempt!.error).to.equal('HTTP 410 Gone: endpoint disabled (endpoint_gone), no further attempts');
    expect(attempt!.next_attempt_at).to.equal(null);
    expect(await h.endpoints.get(TENANT, ep.id)).to.include({ enabled: false, disabled_reason: 'endpoint_gone' });
    const warn = h.logs.find((l) => l.level === 'warn' && /410/.test(l.msg ?? ''));
    expect(warn?.msg).to.equal('webhook endpoint answered 410 Gone; endpoint disabled');

    // The other pending delivery ends at its next attempt without calling the receiver again.
    const other = await settled(retrying.id);
    expect(other).to.include({ status: 'failed', attempt_count: 1, failure_reason: 'endpoint disabled (endpoint_gone)' });
    // New events no longer fan out to the disabled endpoint.
    const later = await h.bus.emit(TENANT, 'task.created', taskData('pending'));
    expect((await h.store.listDeliveriesByEvent(TENANT, later.id, { limit: 10 })).data).to.have.length(0);
    expect(rx.requests).to.have.length(2);
    expect(await expectLedgerBalanced(h, ep.id)).to.deep.equal({ created: 2, pending: 0, succeeded: 0, failed: 2, purged: 0 });
  });
});
