import { expect } from 'chai';
import { GatewayError } from '../../engine/errors/gateway-error.ts';
import { checkLedger } from '../../engine/billing/invariant.ts';
import { compilePricing } from '../../engine/descriptors/pricing.ts';
import { MoneyError } from '../../engine/util/money.ts';
import { credits, expectLedgersConsistent, rig, type Rig } from './helpers.ts';
import { rejection } from '../helpers/outcomes.ts';

const T = '7d3f1c2a-0000-4000-8000-000000000001';

describe('billing/service', () => {
  // Settle and release once per ref, charges, adjustments and tenants kept apart are in the
  // WalletStore contract (test/store/wallets.contract), which runs them on both stores.
  let r: Rig;
  beforeEach(() => {
    r = rig();
  });
  afterEach(async () => {
    await expectLedgersConsistent(r.store);
  });

  it('starts empty and credits a top-up', async () => {
    expect(await r.billing.getWallet(T)).to.deep.equal({ tenantId: T, balance: 0, held: 0, available: 0, state: 'NORMAL', threshold: credits(1000) });
    const e = await r.billing.topUp(T, credits(50), 'pay_1', 'card');
    expect(e).to.include({ kind: 'topup', amount: credits(50), ref: 'pay_1', note: 'card', seq: 1, at: '2026-01-01T00:00:00.000Z' });
    expect(e.id).to.match(/^led_/);
    expect(await r.billing.getWallet(T)).to.include({ balance: credits(50), held: 0, available: credits(50) });
  });

  it('credits a top-up once per ref', async () => {
    const first = await r.billing.topUp(T, credits(10), 'pay_1');
    const again = await r.billing.topUp(T, credits(10), 'pay_1');
    expect(again.id).to.equal(first.id);
    expect((await r.billing.getWallet(T)).balance).to.equal(credits(10));
  });

  it('holds: available drops, balance stays, one hold entry', async () => {
    await r.billing.topUp(T, credits(100), 'pay_1');
    const h = await r.billing.hold(T, 'task_1', credits(34));
    expect(h).to.deep.equal({ ref: 'task_1', amount: credits(34), duplicate: false, open: true });
    expect(await r.billing.getWallet(T)).to.include({ balance: credits(100), held: credits(34), available: credits(66) });
    const page = await r.billing.listLedger(T);
    expect(page.entries.map((e) => [e.kind, e.amount, e.ref])).to.deep.equal([
      ['hold', credits(34), 'task_1'],
      ['topup', credits(100), 'pay_1'],
    ]);
  });

  it('refuses a hold above the available balance with 1003 (402) and writes nothing', async () => {
    await r.billing.topUp(T, credits(100), 'pay_1');
    await r.billing.hold(T, 'task_1', credits(70));
    const err = await rejection(r.billing.hold(T, 'task_2', credits(30) + 1));
    expect(err.code).to.equal(1003);
    expect(err.status).to.equal(402);
    expect(err.detail).to.equal('Insufficient balance: this request needs 30.01 credits and 30.00 are available.');
    const snap = await r.store.snapshot(T);
    expect(snap.entries.filter((e) => e.ref === 'task_2')).to.deep.equal([]);
    expect(snap.holds.map((h) => h.ref)).to.deep.equal(['task_1']);
    expect(await r.billing.getWallet(T)).to.include({ held: credits(70), available: credits(30) });
    // exactly the available amount is fine
    await r.billing.hold(T, 'task_3', credits(30));
    expect((await r.billing.getWallet(T)).available).to.equal(0);
  });

  it('refuses any paid hold on an empty wallet, allows a free one', async () => {
    expect((await rejection(r.billing.hold(T, 'task_1', 1))).code).to.equal(1003);
    expect(await r.billing.hold(T, 'task_free', 0)).to.include({ amount: 0, duplicate: false });
    expect((await r.billing.settle(T, 'task_free', 0)).status).to.equal('settled');
  });

  it('a duplicate hold for the same ref holds nothing more', async () => {
    await r.billing.topUp(T, credits(100), 'pay_1');
    await r.billing.hold(T, 'task_1', credits(40));
    expect(await r.billing.hold(T, 'task_1', credits(40))).to.deep.equal({ ref: 'task_1', amount: credits(40), duplicate: true, open: true });
    expect((await r.billing.getWallet(T)).held).to.equal(credits(40));
  });

  it('settles the exact price: held -> settled, balance drops', async () => {
    await r.billing.topUp(T, credits(100), 'pay_1');
    await r.billing.hold(T, 'task_1', credits(34));
    const o = await r.billing.settle(T, 'task_1', credits(34));
    expect(o).to.deep.equal({ ref: 'task_1', status: 'settled', held: credits(34), settled: credits(34), released: 0, duplicate: false });
    expect(await r.billing.getWallet(T)).to.include({ balance: credits(66), held: 0, available: credits(66) });
    const kinds = (await r.billing.listLedger(T)).entries.map((e) => e.kind);
    expect(kinds).to.deep.equal(['settle', 'hold', 'topup']);
  });

  it('settles less than held and releases the rest in the same step', async () => {
    await r.billing.topUp(T, credits(100), 'pay_1');
    await r.billing.hold(T, 'task_1', credits(34));
    const o = await r.billing.settle(T, 'task_1', credits(17));
    expect(o).to.include({ settled: credits(17), released: credits(17) });
    expect(await r.billing.getWallet(T)).to.include({ balance: credits(83), held: 0, available: credits(83) });
    const entries = (await r.billing.listLedger(T)).entries;
    expect(entries.slice(0, 2).map((e) => [e.kind, e.amount])).to.deep.equal([
      ['release', credits(17)],
      ['settle', credits(17)],
    ]);
  });

  it('never settles more than held', async () => {
    await r.billing.topUp(T, credits(100), 'pay_1');
    await r.billing.hold(T, 'task_1', credits(10));
    expect(await r.billing.settle(T, 'task_1', credits(25))).to.include({ settled: credits(10), released: 0 });
    expect((await r.billing.getWallet(T)).balance).to.equal(credits(90));
  });

  it('failure releases everything: nothing billed', async () => {
    await r.billing.topUp(T, credits(100), 'pay_1');
    await r.billing.hold(T, 'task_1', credits(60));
    const o = await r.billing.release(T, 'task_1', 'upstream failed');
    expect(o).to.deep.equal({ ref: 'task_1', status: 'released', held: credits(60), settled: 0, released: credits(60), duplicate: false });
    expect(await r.billing.getWallet(T)).to.include({ balance: credits(100), held: 0, available: credits(100) });
    const report = await r.billing.checkInvariant(T);
    expect(report.totals).to.include({ topups: credits(100), settled: 0, released: credits(60), held: 0 });
  });

  it('settling or releasing an unknown ref moves nothing', async () => {
    await r.billing.topUp(T, credits(5), 'pay_1');
    expect(await r.billing.settle(T, 'nope', credits(1))).to.deep.equal({ ref: 'nope', status: 'unknown', held: 0, settled: 0, released: 0, duplicate: false });
    expect((await r.billing.release(T, 'nope')).status).to.equal('unknown');
    expect((await r.billing.getWallet(T)).balance).to.equal(credits(5));
  });

  it('rejects invalid amounts before touching the store', async () => {
    await r.billing.topUp(T, credits(10), 'pay_1');
    for (const p of [
      r.billing.topUp(T, 0, 'x'),
      r.billing.topUp(T, -5, 'x'),
      r.billing.topUp(T, 1.5, 'x'),
      r.billing.hold(T, 'x', -1),
      r.billing.settle(T, 'x', -1),
      r.billing.adjust(T, 0, 'x'),
      r.billing.charge(T, 'x', 0.5),
    ]) {
      const err = await p.then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).to.be.instanceOf(MoneyError);
    }
    expect((await r.store.snapshot(T)).entries).to.have.length(1);
  });

  // Paging itself is in the WalletStore contract (test/store/wallets.contract), on both stores.
  it('refuses a ledger cursor or page size it did not hand out (2003)', async () => {
    await r.billing.topUp(T, 1, 'pay_1');
    expect((await rejection(r.billing.listLedger(T, { cursor: 'abc' }))).code).to.equal(2003);
    expect((await rejection(r.billing.listLedger(T, { limit: 0 }))).code).to.equal(2003);
    expect((await rejection(r.billing.listLedger(T, { limit: 201 }))).code).to.equal(2003);
  });

  it('bills a task end to end at the spec price', async () => {
    const plan = compilePricing({
      unit: 'image',
      unit_price: { by: "$contains(prompt, '--turbo') ? 'turbo' : 'fast'", table: { fast: '0.085', turbo: '0.17' } },
      quantity: 4,
      settle_quantity: '$count($result.images)',
    });
    await r.billing.topUp(T, credits(100), 'pay_1');
    const req = { prompt: 'a fox --turbo' };
    await r.billing.hold(T, 'task_1', await plan.hold(req));
    expect((await r.billing.getWallet(T)).held).to.equal(credits(68));
    await r.billing.settle(T, 'task_1', await plan.settle(req, { images: ['1', '2', '3'] }));
    expect(await r.billing.getWallet(T)).to.include({ balance: credits(49), held: 0 }); // 3 x 0.17 USD = 51 credits
  });

  describe('the invariant checker', () => {
    it('detects a cached balance that drifted from the ledger', async () => {
      await r.billing.topUp(T, credits(10), 'pay_1');
      const snap = await r.store.snapshot(T);
      snap.wallet.balance += 1;
      expect(checkLedger(snap).violations.join()).to.match(/cached balance 10001 != ledger balance 10000/);
    });
    it('detects a ref closed twice', async () => {
      await r.billing.topUp(T, credits(10), 'pay_1');
      await r.billing.hold(T, 't', credits(1));
      await r.billing.release(T, 't');
      const snap = await r.store.snapshot(T);
      const rel = snap.entries[snap.entries.length - 1]!;
      snap.entries.push({ ...rel, id: 'led_dup', seq: rel.seq + 1 });
      snap.wallet.seq += 1;
      expect(checkLedger(snap).violations.join()).to.match(/ref t has entries \[hold,release,release\]/);
    });
    it('detects a hold that overdrew the wallet', async () => {
      await r.billing.topUp(T, credits(1), 'pay_1');
      await r.billing.hold(T, 't', credits(1));
      const snap = await r.store.snapshot(T);
      snap.entries[1]!.amount = credits(2);
      snap.holds[0]!.amount = credits(2);
      snap.wallet.held = credits(2);
      expect(checkLedger(snap).violations.join()).to.match(/hold t \(entry 2\) took available below zero/);
    });
  });

  describe('concurrency', () => {
    it('many tasks held, settled and released in parallel with duplicate signals: each ref closes exactly once', async () => {
      const N = 200;
      await r.billing.topUp(T, credits(10_000), 'pay_1');
      const price = (i: number) => credits(1) + i * 7;
      const held = await Promise.all(Array.from({ length: N }, (_, i) => r.billing.hold(T, `task_${i}`, price(i))));
      expect(held.every((h) => !h.duplicate)).to.equal(true);
      // every task gets 3 to 5 terminal signals at once: settles (various amounts) and releases
      const signals: Promise<unknown>[] = [];
      for (let i = 0; i < N; i++) {
        const ref = `task_${i}`;
        if (i % 3 === 0) signals.push(r.billing.release(T, ref), r.billing.settle(T, ref, price(i)), r.billing.release(T, ref));
        else signals.push(r.billing.settle(T, ref, price(i) - (i % 5)), r.billing.settle(T, ref, price(i)), r.billing.release(T, ref));
        if (i % 2 === 0) signals.push(r.billing.settle(T, ref, 1), r.billing.hold(T, ref, price(i)));
      }
      const outcomes = (await Promise.all(signals)) as { ref: string; duplicate: boolean; status?: string }[];
      const firsts = new Map<string, number>();
      for (const o of outcomes) if ('status' in o && !o.duplicate) firsts.set(o.ref, (firsts.get(o.ref) ?? 0) + 1);
      expect(firsts.size).to.equal(N);
      expect([...firsts.values()].every((n) => n === 1)).to.equal(true);

      const snap = await r.store.snapshot(T);
      expect(snap.holds.every((h) => h.state !== 'open')).to.equal(true);
      let expectedSettled = 0;
      for (const h of snap.holds) {
        const closings = snap.entries.filter((e) => e.ref === h.ref && e.kind !== 'hold');
        expect(closings.length, h.ref).to.be.within(1, 2);
        expect(h.settled + h.released).to.equal(h.amount);
        expectedSettled += h.settled;
      }
      const w = await r.billing.getWallet(T);
      expect(w.held).to.equal(0);
      expect(w.balance).to.equal(credits(10_000) - expectedSettled);
      expect((await r.billing.checkInvariant(T)).ok).to.equal(true);
    });

    it('parallel holds never overdraw: exactly as many as the balance allows pass', async () => {
      await r.billing.topUp(T, credits(10), 'pay_1');
      const results = await Promise.allSettled(Array.from({ length: 50 }, (_, i) => r.billing.hold(T, `t${i}`, credits(1))));
      const ok = results.filter((x) => x.status === 'fulfilled').length;
      const refused = results.filter((x) => x.status === 'rejected' && (x.reason as GatewayError).code === 1003).length;
      expect([ok, refused]).to.deep.equal([10, 40]);
      expect(await r.billing.getWallet(T)).to.include({ held: credits(10), available: 0 });
    });
  });
});
