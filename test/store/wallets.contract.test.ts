// The WalletStore contract: what test/billing/*.test.ts checks against the memory store, run
// through BillingService + LowBalanceMonitor over every adapter, plus port-level checks, races
// over two connections, and (Redis) a differential run against the memory adapter.
import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { checkLedger } from '../../engine/billing/invariant.ts';
import { LedgerArchive } from '../../engine/billing/ledger-archive.ts';
import { LocalResultFiles } from '../../engine/store/files/result-files.ts';
import { LowBalanceMonitor } from '../../engine/billing/low-balance.ts';
import type { HoldRecord, LedgerEntry, WalletStore } from '../../engine/billing/store.ts';
import { BillingService } from '../../engine/billing/service.ts';
import { GatewayError } from '../../engine/errors/gateway-error.ts';
import { EventBus, type GatewayEvent } from '../../engine/events/bus.ts';
import { MemoryWalletStore } from '../../engine/store/memory/wallets.ts';
import { RedisWalletStore } from '../../engine/store/redis/wallets.ts';
import { ManualClock } from '../../engine/util/clock.ts';
import { forEachBackend, keysUnder } from './support.ts';
import { rejection } from '../helpers/outcomes.ts';

const T = '7d3f1c2a-0000-4000-8000-000000000001';
const TENANTS = [T, 'other', 'tenant-u', 'poor'];
const HOUR = 3_600_000;
const AT = '2026-01-01T00:00:00.000Z';
const credits = (n: number): number => n * 1000;

interface Rig {
  store: WalletStore;
  clock: ManualClock;
  events: GatewayEvent[];
  subscribed: Set<string>;
  billing: BillingService;
}

function rig(store: WalletStore, clock = new ManualClock()): Rig {
  const bus = new EventBus(clock);
  const events: GatewayEvent[] = [];
  bus.subscribe((e) => {
    events.push(e);
  });
  const subscribed = new Set<string>();
  const monitor = new LowBalanceMonitor({ store, bus, clock, hasSubscriber: async (t) => subscribed.has(t) });
  return { store, clock, events, subscribed, billing: new BillingService({ store, clock, lowBalance: monitor }) };
}

const strip = (e: LedgerEntry) => ({ ...e, id: 'led' });

forEachBackend('WalletStore contract', (env) => {
  let a: WalletStore;
  let b: WalletStore;
  let prefix: string;
  let r: Rig;
  let r2: Rig; // the same wallets through the second connection
  beforeEach(() => {
    ({ a, b, prefix } = env.pair<WalletStore>(() => new MemoryWalletStore(), (client, p) => new RedisWalletStore({ client, prefix: p })));
    r = rig(a);
    r2 = rig(b, r.clock);
  });
  afterEach(async () => {
    for (const t of TENANTS) expect(checkLedger(await a.snapshot(t)).violations, `ledger of ${t}`).to.deep.equal([]);
  });

  describe('billing service over the adapter', () => {
    it('starts empty and credits a top-up, once per ref', async () => {
      expect(await r.billing.getWallet(T)).to.deep.equal({ tenantId: T, balance: 0, held: 0, available: 0, state: 'NORMAL', threshold: credits(1000) });
      const e = await r.billing.topUp(T, credits(50), 'pay_1', 'card');
      expect(e).to.include({ kind: 'topup', amount: credits(50), ref: 'pay_1', note: 'card', seq: 1, at: AT });
      expect(e.id).to.match(/^led_/);
      const again = await r2.billing.topUp(T, credits(50), 'pay_1');
      expect(again).to.deep.equal(e);
      expect(await r.billing.getWallet(T)).to.include({ balance: credits(50), held: 0, available: credits(50) });
    });

    it('holds, refuses above available with 1003 writing nothing, allows a free hold', async () => {
      expect((await rejection(r.billing.hold(T, 'task_0', 1))).code).to.equal(1003);
      expect(await r.billing.hold(T, 'task_free', 0)).to.include({ amount: 0, duplicate: false });
      await r.billing.topUp(T, credits(100), 'pay_1');
      expect(await r.billing.hold(T, 'task_1', credits(70))).to.deep.equal({ ref: 'task_1', amount: credits(70), duplicate: false, open: true });
      const err = await rejection(r.billing.hold(T, 'task_2', credits(30) + 1));
      expect([err.code, err.status]).to.deep.equal([1003, 402]);
      expect(err.detail).to.equal('Insufficient balance: this request needs 30.01 credits and 30.00 are available.');
      const snap = await r.store.snapshot(T);
      expect(snap.entries.filter((e) => e.ref === 'task_2')).to.deep.equal([]);
      expect(snap.holds.map((h) => h.ref)).to.deep.equal(['task_free', 'task_1']);
      expect(await r2.billing.hold(T, 'task_1', credits(70))).to.deep.equal({ ref: 'task_1', amount: credits(70), duplicate: true, open: true });
      await r.billing.hold(T, 'task_3', credits(30));
      expect(await r.billing.getWallet(T)).to.include({ balance: credits(100), held: credits(100), available: 0 });
    });

    it('settles exactly, partially (releasing the rest in the same step) and never more than held', async () => {
      await r.billing.topUp(T, credits(100), 'pay_1');
      await r.billing.hold(T, 'a', credits(34));
      await r.billing.hold(T, 'b', credits(34));
      await r.billing.hold(T, 'c', credits(10));
      expect(await r.billing.settle(T, 'a', credits(34))).to.deep.equal({ ref: 'a', status: 'settled', held: credits(34), settled: credits(34), released: 0, duplicate: false });
      expect(await r2.billing.settle(T, 'b', credits(17))).to.include({ settled: credits(17), released: credits(17) });
      expect(await r.billing.settle(T, 'c', credits(25))).to.include({ settled: credits(10), released: 0 });
      expect(await r.billing.getWallet(T)).to.include({ balance: credits(100 - 34 - 17 - 10), held: 0 });
      const kinds = (await r.billing.listLedger(T)).entries.map((e) => [e.kind, e.ref, e.amount]);
      expect(kinds).to.deep.equal([
        ['settle', 'c', credits(10)],
        ['release', 'b', credits(17)],
        ['settle', 'b', credits(17)],
        ['settle', 'a', credits(34)],
        ['hold', 'c', credits(10)],
        ['hold', 'b', credits(34)],
        ['hold', 'a', credits(34)],
        ['topup', 'pay_1', credits(100)],
      ]);
    });

    it('settle and release are exactly once per ref; repeats return the first outcome', async () => {
      await r.billing.topUp(T, credits(100), 'pay_1');
      await r.billing.hold(T, 'a', credits(10));
      await r.billing.hold(T, 'b', credits(10));
      const first = await r.billing.settle(T, 'a', credits(8));
      expect(await r2.billing.settle(T, 'a', credits(10))).to.deep.equal({ ...first, duplicate: true });
      expect(await r.billing.release(T, 'a')).to.deep.equal({ ...first, duplicate: true });
      const rel = await r2.billing.release(T, 'b');
      expect(rel).to.deep.equal({ ref: 'b', status: 'released', held: credits(10), settled: 0, released: credits(10), duplicate: false });
      expect(await r.billing.settle(T, 'b', credits(10))).to.deep.equal({ ...rel, duplicate: true });
      expect(await r.billing.getWallet(T)).to.include({ balance: credits(92), held: 0 });
      expect((await r.store.snapshot(T)).entries).to.have.length(1 + 2 + 2 + 1);
      expect(await r.billing.settle(T, 'nope', credits(1))).to.deep.equal({ ref: 'nope', status: 'unknown', held: 0, settled: 0, released: 0, duplicate: false });
      expect((await r.billing.release(T, 'nope')).status).to.equal('unknown');
    });

    it('charges usage in one step, once per ref, and may overdraw; a request hold is refused while nothing is available', async () => {
      await r.billing.topUp(T, credits(1), 'pay_1');
      const o = await r.billing.charge(T, 'req_1', credits(3), 'chat 1200 tokens');
      expect(o).to.deep.equal({ ref: 'req_1', status: 'settled', held: credits(3), settled: credits(3), released: 0, duplicate: false });
      expect((await r2.billing.charge(T, 'req_1', credits(3))).duplicate).to.equal(true);
      expect(await r.billing.getWallet(T)).to.include({ balance: credits(-2), available: credits(-2) });
      expect((await r.billing.listLedger(T)).entries.slice(0, 2).map((e) => e.kind)).to.deep.equal(['settle', 'hold']);
      // Overdrawn: the next request's hold is refused up front, and no async hold passes.
      const err = await rejection(r.billing.holdUpTo(T, 'req_2', credits(1000)));
      expect([err.code, err.status]).to.deep.equal([1003, 402]);
      expect((await rejection(r.billing.hold(T, 'task_1', 1))).code).to.equal(1003);
      await r.billing.topUp(T, credits(2), 'pay_2');
      expect((await rejection(r.billing.holdUpTo(T, 'req_2', credits(1000)))).code).to.equal(1003);
      await r.billing.topUp(T, 1, 'pay_3');
      expect(await r.billing.holdUpTo(T, 'req_2', credits(1000))).to.equal(1); // what is available
      const hold = (await r.store.snapshot(T)).holds.find((h) => h.ref === 'req_1');
      expect(hold).to.deep.equal({ ref: 'req_1', amount: credits(3), state: 'settled', settled: credits(3), released: 0, at: AT, charge: true });
    });

    it('a request hold takes what is available up to its size; its usage settles against it, the excess charged once as <ref>+', async () => {
      await r.billing.topUp(T, credits(5), 'pay_1');
      expect(await r.billing.holdUpTo(T, 'chat_1', credits(3), 'chat')).to.equal(credits(3));
      expect(await r2.billing.holdUpTo(T, 'chat_1', credits(3), 'chat')).to.equal(credits(3)); // once per ref
      expect(await r.billing.holdUpTo(T, 'chat_2', credits(4), 'chat')).to.equal(credits(2)); // what is left
      expect((await rejection(r.billing.holdUpTo(T, 'chat_3', credits(1), 'chat'))).code).to.equal(1003); // nothing left
      await r.billing.settleUsage(T, 'chat_1', credits(1), 'chat_1 usage');
      await r.billing.settleUsage(T, 'chat_2', credits(3), 'chat_2 usage'); // beyond its hold of 2
      await r2.billing.settleUsage(T, 'chat_2', credits(3), 'chat_2 usage'); // a repeat charges nothing
      await r.billing.releaseHold(T, 'chat_3');
      expect(await r.billing.getWallet(T)).to.include({ balance: credits(1), held: 0 });
      const lines = (await r.billing.listLedger(T)).entries.reverse().map((e) => `${e.kind} ${e.ref} ${e.amount}`);
      expect(lines).to.deep.equal(['topup pay_1 5000', 'hold chat_1 3000', 'hold chat_2 2000', 'settle chat_1 1000', 'release chat_1 2000', 'settle chat_2 2000', 'hold chat_2+ 1000', 'settle chat_2+ 1000']);
      expect((await r.billing.checkInvariant(T)).ok).to.equal(true);
    });

    it('adjusts in both directions, once per ref', async () => {
      await r.billing.topUp(T, credits(10), 'pay_1');
      await r.billing.adjust(T, credits(-4), 'adj_1', 'refund reversal');
      await r2.billing.adjust(T, credits(-4), 'adj_1');
      await r.billing.adjust(T, credits(1), 'adj_2');
      await r.billing.topUp(T, credits(1), 'adj_2'); // another kind: its own ref space
      expect((await r.billing.getWallet(T)).balance).to.equal(credits(8));
      expect((await r.billing.checkInvariant(T)).totals).to.include({ topups: credits(11), adjustments: credits(-3) });
    });

    it('pages the ledger newest first with a cursor', async () => {
      for (let i = 1; i <= 7; i++) await r.billing.topUp(T, i, `pay_${i}`);
      const p1 = await r.billing.listLedger(T, { limit: 3 });
      expect(p1.entries.map((e) => e.ref)).to.deep.equal(['pay_7', 'pay_6', 'pay_5']);
      const p2 = await r2.billing.listLedger(T, { limit: 3, cursor: p1.next_cursor });
      expect(p2.entries.map((e) => e.ref)).to.deep.equal(['pay_4', 'pay_3', 'pay_2']);
      const p3 = await r.billing.listLedger(T, { limit: 3, cursor: p2.next_cursor });
      expect(p3.entries.map((e) => e.ref)).to.deep.equal(['pay_1']);
      expect(p3.next_cursor).to.equal(null);
    });

    it('keeps tenants apart', async () => {
      await r.billing.topUp(T, credits(10), 'pay_1');
      await r.billing.topUp('other', credits(1), 'pay_1');
      await r.billing.hold('other', 'task_1', credits(1));
      expect((await rejection(r.billing.hold('other', 'task_2', 1))).code).to.equal(1003);
      expect(await r.billing.getWallet(T)).to.include({ balance: credits(10), held: 0 });
    });
  });

  describe('balance.low over the adapter', () => {
    let n = 0;
    const spend = async (rr: Rig, tenant: string, c: number) => {
      const ref = `task_${++n}`;
      await rr.billing.hold(tenant, ref, credits(c));
      await rr.billing.settle(tenant, ref, credits(c));
    };
    const payloads = (rr: Rig) => rr.events.map((e) => (e.data.payload as Record<string, string>).available_balance);
    const state = async () => (await r.billing.getWallet(T)).state;
    beforeEach(() => {
      r.subscribed.add(T);
      r2.subscribed.add(T);
    });

    it('edge, silence, throttled reminder, recovery and an immediate fresh alert', async () => {
      await r.billing.topUp(T, credits(1100), 'pay_1');
      await spend(r, T, 200); // 900: edge
      expect(payloads(r)).to.deep.equal(['900.00']);
      expect(r.events[0]!.data).to.deep.equal({ user_id: T, payload: { available_balance: '900.00', trigger_threshold: '1000.00', currency: 'credits' } });
      await spend(r2, T, 100); // other process, within the window: silent
      r.clock.advance(24 * HOUR - 1);
      await spend(r, T, 100);
      expect(r.events.length + r2.events.length).to.equal(1);
      r.clock.advance(1);
      await spend(r2, T, 100); // window over: one reminder, from whichever process settles
      expect(payloads(r2)).to.deep.equal(['600.00']);
      await spend(r, T, 50);
      expect(r.events.length + r2.events.length).to.equal(2);
      await r.billing.topUp(T, credits(399), 'pay_2'); // 949: no recovery
      expect(await state()).to.equal('ALERTED');
      await r.billing.topUp(T, credits(51), 'pay_3'); // 1000.00: recovered
      expect(await state()).to.equal('NORMAL');
      r.clock.advance(HOUR);
      await spend(r, T, 1);
      expect(payloads(r)).to.deep.equal(['900.00', '999.00']);
    });

    it('does not fire on holds or releases, nor without a subscriber (the edge is kept)', async () => {
      r.subscribed.delete(T);
      await r.billing.topUp(T, credits(1200), 'pay_1');
      await r.billing.hold(T, 'big', credits(500));
      await r.billing.release(T, 'big');
      await spend(r, T, 300); // 900, nobody subscribed
      expect(await state()).to.equal('NORMAL');
      r.subscribed.add(T);
      await spend(r, T, 1);
      expect(payloads(r)).to.deep.equal(['899.00']);
      expect(await state()).to.equal('ALERTED');
    });

    it('per-tenant threshold: set, used, lowered (a recovery) and cleared', async () => {
      await r.billing.setThreshold(T, credits(50));
      expect((await r2.billing.getWallet(T)).threshold).to.equal(credits(50));
      await r.billing.topUp(T, credits(100), 'pay_1');
      await spend(r, T, 50);
      expect(r.events).to.have.length(0);
      await spend(r, T, 1);
      expect(r.events.map((e) => (e.data.payload as Record<string, string>).trigger_threshold)).to.deep.equal(['50.00']);
      await r.billing.setThreshold(T, credits(10));
      expect(await state()).to.equal('NORMAL');
      await r.billing.setThreshold(T, null);
      expect((await r.billing.getWallet(T)).threshold).to.equal(credits(1000));
    });

    it('race: parallel settlements on two connections crossing the threshold emit exactly one event', async () => {
      await r.billing.topUp(T, credits(1100), 'pay_1');
      for (let i = 0; i < 20; i++) await r.billing.hold(T, `p${i}`, credits(10));
      await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? r : r2).billing.settle(T, `p${i}`, credits(10))));
      expect([...payloads(r), ...payloads(r2)]).to.deep.equal(['900.00']);
    });
  });

  describe('the port itself', () => {
    it('get() of an unknown tenant is a zero wallet', async () => {
      expect(await a.get('nobody')).to.deep.equal({ tenantId: 'nobody', balance: 0, held: 0, threshold: null, alertState: 'NORMAL', lastAlertAt: null, seq: 0 });
    });

    it('credit returns the first entry and wallet on a duplicate; notes and refs are kept verbatim', async () => {
      const note = 'ünïcødé "quoted" \\ back/slash\nnew line\ttab 🦊';
      const first = await a.credit(T, 'topup', 'ref|with|pipes', 5_000, note, AT);
      expect(first).to.deep.include({ status: 'credited' });
      expect(first.entry).to.include({ seq: 1, kind: 'topup', amount: 5_000, ref: 'ref|with|pipes', note, at: AT });
      expect(first.wallet).to.include({ balance: 5_000, held: 0, seq: 1 });
      const again = await b.credit(T, 'topup', 'ref|with|pipes', 9_999, 'other', '2027-01-01T00:00:00.000Z');
      expect(again).to.deep.equal({ status: 'duplicate', entry: first.entry, wallet: first.wallet });
    });

    it('hold / settle / release / charge results carry the hold record and the wallet after the step', async () => {
      await a.credit(T, 'topup', 'p', 10_000, '', AT);
      const h = await a.hold(T, 'r1', 4_000, 'n', AT);
      expect(h).to.deep.equal({
        status: 'held',
        hold: { ref: 'r1', amount: 4_000, state: 'open', settled: 0, released: 0, at: AT, charge: false },
        wallet: { tenantId: T, balance: 10_000, held: 4_000, threshold: null, alertState: 'NORMAL', lastAlertAt: null, seq: 2 },
      });
      const ins = await b.hold(T, 'r2', 6_001, 'n', AT);
      expect(ins).to.deep.equal({ status: 'insufficient', wallet: h.wallet });
      const s = await b.settle(T, 'r1', 2_500, 'done', '2026-01-01T00:00:01.000Z');
      expect(s).to.deep.equal({
        status: 'closed',
        hold: { ref: 'r1', amount: 4_000, state: 'settled', settled: 2_500, released: 1_500, at: AT, charge: false },
        wallet: { ...h.wallet, balance: 7_500, held: 0, seq: 4 },
      });
      expect(await a.release(T, 'r1', 'late', AT)).to.deep.equal({ status: 'duplicate', hold: s.hold, wallet: s.wallet });
      expect(await a.release(T, 'zz', 'n', AT)).to.deep.equal({ status: 'unknown', wallet: s.wallet });
      const c = await a.charge(T, 'c1', 100, 'n', AT);
      expect(c.hold).to.include({ state: 'settled', settled: 100, charge: true });
      expect(c.wallet).to.include({ balance: 7_400, seq: 6 });
      expect((await b.charge(T, 'c1', 100, 'n', AT)).status).to.equal('duplicate');
      expect((await b.hold(T, 'c1', 1, 'n', AT)).status).to.equal('duplicate'); // a charge's ref is taken
      const settleZero = await a.hold(T, 'z', 0, 'n', AT);
      expect(settleZero.status).to.equal('held');
      expect((await a.settle(T, 'z', 0, 'n', AT)).hold).to.include({ state: 'settled', settled: 0, released: 0 });
    });

    it('lists pages by seq: beforeSeq past the end, at the start, and tiny limits', async () => {
      for (let i = 1; i <= 5; i++) await a.credit(T, 'topup', `p${i}`, i, '', AT);
      const seqs = async (limit: number, before?: number) => {
        const p = await b.list(T, limit, before);
        return [p.entries.map((e) => e.seq), p.nextBeforeSeq];
      };
      expect(await seqs(2)).to.deep.equal([[5, 4], 4]);
      expect(await seqs(2, 4)).to.deep.equal([[3, 2], 2]);
      expect(await seqs(2, 2)).to.deep.equal([[1], null]);
      expect(await seqs(10, 100)).to.deep.equal([[5, 4, 3, 2, 1], null]);
      expect(await seqs(3, 1)).to.deep.equal([[], null]);
      expect(await seqs(1, 6)).to.deep.equal([[5], 5]);
      expect(await b.list('nobody', 10)).to.deep.equal({ entries: [], nextBeforeSeq: null, archivedThrough: 0 });
    });

    it('lowBalance implements applyLowBalance: alerts, throttles, recovers, keeps the edge', async () => {
      const input = { trigger: 'settlement' as const, defaultThreshold: 100, subscribed: true, now: 1_000, throttleMs: 500 };
      expect(await a.lowBalance(T, input)).to.deep.equal({ alert: true, state: 'ALERTED', recovered: false, available: 0, threshold: 100 });
      expect((await a.get(T)).lastAlertAt).to.equal(1_000);
      expect(await b.lowBalance(T, { ...input, now: 1_499 })).to.include({ alert: false, state: 'ALERTED' });
      expect(await b.lowBalance(T, { ...input, now: 1_500, subscribed: false })).to.include({ alert: false, state: 'ALERTED' });
      expect(await b.lowBalance(T, { ...input, now: 1_500, trigger: 'credit' })).to.include({ alert: false, state: 'ALERTED' });
      expect(await b.lowBalance(T, { ...input, now: 1_500 })).to.include({ alert: true, state: 'ALERTED' });
      expect((await a.get(T)).lastAlertAt).to.equal(1_500);
      await a.credit(T, 'topup', 'p', 100, '', AT);
      expect(await a.lowBalance(T, { ...input, trigger: 'credit' })).to.deep.equal({ alert: false, state: 'NORMAL', recovered: true, available: 100, threshold: 100 });
      expect((await a.get(T)).lastAlertAt).to.equal(1_500);
      await a.setThreshold(T, 150);
      expect(await a.lowBalance(T, { ...input, subscribed: false })).to.deep.equal({ alert: false, state: 'NORMAL', recovered: false, available: 100, threshold: 150 });
      expect(await a.lowBalance(T, { ...input, now: 1_600 })).to.include({ alert: true, state: 'ALERTED', threshold: 150 });
      expect(await a.setThreshold(T, null)).to.include({ threshold: null, alertState: 'ALERTED', lastAlertAt: 1_600 });
    });

    it('handles large amounts exactly (up to 2^53 - 1 milli)', async () => {
      const big = Number.MAX_SAFE_INTEGER - 1;
      await a.credit(T, 'topup', 'big', big, '', AT);
      expect((await b.hold(T, 'h', big, '', AT)).wallet).to.include({ balance: big, held: big });
      expect((await b.settle(T, 'h', big - 1, '', AT)).wallet).to.include({ balance: 1, held: 0 });
      expect((await a.snapshot(T)).entries.map((e) => e.amount)).to.deep.equal([big, big, big - 1, 1]);
    });
  });

  describe('races over two connections', () => {
    it('20 concurrent holds of the same ref: one hold, 19 duplicates', async () => {
      await a.credit(T, 'topup', 'p', 100_000, '', AT);
      const rs = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? a : b).hold(T, 'task_1', 1_000 + i, '', AT)));
      expect(rs.filter((x) => x.status === 'held')).to.have.length(1);
      expect(rs.filter((x) => x.status === 'duplicate')).to.have.length(19);
      const winner = rs.find((x) => x.status === 'held')!.hold!;
      expect(rs.every((x) => x.hold!.amount === winner.amount)).to.equal(true);
      expect(await a.get(T)).to.include({ held: winner.amount, seq: 2 });
    });

    it('20 concurrent settles and releases of the same ref: exactly one closes it', async () => {
      await a.credit(T, 'topup', 'p', 100_000, '', AT);
      await a.hold(T, 'task_1', 10_000, '', AT);
      const rs = await Promise.all(
        Array.from({ length: 20 }, (_, i) => {
          const s = i % 2 ? a : b;
          return i % 3 === 0 ? s.release(T, 'task_1', '', AT) : s.settle(T, 'task_1', 1_000 * (i % 7), '', AT);
        }),
      );
      const closed = rs.filter((x) => x.status === 'closed');
      expect(closed).to.have.length(1);
      const first = closed[0]!.hold!;
      for (const x of rs) expect(x.hold).to.deep.equal(first);
      const snap = await a.snapshot(T);
      expect(snap.entries.filter((e) => e.ref === 'task_1' && e.kind !== 'hold').length).to.be.within(1, 2);
      expect(snap.wallet).to.include({ held: 0, balance: 100_000 - first.settled });
    });

    it('50 parallel holds never overdraw: exactly as many as the balance allows', async () => {
      await a.credit(T, 'topup', 'p', 10_000, '', AT);
      const rs = await Promise.all(Array.from({ length: 50 }, (_, i) => (i % 2 ? a : b).hold(T, `t${i}`, 1_000, '', AT)));
      expect(rs.filter((x) => x.status === 'held')).to.have.length(10);
      expect(rs.filter((x) => x.status === 'insufficient')).to.have.length(40);
      expect(await a.get(T)).to.include({ held: 10_000 });
    });

    it('60 concurrent request holds (up to what is available) and their settlements, several grouped in one script on Redis: exactly the allowed number, the ledger balances', async () => {
      await r.billing.topUp(T, credits(10), 'pay_1');
      // 1.5 credits each against 10: six whole holds, a seventh of the 1 left, then nothing.
      const held = await Promise.allSettled(Array.from({ length: 60 }, (_, i) => [r, r2][i % 2]!.billing.holdUpTo(T, `chat_${i}`, 1_500)));
      const amounts = held.flatMap((x) => (x.status === 'fulfilled' ? [x.value] : []));
      expect(amounts.sort((x, y) => y - x)).to.deep.equal([1_500, 1_500, 1_500, 1_500, 1_500, 1_500, 1_000]);
      for (const x of held) if (x.status === 'rejected') expect((x.reason as GatewayError).code).to.equal(1003);
      const refs = held.flatMap((x, i) => (x.status === 'fulfilled' ? [`chat_${i}`] : []));
      // Each settled twice at once (a retry racing its first try) and for 0.4 credits: counted once.
      await Promise.all(refs.flatMap((ref, i) => [r, r2].map((x) => x.billing.settleUsage(T, ref, 400, `chat ${i}`))));
      const w = await a.get(T);
      expect(w).to.include({ held: 0, balance: credits(10) - 7 * 400 });
      const snap = await a.snapshot(T);
      expect(snap.entries.filter((e) => e.kind === 'settle')).to.have.length(7);
      expect(checkLedger(snap).ok).to.equal(true);
    });

    it('200 tasks with 3 to 5 terminal signals each: every ref closes exactly once', async () => {
      const N = 200;
      await r.billing.topUp(T, credits(10_000), 'pay_1');
      const price = (i: number) => credits(1) + i * 7;
      await Promise.all(Array.from({ length: N }, (_, i) => (i % 2 ? r : r2).billing.hold(T, `task_${i}`, price(i))));
      const signals: Promise<{ ref: string; duplicate: boolean; status?: string }>[] = [];
      for (let i = 0; i < N; i++) {
        const ref = `task_${i}`;
        const [x, y] = i % 2 ? [r, r2] : [r2, r];
        if (i % 3 === 0) signals.push(x.billing.release(T, ref), y.billing.settle(T, ref, price(i)), x.billing.release(T, ref));
        else signals.push(x.billing.settle(T, ref, price(i) - (i % 5)), y.billing.settle(T, ref, price(i)), y.billing.release(T, ref));
        if (i % 2 === 0) signals.push(y.billing.settle(T, ref, 1), x.billing.hold(T, ref, price(i)) as never);
      }
      const outcomes = await Promise.all(signals);
      const firsts = new Map<string, number>();
      for (const o of outcomes) if ('status' in o && !o.duplicate) firsts.set(o.ref, (firsts.get(o.ref) ?? 0) + 1);
      expect(firsts.size).to.equal(N);
      expect([...firsts.values()].every((k) => k === 1)).to.equal(true);
      const snap = await a.snapshot(T);
      expect(snap.holds.every((h) => h.state !== 'open')).to.equal(true);
      const settled = snap.holds.reduce((s, h) => s + h.settled, 0);
      expect(snap.wallet).to.include({ held: 0, balance: credits(10_000) - settled });
    });

    it('lists exactly the holds still open: not settled, released, charged or free ones', async () => {
      await a.credit(T, 'topup', 'p', 100_000, '', AT);
      for (const ref of ['o1', 'o2', 's', 'r']) await a.hold(T, ref, 1_000, '', AT);
      await a.hold(T, 'free', 0, '', AT);
      await a.settle(T, 's', 500, '', AT);
      await a.release(T, 'r', '', AT);
      await a.charge(T, 'c', 700, '', AT);
      expect((await b.openHolds(T)).map((h) => [h.ref, h.state, h.amount]).sort()).to.deep.equal([['o1', 'open', 1_000], ['o2', 'open', 1_000]]);
      await b.settle(T, 'o1', 1_000, '', AT);
      expect((await a.openHolds(T)).map((h) => h.ref)).to.deep.equal(['o2']);
      expect(await a.openHolds('00000000-0000-4000-8000-0000000000ff')).to.deep.equal([]);
    });

    it('concurrent credits with the same ref from two connections credit once', async () => {
      const rs = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 ? a : b).credit(T, 'topup', 'pay_x', 500, '', AT)));
      expect(rs.filter((x) => x.status === 'credited')).to.have.length(1);
      expect(new Set(rs.map((x) => x.entry.id)).size).to.equal(1);
      expect((await a.get(T)).balance).to.equal(500);
    });
  });

  if (!env.isRedis) {
    describe('memory specifics: bounded history', () => {
      it('archives all but the newest ledgerEntries entries per wallet; balance, held and pages stay exact', async () => {
        const s = new MemoryWalletStore({ ledgerEntries: 5 });
        const dir = mkdtempSync(join(tmpdir(), 'gw-ledger-'));
        const archive = new LedgerArchive({ store: s, backend: new LocalResultFiles(dir), clock: new ManualClock(), logger: pino({ level: 'silent' }), retentionMs: 365 * 24 * HOUR });
        const billing = new BillingService({ store: s, clock: new ManualClock() });
        await s.credit(T, 'topup', 'p1', 10_000, '', AT); // seq 1
        await s.hold(T, 'old-open', 1_000, '', AT); // seq 2: stays open past its entry's drop
        await s.hold(T, 'h1', 2_000, '', AT); // seq 3
        await s.settle(T, 'h1', 500, '', AT); // seq 4, 5 (settle 500, release 1500)
        await s.credit(T, 'adjustment', 'a1', -300, '', AT); // seq 6
        await s.charge(T, 'c1', 700, '', AT); // seq 7, 8
        await s.hold(T, 'h2', 100, '', AT); // seq 9
        await s.release(T, 'h1-again', '', AT); // unknown: nothing written
        await s.release(T, 'old-open', '', AT); // seq 10
        await s.credit(T, 'topup', 'p2', 50, '', AT); // seq 11
        expect((await s.snapshot(T)).entries, 'nothing leaves before it is archived').to.have.length(11);
        expect(await archive.archiveTenant(T)).to.equal(6);
        const snap = await s.snapshot(T);
        expect(snap.entries.map((e) => e.seq)).to.deep.equal([7, 8, 9, 10, 11]);
        expect(snap.opening).to.deep.equal({ seq: 6, balance: 10_000 - 500 - 300, held: 1_000 });
        expect(snap.wallet).to.include({ balance: 10_000 - 500 - 300 - 700 + 50, held: 100, seq: 11 });
        expect(checkLedger(snap).violations).to.deep.equal([]);
        expect((await billing.checkInvariant(T)).ok).to.equal(true);
        // The store's pages reach back to the oldest entry kept, then end; the archive's go on.
        expect((await archive.list(T, 20)).entries.map((e) => e.seq)).to.deep.equal([11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1]);
        const page = await s.list(T, 3);
        expect([page.entries.map((e) => e.seq), page.nextBeforeSeq]).to.deep.equal([[11, 10, 9], 9]);
        const last = await s.list(T, 3, 9);
        expect([last.entries.map((e) => e.seq), last.nextBeforeSeq]).to.deep.equal([[8, 7], null]);
        expect((await s.list(T, 3, 4)).entries).to.deep.equal([]);
        // Idempotency does not depend on the ledger: repeats are still recognised.
        expect((await s.credit(T, 'topup', 'p1', 10_000, '', AT)).status).to.equal('duplicate');
        expect((await s.settle(T, 'h1', 9, '', AT)).status).to.equal('duplicate');
        expect(() => new MemoryWalletStore({ ledgerEntries: 0 })).to.throw(/ledgerEntries/);
        rmSync(dir, { recursive: true, force: true });
      });

      it('keeps at most ledgerEntries closed holds per wallet, forgetting the oldest (a charge per chat request is no bound otherwise)', async () => {
        const s = new MemoryWalletStore({ ledgerEntries: 3, closedHoldTtlMs: 3_600_000 });
        await s.credit(T, 'topup', 'p', 10_000, '', AT);
        for (const ref of ['c1', 'c2', 'c3', 'c4']) await s.charge(T, ref, 1, '', AT);
        expect((await s.charge(T, 'c1', 1, '', AT)).status).to.equal('closed'); // forgotten: charged as new
        for (const ref of ['c3', 'c4']) expect((await s.charge(T, ref, 1, '', AT)).status).to.equal('duplicate');
        expect((await s.get(T)).balance).to.equal(10_000 - 5);
      });

      it('keeps a closed hold of a new ref in the ring alone: a repeat while open, a moment after, or of its close is a duplicate; the snapshot has it', async () => {
        const s = new MemoryWalletStore({ ledgerEntries: 40, closedHoldTtlMs: 3_600_000 });
        await s.credit(T, 'topup', 'p', 10_000, '', AT);
        const newRef = { upTo: true, newRef: true };
        expect((await s.hold(T, 'n1', 100, '', AT, newRef)).status).to.equal('held');
        expect((await s.hold(T, 'n1', 100, '', AT, newRef)).status, 'open').to.equal('duplicate');
        expect((await s.settle(T, 'n1', 60, '', AT)).hold).to.deep.equal({ ref: 'n1', amount: 100, state: 'settled', settled: 60, released: 40, at: AT, charge: false });
        expect((await s.hold(T, 'n1', 100, '', AT, newRef)).status, 'a moment after').to.equal('duplicate');
        for (let i = 0; i < 30; i++) {
          await s.hold(T, `m${i}`, 1, '', AT, newRef);
          await s.release(T, `m${i}`, '', AT);
        }
        const again = await s.settle(T, 'n1', 60, '', AT);
        expect(again.status, 'its close repeated, 30 closes later').to.equal('duplicate');
        expect(again.hold).to.include({ state: 'settled', settled: 60 });
        const snap = await s.snapshot(T);
        expect(snap.holds.map((h) => h.ref)).to.deep.equal(['n1', ...Array.from({ length: 30 }, (_, i) => `m${i}`)]);
        expect(snap.holds[0]).to.deep.equal({ ref: 'n1', amount: 100, state: 'settled', settled: 60, released: 40, at: AT, charge: false });
        expect(checkLedger(snap).ok).to.equal(true);
        expect((await s.get(T)).balance).to.equal(10_000 - 60);
      });

      it('keeps lines and closed holds as bytes: JSON-hostile refs and notes, days, trims and compaction read back exactly', async () => {
        const s = new MemoryWalletStore({ ledgerEntries: 40, closedHoldTtlMs: 3_600_000 });
        await s.credit(T, 'topup', 'p', 1_000_000, '', AT);
        const odd = (i: number) => `r${i} {"ref":"x", "q\\"} \n é ✓ ${'}'.repeat(i % 3)}`;
        const newRef = { upTo: true, newRef: true };
        const day = (i: number) => (i < 1500 ? '2026-03-01T23:59:59.000Z' : '2026-03-02T00:00:01.000Z');
        let trimmed = 0;
        for (let i = 0; i < 3000; i++) {
          await s.hold(T, odd(i), 10, `note ${odd(i)}`, day(i), newRef);
          await s.settle(T, odd(i), i % 10, `note ${odd(i)}`, day(i));
          if (i % 97 !== 0) continue;
          const c = await s.claimArchive(T, { owner: 'o', now: 0, leaseMs: 60_000, before: '', max: 500 });
          if (c.status !== 'ok') continue;
          const lines = c.segment!.body.toString().split('\n').filter(Boolean).map((l) => JSON.parse(l) as { seq: number; at: string });
          expect(lines.length).to.equal(c.segment!.count);
          expect(new Set(lines.map((l) => l.at.slice(0, 10))).size, 'one day a segment').to.equal(1);
          expect(lines.map((l) => l.seq)).to.deep.equal(Array.from({ length: lines.length }, (_, k) => c.archivedThrough + 1 + k));
          expect(await s.trimArchived(T, { owner: 'o', first: c.segment!.first, last: c.segment!.last })).to.equal(true);
          trimmed += lines.length;
        }
        const snap = await s.snapshot(T);
        expect(snap.opening?.seq).to.equal(trimmed);
        expect(checkLedger(snap).violations).to.deep.equal([]);
        expect(snap.entries.at(-1)).to.include({ ref: odd(2999), note: `note ${odd(2999)}`, at: day(2999) });
        const page = await s.list(T, 5);
        expect(page.entries.map((e) => e.seq)).to.deep.equal([9001, 9000, 8999, 8998, 8997]);
        expect(page.entries[0]).to.include({ kind: 'release', ref: odd(2999), amount: 10 - (2999 % 10) });
        // A repeat of a close 30 closes back (past the 16 newest), and one forgotten (past 40).
        expect((await s.settle(T, odd(2970), 5, '', AT)).hold).to.deep.equal({ ref: odd(2970), amount: 10, state: 'settled', settled: 0, released: 10, at: day(2970), charge: false });
        expect((await s.settle(T, odd(2900), 5, '', AT)).status).to.equal('unknown');
        expect((await s.get(T)).held).to.equal(0);
      });
    });
  }

  describe('closed-hold retention (store.hold_retention_hours)', () => {
    /** A store pair (memory, or two Redis connections) forgetting closed holds after `ttlMs`, on one manual clock. */
    const retaining = (ttlMs: number) => {
      const clock = new ManualClock();
      const pair = env.pair<WalletStore>(
        () => new MemoryWalletStore({ closedHoldTtlMs: ttlMs, clock }),
        (client, px) => new RedisWalletStore({ client, prefix: px, closedHoldTtlMs: ttlMs, clock }),
      );
      return { clock, ...pair };
    };

    it('forgets a closed hold closedHoldTtlMs after it closed, on either connection; open holds and the ledger stay', async () => {
      const { clock, a: s, b: s2 } = retaining(60_000);
      await s.credit(T, 'topup', 'p', 10_000, '', AT);
      await s.hold(T, 'done', 1_000, '', AT);
      await s.hold(T, 'running', 1_000, '', AT);
      await s.settle(T, 'done', 1_000, '', AT);
      clock.advance(59_999);
      await s2.charge(T, 'later', 1, '', AT);
      expect((await s.settle(T, 'done', 1_000, '', AT)).status).to.equal('duplicate');
      clock.advance(1);
      await s2.charge(T, 'later2', 1, '', AT); // closing a hold forgets the ones due
      expect((await s.settle(T, 'done', 1_000, '', AT)).status).to.equal('unknown');
      const snap = await s.snapshot(T);
      expect(snap.holds.map((h) => h.ref)).to.deep.equal(['running', 'later', 'later2']);
      expect(snap.entries).to.have.length(1 + 1 + 1 + 1 + 2 + 2);
      expect(checkLedger(snap).violations).to.deep.equal([]);
      expect(snap.wallet).to.include({ balance: 10_000 - 1_000 - 2, held: 1_000 });
    });

    it('keeps the closed holds of the last window only, however many close (a charge per chat request)', async () => {
      const { clock, a: s, prefix: p } = retaining(1_000);
      await s.credit(T, 'topup', 'p', 1_000_000, '', AT);
      for (let i = 0; i < 300; i++) {
        await s.charge(T, `c${i}`, 1, '', AT);
        clock.advance(100); // 10 closes per window
      }
      const snap = await s.snapshot(T);
      expect(snap.holds.length).to.be.at.most(11);
      expect(snap.entries).to.have.length(1 + 600); // the ledger keeps every line
      if (env.isRedis) {
        expect(Number(await env.a.hlen(`${p}{t:${T}}:holds`))).to.equal(snap.holds.length);
        expect(Number(await env.a.llen(`${p}{t:${T}}:closed`))).to.equal(snap.holds.length);
        expect(() => new RedisWalletStore({ client: env.a, prefix: 'x:', closedHoldTtlMs: -1 })).to.throw(/closedHoldTtlMs/);
      }
      expect(() => new MemoryWalletStore({ closedHoldTtlMs: -1 })).to.throw(/closedHoldTtlMs/);
    });

    it('keeps the closed holds of the last window only under steady hold-and-settle traffic (a chat\'s, shelved on Redis)', async () => {
      // Closes never pause here, so on Redis the shelf moves a batch every second while older
      // holds fall due: a batch put ahead of those older ones would hold them back for good.
      const { clock, a: s, prefix: p } = retaining(2_000);
      await s.credit(T, 'topup', 'p', 1_000_000, '', AT);
      for (let i = 0; i < 300; i++) {
        await s.hold(T, `c${i}`, 2, '', AT, { upTo: true, newRef: true });
        await s.settle(T, `c${i}`, 1, '', AT);
        clock.advance(100); // 20 closes per window
      }
      const snap = await s.snapshot(T);
      // The window's 20, the shelf's second at most (10) and a look's slack: never the 300.
      expect(snap.holds.length).to.be.at.most(35);
      expect((await s.settle(T, 'c0', 1, '', AT)).status, 'the first is forgotten').to.equal('unknown');
      expect((await s.settle(T, 'c299', 1, '', AT)).status, 'the last is kept').to.equal('duplicate');
      expect(checkLedger(snap).violations).to.deep.equal([]);
      if (env.isRedis) expect(Number(await env.a.llen(`${p}{t:${T}}:closed`))).to.be.at.most(35);
    });
  });

  if (env.isRedis) {
    describe('redis specifics', () => {
      it('forgets closed holds late, never early, when the processes\' clocks differ', async () => {
        const [ahead, behind] = [new ManualClock(10_000), new ManualClock(0)];
        const s1 = new RedisWalletStore({ client: env.a, prefix, closedHoldTtlMs: 1_000, clock: ahead });
        const s2 = new RedisWalletStore({ client: env.b, prefix, closedHoldTtlMs: 1_000, clock: behind });
        await s1.credit(T, 'topup', 'p', 10_000, '', AT);
        await s1.charge(T, 'x', 1, '', AT); // forgotten at 11,000
        await s2.charge(T, 'y', 1, '', AT); // forgotten at 1,000, behind x in the list
        behind.advance(5_000);
        await s2.charge(T, 'z', 1, '', AT);
        expect((await s2.charge(T, 'y', 1, '', AT)).status, 'held back by x: late').to.equal('duplicate');
        behind.advance(6_000);
        await s2.charge(T, 'w', 1, '', AT);
        for (const ref of ['x', 'y', 'z']) expect((await s1.settle(T, ref, 1, '', AT)).status, ref).to.equal('unknown');
        expect((await s2.charge(T, 'w', 1, '', AT)).status).to.equal('duplicate');
      });

      it('keeps a tenant wallet in keys under the tenant hash tag; an open hold is a field of the wallet hash, shelved there a moment once closed', async () => {
        const clock = new ManualClock();
        const s = new RedisWalletStore({ client: env.a, prefix, closedHoldTtlMs: 60_000, clock });
        const w = `${prefix}{t:${T}}:wallet`;
        await s.credit(T, 'topup', 'p', 10_000, '', AT);
        await s.hold(T, 'h', 1_000, '', AT);
        expect(await keysUnder(env.a, prefix)).to.deep.equal(['credits', 'ledger', 'wallet'].map((k) => `${prefix}{t:${T}}:${k}`));
        expect(await env.a.hget(w, 'o:h')).to.match(/^open\|1000\|/);
        await s.settle(T, 'h', 400, '', AT);
        expect(await env.a.hget(w, 'o:h'), 'closed, on the shelf').to.match(/^settled\|1000\|400\|600\|/);
        const t0 = clock.now();
        expect(await env.a.hmget(w, 'cn', 'q:1')).to.deep.equal(['1', `${t0}|h`]);
        expect((await s.settle(T, 'h', 1, '', AT)).status).to.equal('duplicate');
        expect(await s.openHolds(T)).to.deep.equal([]);
        clock.advance(1_000);
        await s.hold(T, 'h2', 1, '', AT);
        await s.release(T, 'h2', '', AT); // the shelf's first has waited a second: moved
        expect(await env.a.hget(w, 'o:h'), 'moved to the holds hash').to.equal(null);
        expect(await env.a.hget(`${prefix}{t:${T}}:holds`, 'h')).to.match(/^settled\|/);
        expect(await env.a.lrange(`${prefix}{t:${T}}:closed`, 0, -1)).to.deep.equal([`${t0 + 60_000}|h`]);
        expect((await s.settle(T, 'h', 1, '', AT)).status).to.equal('duplicate');
        expect(await keysUnder(env.a, prefix)).to.deep.equal(['closed', 'credits', 'holds', 'ledger', 'wallet'].map((k) => `${prefix}{t:${T}}:${k}`));
      });

      it('closes and admissions asked while the tenant has nothing in flight go as ONE script run: the closes first, each call as alone', async () => {
        const runs = async () => {
          const st = await env.a.info('commandstats');
          return ['evalsha', 'eval'].reduce((n, c) => n + Number(new RegExp(`cmdstat_${c}:calls=(\\d+)`).exec(st)?.[1] ?? 0), 0);
        };
        await a.credit(T, 'topup', 'p', 1_000, '', AT);
        await a.hold(T, 'h1', 600, '', AT);
        await a.hold(T, 'h2', 400, '', AT);
        const before = await runs();
        // Asked in one turn: the holds first, yet they see the closes' money back (closes go first).
        const [x, y, s1, r2, dup, none] = await Promise.all([
          a.hold(T, 'x', 700, '', AT),
          a.hold(T, 'y', 500, '', AT, { upTo: true }),
          a.settle(T, 'h1', 200, 'n', AT),
          a.release(T, 'h2', '', AT),
          a.release(T, 'h1', '', AT),
          a.settle(T, 'nope', 1, '', AT),
        ]);
        expect(await runs(), 'one script run').to.equal(before + 1);
        expect([s1.status, r2.status, dup.status, none.status]).to.deep.equal(['closed', 'closed', 'duplicate', 'unknown']);
        expect(s1.wallet).to.include({ balance: 800, held: 400 });
        expect(x).to.include({ status: 'held' });
        expect(x.wallet).to.include({ balance: 800, held: 700 });
        expect(y.status).to.equal('held');
        expect(y.hold!.amount, 'up to what is left').to.equal(100);
        const snap = await a.snapshot(T);
        expect(snap.entries.map((e) => [e.kind, e.ref])).to.deep.equal([['topup', 'p'], ['hold', 'h1'], ['hold', 'h2'], ['settle', 'h1'], ['release', 'h1'], ['release', 'h2'], ['hold', 'x'], ['hold', 'y']]);
        expect(checkLedger(snap).ok).to.equal(true);
      });

      it('keeps the wallet hash a hashtable from its first write on, an older listpack wallet too', async () => {
        const w = `${prefix}{t:${T}}:wallet`;
        await a.credit(T, 'topup', 'p', 10_000, '', AT);
        expect(await env.a.object('ENCODING', w)).to.equal('hashtable');
        // As an older gateway left it: a listpack of the same numbers, without the marker.
        const old = await env.a.hgetall(w);
        delete old.enc;
        await env.a.del(w);
        await env.a.hset(w, old);
        expect(await env.a.object('ENCODING', w)).to.equal('listpack');
        expect((await a.hold(T, 'h', 1_000, '', AT)).wallet).to.include({ balance: 10_000, held: 1_000 });
        expect(await env.a.object('ENCODING', w)).to.equal('hashtable');
        expect((await a.settle(T, 'h', 400, '', AT)).wallet).to.include({ balance: 9_600, held: 0 });
      });

      it('a hold of a new ref (HoldOptions.newRef) reads no closed holds; one open or on the shelf is still a duplicate', async () => {
        const clock = new ManualClock();
        const s = new RedisWalletStore({ client: env.a, prefix, closedHoldTtlMs: 60_000, clock });
        const hmgets = async () => Number(/cmdstat_hmget:calls=(\d+)/.exec(await env.a.info('commandstats'))?.[1] ?? 0);
        await s.credit(T, 'topup', 'p', 10_000, '', AT);
        const before = await hmgets();
        expect((await s.hold(T, 'n1', 100, '', AT, { upTo: true, newRef: true })).status).to.equal('held');
        expect(await hmgets(), 'the wallet only').to.equal(before + 1);
        expect((await s.hold(T, 'n1', 100, '', AT, { upTo: true, newRef: true })).status, 'open').to.equal('duplicate');
        await s.settle(T, 'n1', 50, '', AT);
        expect((await s.hold(T, 'n1', 100, '', AT, { upTo: true, newRef: true })).status, 'on the shelf').to.equal('duplicate');
        clock.advance(1_000);
        await s.hold(T, 'n2', 1, '', AT);
        await s.release(T, 'n2', '', AT); // the shelf moves to the holds hash
        expect(await env.a.hget(`${prefix}{t:${T}}:holds`, 'n1')).to.match(/^settled\|/);
        expect((await s.hold(T, 'n1', 100, '', AT)).status, 'closed a while ago, looked for').to.equal('duplicate');
        expect((await s.get(T)).balance).to.equal(9_950);
      });

      it('closes a hold taken before open holds moved into the wallet (open set and holds hash)', async () => {
        await a.credit(T, 'topup', 'p', 10_000, '', AT);
        await a.hold(T, 'h', 1_000, '', AT);
        // As an older gateway left it: the open hold in the holds hash and the open set.
        const w = `${prefix}{t:${T}}:wallet`;
        const rec = (await env.a.hget(w, 'o:h'))!;
        await env.a.hdel(w, 'o:h');
        await env.a.hset(`${prefix}{t:${T}}:holds`, 'h', rec);
        await env.a.sadd(`${prefix}{t:${T}}:open`, 'h');
        expect((await a.openHolds(T)).map((h) => h.ref)).to.deep.equal(['h']);
        expect((await a.hold(T, 'h', 1_000, '', AT)).status).to.equal('duplicate');
        const r = await a.settle(T, 'h', 400, '', AT);
        expect(r.status).to.equal('closed');
        expect(r.wallet).to.include({ balance: 9_600, held: 0 });
        expect(await a.openHolds(T)).to.deep.equal([]);
        expect(await env.a.scard(`${prefix}{t:${T}}:open`)).to.equal(0);
      });

      it('agrees with the memory adapter on 400 random operations (differential)', async () => {
        const mem = new MemoryWalletStore();
        let seed = 42;
        const rnd = (n: number) => {
          seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
          return seed % n;
        };
        const norm = (x: unknown): unknown => JSON.parse(JSON.stringify(x, (k, v) => (k === 'id' && typeof v === 'string' && v.startsWith('led_') ? 'led' : v)));
        for (let i = 0; i < 400; i++) {
          const tenant = ['x1', 'x2'][rnd(2)]!;
          const ref = `r${rnd(25)}`;
          const amount = rnd(5_000);
          const now = 1_000 * i;
          const ops: [string, (s: WalletStore) => Promise<unknown>][] = [
            ['credit', (s) => s.credit(tenant, rnd(2) ? 'topup' : 'adjustment', ref, amount + 1, 'n', AT)],
            ['hold', (s) => s.hold(tenant, ref, amount, 'n', AT)],
            ['settle', (s) => s.settle(tenant, ref, amount, 'n', AT)],
            ['release', (s) => s.release(tenant, ref, 'n', AT)],
            ['charge', (s) => s.charge(tenant, ref, amount, 'n', AT)],
            ['threshold', (s) => s.setThreshold(tenant, rnd(3) ? amount : null)],
            ['low', (s) => s.lowBalance(tenant, { trigger: rnd(2) ? 'settlement' : 'credit', defaultThreshold: 20_000, subscribed: rnd(4) > 0, now, throttleMs: 5_000 })],
            ['list', (s) => s.list(tenant, 1 + rnd(4), rnd(3) ? undefined : 1 + rnd(30))],
          ];
          const [name, op] = ops[rnd(ops.length)]!;
          // Both stores consume the same random numbers: draw them once, replay for the second.
          const saved = seed;
          const want = norm(await op(mem));
          seed = saved;
          const got = norm(await op(i % 2 ? a : b));
          expect(got, `op ${i} ${name}`).to.deep.equal(want);
        }
        for (const t of ['x1', 'x2']) {
          const [m, s] = [await mem.snapshot(t), await a.snapshot(t)];
          expect(s.wallet).to.deep.equal(m.wallet);
          expect(s.entries.map(strip)).to.deep.equal(m.entries.map(strip));
          expect(s.holds).to.deep.equal(m.holds as HoldRecord[]);
          expect(checkLedger(s).violations).to.deep.equal([]);
        }
      });
    });
  }
});
