// The LimitsStore contract (concurrent-task slots, daily spend) and the rate limiters
// (in-memory vs Redis counters) through LimitsService, on every backend.
import { expect } from 'chai';
import { Redis } from 'ioredis';
import { checkLedger } from '../../engine/billing/invariant.ts';
import type { WalletStore } from '../../engine/billing/store.ts';
import { BillingService } from '../../engine/billing/service.ts';
import { GatewayError } from '../../engine/errors/gateway-error.ts';
import type { LimitsConfigInput } from '../../engine/limits/config.ts';
import { LimitsService } from '../../engine/limits/service.ts';
import type { RateCounters } from '../../engine/limits/store.ts';
import { memoryRateCounters } from '../../engine/store/memory/rate-counters.ts';
import type { LimitsStore } from '../../engine/limits/store.ts';
import { MemoryLimitsStore } from '../../engine/store/memory/limits.ts';
import { MemoryWalletStore } from '../../engine/store/memory/wallets.ts';
import { RedisLimitsStore } from '../../engine/store/redis/limits.ts';
import { redisRateCounters } from '../../engine/store/redis/rate.ts';
import { RedisWalletStore } from '../../engine/store/redis/wallets.ts';
import { ManualClock } from '../../engine/util/clock.ts';
import { forEachBackend, keysUnder } from './support.ts';
import { only } from '../helpers/limits.ts';
import { burst, outcome } from '../helpers/outcomes.ts';

const T = 'tenant-1';
const START = Date.parse('2026-03-10T12:00:00.000Z');
const C = (n: number) => n * 1000;

forEachBackend('LimitsStore contract and rate limiters', (env) => {
  let a: LimitsStore;
  let b: LimitsStore;
  let prefix: string;
  let clock: ManualClock;
  /** Two "processes": services over the two stores and two rate-limiter factories. */
  let factories: [RateCounters, RateCounters];
  const service = (config: LimitsConfigInput, i: 0 | 1 = 0) => new LimitsService({ store: i ? b : a, clock, config, rateCounters: factories[i] });

  beforeEach(() => {
    ({ a, b, prefix } = env.pair<LimitsStore>(() => new MemoryLimitsStore(), (client, p) => new RedisLimitsStore({ client, prefix: p })));
    clock = new ManualClock(START);
    if (env.isRedis) factories = [redisRateCounters(env.a, prefix), redisRateCounters(env.b, prefix)];
    else factories = [memoryRateCounters(), memoryRateCounters()];
  });

  describe('concurrent task slots', () => {
    // A slot is taken with its task's spend (admitTask, the one way in); nothing reserved here.
    const slot = async (store: LimitsStore, tenant: string, id: string, limit: number | null, now: number) =>
      (await store.admitTask(tenant, id, limit, now, { day: '2026-03-10', milli: 0, limit: null })).slot;

    it('acquires up to the limit, idempotently per task; releases exactly once', async () => {
      for (const id of ['t1', 't2', 't3']) expect(await slot(a, T, id, 3, 1)).to.equal('acquired');
      expect(await slot(b, T, 't2', 3, 2)).to.equal('already');
      expect(await slot(b, T, 't4', 3, 2)).to.equal('full');
      expect(await slot(a, 'tenant-2', 't4', 3, 2)).to.equal('acquired');
      expect(await a.activeTasks(T)).to.equal(3);
      expect(await b.releaseTask(T, 't1')).to.equal(true);
      expect(await a.releaseTask(T, 't1')).to.equal(false);
      expect(await a.releaseTask(T, 'never')).to.equal(false);
      expect(await b.activeTasks(T)).to.equal(2);
      expect(await slot(a, T, 't4', 3, 3)).to.equal('acquired');
      expect(await slot(a, T, 't5', null, 3)).to.equal('acquired'); // null: no limit
      expect(await a.activeTasks(T)).to.equal(4);
      expect(await a.activeTasks('nobody')).to.equal(0);
    });

    it('race: 40 acquires on two connections never pass the limit; duplicate releases free each slot once', async () => {
      const rs = await Promise.all(Array.from({ length: 40 }, (_, i) => slot(i % 2 ? a : b, T, `t${i}`, 10, i)));
      const acquired = rs.map((r, i) => (r === 'acquired' ? `t${i}` : null)).filter((x): x is string => x !== null);
      expect(acquired).to.have.length(10);
      expect(rs.filter((r) => r === 'full')).to.have.length(30);
      const freed = await Promise.all(acquired.flatMap((id) => [a.releaseTask(T, id), b.releaseTask(T, id), a.releaseTask(T, id)]));
      expect(freed.filter(Boolean)).to.have.length(10);
      expect(await a.activeTasks(T)).to.equal(0);
    });

    it('through LimitsService: 1005 with Retry-After when full', async () => {
      const limits = service({ concurrent_tasks: 2, concurrent_retry_after_seconds: 7 });
      await limits.acquireTask(T, 't1', C(1));
      await service({ concurrent_tasks: 2 }, 1).acquireTask(T, 't2', C(1));
      const e = (await outcome(limits.acquireTask(T, 't3', C(1)))) as GatewayError;
      expect([e.code, e.status, e.headers['Retry-After']]).to.deep.equal([1005, 429, '7']);
    });
  });

  describe('a task\'s admission: its slot and its spend in one step', () => {
    const D = '2026-03-10';
    it('takes the slot and reserves the spend under the task id; full reserves nothing; refused keeps the slot', async () => {
      const spend = (milli: number) => ({ day: D, milli, limit: C(100) });
      expect(await a.admitTask(T, 't1', 2, 1, spend(C(60)))).to.deep.equal({ slot: 'acquired', spend: { status: 'reserved', spent: C(60) } });
      // a repeat (the same Idempotency-Key) takes and reserves nothing more
      expect(await b.admitTask(T, 't1', 2, 2, spend(C(60)))).to.deep.equal({ slot: 'already', spend: { status: 'duplicate', spent: C(60) } });
      expect(await b.reserveSpend(T, 't1', D, C(1), null)).to.deep.equal({ status: 'duplicate', spent: C(60) });
      // over the day's limit: the slot is taken, the spend is not (the caller frees the slot)
      expect(await b.admitTask(T, 't2', 2, 3, spend(C(41)))).to.deep.equal({ slot: 'acquired', spend: { status: 'refused', spent: C(60) } });
      expect(await a.activeTasks(T)).to.equal(2);
      // full: no reservation made
      expect(await a.admitTask(T, 't3', 2, 4, spend(C(1)))).to.deep.equal({ slot: 'full' });
      expect(await a.spent(T, D)).to.equal(C(60));
      expect(await a.cancelSpend(T, 't3')).to.equal(false);
      // the reservation is reserveSpend's: finalized and cancelled the same way
      expect(await b.finalizeSpend(T, 't1', C(20))).to.equal(true);
      expect(await a.spent(T, D)).to.equal(C(20));
    });

    it('closeTask: the reservation finalized (or cancelled) and the slot freed, once each', async () => {
      await a.admitTask(T, 't1', 5, 1, { day: D, milli: C(60), limit: null });
      await a.admitTask(T, 't2', 5, 1, { day: D, milli: C(30), limit: null });
      expect(await b.closeTask(T, 't1', C(20))).to.deep.equal({ spend: true, slot: true });
      expect(await a.closeTask(T, 't1', C(20))).to.deep.equal({ spend: false, slot: false }); // a repeat changes nothing
      expect(await a.closeTask(T, 't2', null)).to.deep.equal({ spend: true, slot: true }); // null: cancelled
      expect(await b.spent(T, D)).to.equal(C(20));
      expect(await a.activeTasks(T)).to.equal(0);
      expect(await a.cancelSpend(T, 't1')).to.equal(false); // final
      expect((await a.reserveSpend(T, 't2', D, C(1), null)).status).to.equal('reserved'); // a cancelled ref may be reserved again
      expect(await a.closeTask(T, 'never', 0)).to.deep.equal({ spend: false, slot: false });
    });

    it('race: 30 admissions on two connections never pass the slot limit or the spend limit', async () => {
      const rs = await Promise.all(Array.from({ length: 30 }, (_, i) => (i % 2 ? a : b).admitTask(T, `t${i}`, 10, i, { day: D, milli: C(15), limit: C(100) })));
      expect(rs.filter((r) => r.slot === 'full')).to.have.length(20);
      expect(rs.filter((r) => r.spend?.status === 'reserved')).to.have.length(6);
      expect(rs.filter((r) => r.spend?.status === 'refused')).to.have.length(4);
      expect(await a.spent(T, D)).to.equal(C(90));
    });

    it('through LimitsService: 1005 for the spend frees the slot again; 1005 when full', async () => {
      const limits = service({ concurrent_tasks: 2, daily_spend_credits: 100 });
      await limits.acquireTask(T, 't1', C(60));
      const e = (await outcome(limits.acquireTask(T, 't2', C(41)))) as GatewayError;
      expect([e.code, e.status]).to.deep.equal([1005, 429]);
      expect(e.detail).to.match(/daily spend/);
      expect(await a.activeTasks(T)).to.equal(1);
      await limits.acquireTask(T, 't3', C(40));
      const full = (await outcome(limits.acquireTask(T, 't4', 0))) as GatewayError;
      expect(full.detail).to.match(/at most 2 asynchronous tasks/);
      expect(await b.spent(T, D)).to.equal(C(100));
    });
  });

  describe('daily spend', () => {
    const D = '2026-03-10';
    it('reserves under the limit once per ref, refuses past it, and reports the day total', async () => {
      expect(await a.reserveSpend(T, 'r1', D, C(60), C(100))).to.deep.equal({ status: 'reserved', spent: C(60) });
      expect(await b.reserveSpend(T, 'r1', D, C(60), C(100))).to.deep.equal({ status: 'duplicate', spent: C(60) });
      expect(await b.reserveSpend(T, 'r2', D, C(40) + 1, C(100))).to.deep.equal({ status: 'refused', spent: C(60) });
      expect(await a.reserveSpend(T, 'r2', D, C(40), C(100))).to.deep.equal({ status: 'reserved', spent: C(100) });
      expect(await a.reserveSpend(T, 'r3', D, C(500), null)).to.deep.equal({ status: 'reserved', spent: C(600) });
      expect(await b.spent(T, D)).to.equal(C(600));
      expect(await b.spent(T, '2026-03-11')).to.equal(0);
      expect(await b.spent('nobody', D)).to.equal(0);
    });

    it('cancel undoes an open reservation (the ref may be reserved again); finalize lowers it once', async () => {
      await a.reserveSpend(T, 'r1', D, C(60), null);
      await a.reserveSpend(T, 'r2', D, C(30), null);
      expect(await b.cancelSpend(T, 'r1')).to.equal(true);
      expect(await a.cancelSpend(T, 'r1')).to.equal(false);
      expect(await a.spent(T, D)).to.equal(C(30));
      expect((await a.reserveSpend(T, 'r1', D, C(10), null)).status).to.equal('reserved');
      expect(await b.finalizeSpend(T, 'r2', C(12))).to.equal(true);
      expect(await a.finalizeSpend(T, 'r2', C(1))).to.equal(false); // already final
      expect(await a.cancelSpend(T, 'r2')).to.equal(false); // final: not undone
      expect(await a.finalizeSpend(T, 'r1', C(99))).to.equal(true); // never above the reservation
      expect(await a.finalizeSpend(T, 'unknown', 1)).to.equal(false);
      expect(await b.spent(T, D)).to.equal(C(12) + C(10));
      expect(await a.finalizeSpend(T, 'r3', 0)).to.equal(false);
      await a.reserveSpend(T, 'r4', D, C(5), null);
      expect(await a.finalizeSpend(T, 'r4', -5)).to.equal(true); // negative counts as 0
      expect(await b.spent(T, D)).to.equal(C(22));
    });

    it('finalizes on the day the reservation was made', async () => {
      await a.reserveSpend(T, 'r1', '2026-03-10', C(100), null);
      await a.reserveSpend(T, 'r2', '2026-03-11', C(50), null);
      await b.finalizeSpend(T, 'r1', C(10));
      expect([await a.spent(T, '2026-03-10'), await a.spent(T, '2026-03-11')]).to.deep.equal([C(10), C(50)]);
    });

    it("adds post-paid spend with no limit and keeps no record of it (the wallet's charge is once per ref)", async () => {
      await a.reserveSpend(T, 'r1', D, C(100), null);
      await a.recordSpend(T, D, C(5));
      await b.recordSpend(T, D, C(5));
      expect(await a.spent(T, D)).to.equal(C(110));
      // Only the day's total is kept: a chat request a second would otherwise leave 345,600 records in four days.
      if (env.isRedis) expect(await keysUnder(env.a, prefix)).to.deep.equal([`${prefix}{t:${T}}:spend:r1`, `${prefix}{t:${T}}:wallet`]);
    });

    it('drops day totals older than three days before the day written', async () => {
      for (const d of ['2026-03-01', '2026-03-05', '2026-03-06', '2026-03-07']) await a.reserveSpend(T, `r-${d}`, d, C(1), null);
      await a.reserveSpend(T, 'r-new', '2026-03-09', C(1), null);
      expect(await b.spent(T, '2026-03-01')).to.equal(0);
      expect(await b.spent(T, '2026-03-05')).to.equal(0);
      expect(await b.spent(T, '2026-03-06')).to.equal(C(1));
      expect(await b.spent(T, '2026-03-09')).to.equal(C(1));
    });

    it('race: 30 reservations on two connections never pass the limit', async () => {
      const rs = await Promise.all(Array.from({ length: 30 }, (_, i) => (i % 2 ? a : b).reserveSpend(T, `p${i}`, D, C(10), C(100))));
      expect(rs.filter((r) => r.status === 'reserved')).to.have.length(10);
      expect(rs.filter((r) => r.status === 'refused')).to.have.length(20);
      expect(await a.spent(T, D)).to.equal(C(100));
      const dup = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 ? a : b).reserveSpend(T, 'same', '2026-03-11', C(1), null)));
      expect(dup.filter((r) => r.status === 'reserved')).to.have.length(1);
      expect(await a.spent(T, '2026-03-11')).to.equal(C(1));
    });

    it('through BillingService: holds count, a refused hold counts nothing, settle/release give back once', async () => {
      clock.set(Date.parse('2026-03-10T18:00:00.000Z'));
      const wallets: WalletStore = env.isRedis ? new RedisWalletStore({ client: env.a, prefix }) : new MemoryWalletStore();
      const limits = service({ daily_spend_credits: '100.00' });
      const billing = new BillingService({ store: wallets, clock, spend: limits });
      await billing.topUp(T, C(1000), 'pay_1');
      await billing.hold(T, 'a', C(60));
      await billing.hold(T, 'b', C(40));
      const e = (await outcome(billing.hold(T, 'c', 1))) as GatewayError;
      expect([e.code, e.headers['Retry-After']]).to.deep.equal([1005, String(6 * 3600)]);
      expect(e.detail).to.equal('Quota exceeded: the daily spend limit of 100.00 credits is reached (100.00 spent today, UTC).');
      await billing.settle(T, 'a', C(20));
      await billing.settle(T, 'a', C(20));
      await billing.release(T, 'b');
      expect(await limits.spentToday(T)).to.equal(C(20));
      await billing.topUp('poor', C(10), 'pay_1');
      expect(((await outcome(billing.hold('poor', 'x', C(50)))) as GatewayError).code).to.equal(1003);
      expect(await limits.spentToday('poor')).to.equal(0);
      const rs = await Promise.all(Array.from({ length: 12 }, (_, i) => outcome(billing.hold(T, `p${i}`, C(10)))));
      expect(rs.filter((r) => r === 'ok')).to.have.length(8);
      expect(await limits.spentToday(T)).to.equal(C(100));
      for (const t of [T, 'poor']) expect(checkLedger(await wallets.snapshot(t)).violations).to.deep.equal([]);
    });

    if (!env.isRedis) {
      it('memory: a day dropped takes its spend records with it (a ref is recognised while its day is kept)', async () => {
        await a.reserveSpend(T, 'r1', '2026-03-05', C(1), null);
        await a.reserveSpend(T, 'r2', '2026-03-08', C(1), null);
        expect((await a.reserveSpend(T, 'r1', '2026-03-08', C(1), null)).status).to.equal('duplicate');
        await a.recordSpend(T, '2026-03-09', C(1)); // 03-05 is now more than three days back
        expect(await a.spent(T, '2026-03-05')).to.equal(0);
        expect(await a.finalizeSpend(T, 'r1', 0)).to.equal(false);
        expect(await a.reserveSpend(T, 'r1', '2026-03-09', C(1), null)).to.deep.equal({ status: 'reserved', spent: C(2) });
      });

      it('memory: finalRefs bounds the finalized records per tenant, oldest first; totals stay exact, open reservations stay', async () => {
        const s = new MemoryLimitsStore({ finalRefs: 2 });
        const day = '2026-03-10';
        await s.reserveSpend(T, 'open', day, C(5), null);
        for (const ref of ['f1', 'f2', 'f3']) {
          await s.reserveSpend(T, ref, day, C(2), null);
          await s.finalizeSpend(T, ref, C(1));
        }
        expect(await s.spent(T, day)).to.equal(C(8));
        // f1 is forgotten (a late duplicate of it would count again, as for the wallet's closed holds);
        expect((await s.reserveSpend(T, 'f1', day, C(1), null)).status).to.equal('reserved');
        // f2, f3 are still recognised, and the open reservation was never dropped.
        for (const ref of ['f2', 'f3', 'open']) expect((await s.reserveSpend(T, ref, day, C(1), null)).status).to.equal('duplicate');
        expect(await s.finalizeSpend(T, 'open', C(5))).to.equal(true);
        expect(await s.spent(T, day)).to.equal(C(9));
        expect(() => new MemoryLimitsStore({ finalRefs: 0 })).to.throw(/finalRefs/);
      });
    }
  });

  describe('request rates', () => {
    it('a burst above the per-second key limit: the first N pass, the rest get 1004 with Retry-After', async () => {
      const limits = service(only({ key: { per_second: 5 } }));
      clock.advance(250);
      const { ok, refused } = await burst(12, () => limits.checkRequest({ tenantId: T, keyId: 'k1' }));
      expect(ok).to.equal(5);
      expect(refused).to.have.length(7);
      for (const e of refused) {
        expect([e.code, e.status, e.headers['Retry-After']]).to.deep.equal([1004, 429, '1']);
        expect(e.detail).to.equal('Rate limit exceeded: 5 requests per second for this API key.');
      }
      clock.advance(750); // the next second
      expect((await burst(6, () => limits.checkRequest({ tenantId: T, keyId: 'k1' }))).ok).to.equal(5);
    });

    it('two processes share the counters: a burst split across them admits exactly the limit', async () => {
      const config = only({ key: { per_second: 5 }, tenant: { per_minute: 8 } });
      const p1 = service(config, 0);
      const p2 = env.isRedis ? service(config, 1) : p1; // memory mode is one process: one set of limiters
      const first = await burst(20, (i) => (i % 2 ? p1 : p2).checkRequest({ tenantId: T, keyId: 'k1' }));
      expect(first.ok).to.equal(5);
      clock.advance(1000);
      const second = await burst(20, (i) => (i % 2 ? p1 : p2).checkRequest({ tenantId: T, keyId: 'k1' }));
      expect(second.ok).to.equal(3); // the tenant minute: 8 in all
      expect(second.refused.some((e) => /8 requests per minute for this account/.test(e.detail))).to.equal(true);
    });

    it('per-minute: Retry-After is the rest of the minute, and the window resets', async () => {
      const limits = service(only({ key: { per_minute: 3 } }));
      clock.advance(10_500);
      expect((await burst(3, () => limits.checkRequest({ tenantId: T, keyId: 'k1' }))).ok).to.equal(3);
      const e = (await outcome(limits.checkRequest({ tenantId: T, keyId: 'k1' }))) as GatewayError;
      expect(e.headers['Retry-After']).to.equal('50');
      clock.advance(49_499);
      expect(await outcome(limits.checkRequest({ tenantId: T, keyId: 'k1' }))).to.be.instanceOf(GatewayError);
      clock.advance(1);
      expect(await outcome(limits.checkRequest({ tenantId: T, keyId: 'k1' }))).to.equal('ok');
    });

    it('refused requests never count against any window or scope', async () => {
      const limits = service(only({ key: { per_second: 2, per_minute: 10 }, tenant: { per_second: 3 } }));
      expect((await burst(20, () => limits.checkRequest({ tenantId: T, keyId: 'k1' }))).ok).to.equal(2);
      clock.advance(1000);
      expect((await burst(2, () => limits.checkRequest({ tenantId: T, keyId: 'k1' }))).ok).to.equal(2);
      // A request refused by the tenant scope is given back to the key scope too.
      const k2 = await burst(4, () => limits.checkRequest({ tenantId: T, keyId: 'k2' }));
      expect(k2.ok).to.equal(1); // tenant: 2 + 1 = 3 this second
      expect(k2.refused[0]!.detail).to.match(/3 requests per second for this account/);
      for (let s = 0; s < 3; s++) {
        clock.advance(1000);
        expect((await burst(2, () => limits.checkRequest({ tenantId: T, keyId: 'k2' }))).ok, `second ${s}`).to.equal(2);
      }
      clock.advance(1000);
      expect((await burst(2, () => limits.checkRequest({ tenantId: T, keyId: 'k2' }))).ok).to.equal(2);
      clock.advance(1000);
      const last = await burst(2, () => limits.checkRequest({ tenantId: T, keyId: 'k2' }));
      expect(last.ok).to.equal(1);
      expect(last.refused[0]!.detail).to.match(/10 requests per minute for this API key/);
    });

    it('per-day windows are UTC days; the model scope is per tenant and model', async () => {
      const limits = service(only({ tenant: { per_day: 2 }, model: { per_minute: 1 } }));
      expect((await burst(3, () => limits.checkRequest({ tenantId: T, keyId: 'k1', model: 'm1' }))).ok).to.equal(1);
      expect(await outcome(limits.checkRequest({ tenantId: T, keyId: 'k1', model: 'm2' }))).to.equal('ok');
      const e = (await outcome(limits.checkRequest({ tenantId: T, keyId: 'k2' }))) as GatewayError;
      expect(e.headers['Retry-After']).to.equal(String(12 * 3600));
      clock.set(Date.parse('2026-03-11T00:00:00.000Z'));
      expect(await outcome(limits.checkRequest({ tenantId: T, keyId: 'k2' }))).to.equal('ok');
    });
  });

  if (env.isRedis) {
    describe('redis specifics', () => {
      it('keeps a tenant\'s counters and day totals in its wallet hash (its slot), a field each', async () => {
        const limits = service(only({ key: { per_second: 5 } }));
        await limits.checkRequest({ tenantId: T, keyId: 'k1' });
        await a.admitTask(T, 't1', null, 0, { day: '2026-03-10', milli: 5, limit: null });
        const keys = await keysUnder(env.a, prefix);
        const window = Math.floor(clock.now() / 1000);
        expect(keys).to.deep.equal([`${prefix}{t:${T}}:active`, `${prefix}{t:${T}}:spend:t1`, `${prefix}{t:${T}}:wallet`]);
        expect(await env.a.hgetall(keys[2]!)).to.deep.equal({ 'w:rl_key:k1': `${window}|1||0||0`, 's:2026-03-10': '5', sd: '2026-03-10' });
        expect(await env.a.ttl(keys[1]!)).to.be.within(4 * 86_400 - 5, 4 * 86_400);
      });

      it('a counter, tenant or not: counts its window, gives back within it, turns, and a lagging window counts 1 and changes nothing', async () => {
        const c = factories[0];
        const one = (name: string, id: string, n: number) => [{ name, windowMs: 1000, id, n }];
        const steps = async (name: string, t: string | undefined) => {
          const add = async (id: string, n: number) => (await c.add(one(name, id, n), t))[0];
          const remove = async (id: string, n: number) => {
            await c.remove(one(name, id, n), t);
            return (await c.add(one(name, id, n), t))[0]! - 1; // what the give-back left
          };
          return [await add('k', 10), await add('k', 10), await remove('k', 10), await add('k', 12), await add('k', 11), await add('k', 12), await remove('k', 11), await remove('fresh', 12)];
        };
        // A lagging window (11 after 12) counts as the first of its window and changes nothing.
        const want = [1, 2, 1, 1, 1, 2, 0, 0];
        expect(await steps('rl_key_per_second', T)).to.deep.equal(want);
        expect(await env.a.hget(`${prefix}{t:${T}}:wallet`, 'w:rl_key:k')).to.equal('12|2||0||0');
        expect(await steps('auth_failures', undefined)).to.deep.equal(want);
      });

      it("a scope's windows share one field; an older gateway's field per window moves in at the first count", async () => {
        const w = `${prefix}{t:${T}}:wallet`;
        const [s, m] = [Math.floor(clock.now() / 1000), Math.floor(clock.now() / 60_000)];
        await env.a.hset(w, 'r:rl_key_per_second:k1', `${s}|4`, 'r:rl_key_per_minute:k1', `${m}|7`, 'r:rl_tenant_per_day:other', '1|1');
        const limits = service(only({ key: { per_second: 5, per_minute: 100 }, tenant: { per_minute: 100 } }));
        await limits.checkRequest({ tenantId: T, keyId: 'k1' });
        const refused = await outcome(limits.checkRequest({ tenantId: T, keyId: 'k1' }));
        expect(refused !== 'ok' && refused.code, 'the sixth this second').to.equal(1004);
        expect(await env.a.hgetall(w)).to.deep.equal({ 'w:rl_key:k1': `${s}|5|${m}|8||0`, [`w:rl_tenant:${T}`]: `|0|${m}|1||0`, 'r:rl_tenant_per_day:other': '1|1' });
      });

      it('a day total of the spend hash of an older gateway moves into the wallet at the first write, and is read until then', async () => {
        await env.a.hset(`${prefix}{t:${T}}:spend`, '2026-03-10', '700', '2026-03-09', '20');
        expect(await a.spent(T, '2026-03-10')).to.equal(700);
        await a.recordSpend(T, '2026-03-10', 5);
        expect(await b.spent(T, '2026-03-10')).to.equal(705);
        expect(await b.spent(T, '2026-03-09')).to.equal(20);
        expect(await env.a.exists(`${prefix}{t:${T}}:spend`)).to.equal(0);
      });

      it('an unreachable Redis fails the rate check at once with 4003', async () => {
        const dead = new Redis({ host: '127.0.0.1', port: 1, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
        dead.on('error', () => {});
        const limits = new LimitsService({ store: a, clock, config: only({ key: { per_second: 5 } }), rateCounters: redisRateCounters(dead, prefix) });
        const started = Date.now();
        const e = (await outcome(limits.checkRequest({ tenantId: T, keyId: 'k1' }))) as GatewayError;
        expect([e.code, e.status, e.headers['Retry-After']]).to.deep.equal([4003, 503, '1']);
        expect(Date.now() - started).to.be.below(1000);
        dead.disconnect();
      });
    });
  }
});
