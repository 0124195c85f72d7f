import { expect } from 'chai';
import { LowBalanceMonitor } from '../../engine/billing/low-balance.ts';
import { applyLowBalance } from '../../engine/billing/store.ts';
import { BillingService } from '../../engine/billing/service.ts';
import { credits, expectLedgersConsistent, rig, type Rig } from './helpers.ts';

const T = '7d3f1c2a-0000-4000-8000-000000000001';
const HOUR = 3_600_000;

describe('billing/balance.low', () => {
  let r: Rig;
  let n = 0;
  /** A task of `c` credits held and settled in full. */
  const spend = async (tenant: string, c: number) => {
    const ref = `task_${++n}`;
    await r.billing.hold(tenant, ref, credits(c));
    await r.billing.settle(tenant, ref, credits(c));
  };
  const payloads = () => r.events.map((e) => (e.data.payload as Record<string, string>).available_balance);
  const state = async (tenant = T) => (await r.billing.getWallet(tenant)).state;

  beforeEach(() => {
    r = rig();
    r.subscribed.add(T);
  });
  afterEach(async () => {
    await expectLedgersConsistent(r.store);
  });

  it('fires on the settlement that takes available below the threshold, with the spec data', async () => {
    await r.billing.topUp(T, credits(1500), 'pay_1');
    await spend(T, 400);
    expect(r.events).to.have.length(0); // 1100 >= 1000
    await spend(T, 100);
    expect(r.events).to.have.length(0); // exactly 1000.00 is not below
    await spend(T, 100);
    expect(r.events).to.have.length(1);
    const e = r.events[0]!;
    expect(e.type).to.equal('balance.low');
    expect(e.tenant_id).to.equal(T);
    expect(e.id).to.match(/^evt_/);
    expect(e.created_at).to.equal('2026-01-01T00:00:00.000Z');
    expect(e.data).to.deep.equal({
      user_id: T,
      payload: { available_balance: '900.00', trigger_threshold: '1000.00', currency: 'credits' },
    });
    expect(await state()).to.equal('ALERTED');
  });

  it('does not fire on a hold, only when the held funds are settled', async () => {
    await r.billing.topUp(T, credits(1500), 'pay_1');
    await r.billing.hold(T, 'task_a', credits(800)); // available 700, but only held
    expect(r.events).to.have.length(0);
    expect(await state()).to.equal('NORMAL');
    await r.billing.settle(T, 'task_a', credits(800));
    expect(payloads()).to.deep.equal(['700.00']);
  });

  it('a release never fires, and a settlement of 0 with available low does', async () => {
    await r.billing.topUp(T, credits(1200), 'pay_1');
    await r.billing.hold(T, 'task_a', credits(500));
    await r.billing.release(T, 'task_a');
    expect(r.events).to.have.length(0);
    await r.billing.hold(T, 'task_b', credits(300)); // available 900
    await r.billing.hold(T, 'task_c', credits(10));
    await r.billing.settle(T, 'task_c', 0); // a settlement happened while available is low
    expect(payloads()).to.deep.equal(['900.00']);
  });

  it('edge, silence, throttled reminder, recovery and an immediate fresh alert', async () => {
    await r.billing.topUp(T, credits(1100), 'pay_1');
    await spend(T, 200); // 900: edge
    expect(payloads()).to.deep.equal(['900.00']);

    await spend(T, 100); // 800: still low, within the window -> silent
    r.clock.advance(24 * HOUR - 1);
    await spend(T, 100); // 700: 1 ms before the window ends -> silent
    expect(r.events).to.have.length(1);
    expect(await state()).to.equal('ALERTED');

    r.clock.advance(1);
    await spend(T, 100); // 600: window over, still low, no recovery -> one reminder
    expect(payloads()).to.deep.equal(['900.00', '600.00']);
    await spend(T, 50); // right after the reminder -> silent again
    expect(r.events).to.have.length(2);

    await r.billing.topUp(T, credits(399), 'pay_2'); // 949: a top-up that stays below recovers nothing
    expect(await state()).to.equal('ALERTED');
    await r.billing.topUp(T, credits(51), 'pay_3'); // 1000.00: recovered (at the threshold counts)
    expect(await state()).to.equal('NORMAL');
    expect(r.events).to.have.length(2); // recovery emits nothing

    r.clock.advance(HOUR); // well within the throttle window of the last event
    await spend(T, 1); // 999: fresh drop -> at once
    expect(payloads()).to.deep.equal(['900.00', '600.00', '999.00']);
    expect(await state()).to.equal('ALERTED');
  });

  it('does not fire without a subscribed endpoint, and does not consume the edge', async () => {
    r.subscribed.delete(T);
    await r.billing.topUp(T, credits(1100), 'pay_1');
    await spend(T, 200);
    await spend(T, 100);
    expect(r.events).to.have.length(0);
    expect(await state()).to.equal('NORMAL');
    r.subscribed.add(T); // an endpoint subscribes while the balance is low
    await spend(T, 1);
    expect(payloads()).to.deep.equal(['799.00']);
    expect(await state()).to.equal('ALERTED');
  });

  it('fires on a synchronous charge (a settlement)', async () => {
    await r.billing.topUp(T, credits(1000), 'pay_1');
    await r.billing.charge(T, 'req_1', 1);
    expect(payloads()).to.deep.equal(['999.99']); // 999.999 rounds down
  });

  it('uses the per-tenant threshold override', async () => {
    await r.billing.setThreshold(T, credits(50));
    expect((await r.billing.getWallet(T)).threshold).to.equal(credits(50));
    await r.billing.topUp(T, credits(100), 'pay_1');
    await spend(T, 50); // 50: not below 50
    expect(r.events).to.have.length(0);
    await spend(T, 1);
    expect(r.events.map((e) => (e.data.payload as Record<string, string>).trigger_threshold)).to.deep.equal(['50.00']);
    await r.billing.setThreshold(T, null);
    expect((await r.billing.getWallet(T)).threshold).to.equal(credits(1000));
  });

  it('a lowered threshold counts as a recovery', async () => {
    await r.billing.topUp(T, credits(1000), 'pay_1');
    await spend(T, 100);
    expect(await state()).to.equal('ALERTED');
    await r.billing.setThreshold(T, credits(500));
    expect(await state()).to.equal('NORMAL');
  });

  it('a released hold that lifts available back over the threshold is a recovery', async () => {
    await r.billing.topUp(T, credits(1300), 'pay_1');
    await r.billing.hold(T, 'big', credits(400)); // available 900, balance 1300
    await spend(T, 10); // 890 -> alert
    expect(await state()).to.equal('ALERTED');
    await r.billing.release(T, 'big'); // 1290
    expect(await state()).to.equal('NORMAL');
    await spend(T, 300); // 990 -> fresh alert at once
    expect(payloads()).to.deep.equal(['890.00', '990.00']);
  });

  it('keeps each tenant on its own state', async () => {
    const U = 'tenant-u';
    r.subscribed.add(U);
    await r.billing.topUp(T, credits(1000), 'pay_1');
    await r.billing.topUp(U, credits(1000), 'pay_1');
    await spend(T, 1);
    await spend(U, 1);
    expect(r.events.map((e) => e.tenant_id)).to.deep.equal([T, U]);
    expect(r.events[1]!.data.user_id).to.equal(U);
  });

  it('parallel settlements crossing the threshold emit exactly one event', async () => {
    await r.billing.topUp(T, credits(1100), 'pay_1');
    for (let i = 0; i < 20; i++) await r.billing.hold(T, `p${i}`, credits(10));
    await Promise.all(Array.from({ length: 20 }, (_, i) => r.billing.settle(T, `p${i}`, credits(10))));
    expect(payloads()).to.deep.equal(['900.00']);
  });

  it('reports a failing emit or subscriber lookup without failing the settlement', async () => {
    const errors: unknown[] = [];
    const base = rig();
    const monitor = new LowBalanceMonitor({
      store: base.store,
      clock: base.clock,
      bus: { emit: async () => Promise.reject(new Error('dispatcher down')) },
      hasSubscriber: async () => true,
      onError: (err) => errors.push(err),
    });
    const billing = new BillingService({ store: base.store, clock: base.clock, lowBalance: monitor });
    await billing.topUp(T, credits(1000), 'pay_1');
    await billing.charge(T, 'req_1', credits(1));
    expect((errors[0] as Error).message).to.equal('dispatcher down');
    expect((await billing.getWallet(T)).balance).to.equal(credits(999));

    const lookupFails = new LowBalanceMonitor({
      store: base.store,
      clock: base.clock,
      bus: base.bus,
      hasSubscriber: async () => Promise.reject(new Error('endpoint store down')),
      onError: (err) => errors.push(err),
    });
    const billing2 = new BillingService({ store: base.store, clock: base.clock, lowBalance: lookupFails });
    await billing2.topUp('U', credits(1000), 'pay_1');
    await billing2.charge('U', 'req_1', credits(1));
    expect((await billing2.getWallet('U')).state).to.equal('NORMAL'); // the edge is kept for the next settlement
    expect((errors[1] as Error).message).to.equal('endpoint store down');
    expect(base.events).to.have.length(0);
    await expectLedgersConsistent(base.store);
  });

  describe('applyLowBalance (the state machine every adapter implements)', () => {
    const w = (available: number, alertState: 'NORMAL' | 'ALERTED', lastAlertAt: number | null = null) => ({
      balance: available,
      held: 0,
      threshold: null,
      alertState,
      lastAlertAt,
    });
    const input = { trigger: 'settlement' as const, defaultThreshold: 100, subscribed: true, now: 1_000, throttleMs: 500 };
    const cases: [string, ReturnType<typeof w>, Partial<typeof input>, boolean, 'NORMAL' | 'ALERTED', number | null][] = [
      ['above: nothing', w(100, 'NORMAL'), {}, false, 'NORMAL', null],
      ['above while alerted: recovers', w(150, 'ALERTED', 900), {}, false, 'NORMAL', 900],
      ['below, normal: alerts', w(99, 'NORMAL', 999), {}, true, 'ALERTED', 1_000],
      ['below, credit trigger: nothing', w(99, 'NORMAL'), { trigger: 'credit' as never }, false, 'NORMAL', null],
      ['below, unsubscribed: edge kept', w(99, 'NORMAL'), { subscribed: false }, false, 'NORMAL', null],
      ['below, alerted within window: silent', w(50, 'ALERTED', 600), {}, false, 'ALERTED', 600],
      ['below, alerted, window over: reminder', w(50, 'ALERTED', 500), {}, true, 'ALERTED', 1_000],
      ['below, alerted, window over, unsubscribed: silent', w(50, 'ALERTED', 500), { subscribed: false }, false, 'ALERTED', 500],
    ];
    for (const [name, wallet, over, alert, st, last] of cases) {
      it(name, () => {
        const out = applyLowBalance(wallet, { ...input, ...over });
        expect([out.decision.alert, out.alertState, out.lastAlertAt]).to.deep.equal([alert, st, last]);
      });
    }
  });
});
