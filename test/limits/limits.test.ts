import { expect } from 'chai';
import { GatewayError } from '../../engine/errors/gateway-error.ts';
import { LimitsConfig, type LimitsConfigInput } from '../../engine/limits/config.ts';
import { LimitsService } from '../../engine/limits/service.ts';
import type { RateCounters } from '../../engine/limits/store.ts';
import { memoryRateCounters } from '../../engine/store/memory/rate-counters.ts';
import { MemoryLimitsStore } from '../../engine/store/memory/limits.ts';
import { MemoryWalletStore } from '../../engine/store/memory/wallets.ts';
import { BillingService } from '../../engine/billing/service.ts';
import { checkLedger } from '../../engine/billing/invariant.ts';
import { ManualClock } from '../../engine/util/clock.ts';
import { only } from '../helpers/limits.ts';
import { burst, outcome } from '../helpers/outcomes.ts';

const T = 'tenant-1';
const START = Date.parse('2026-03-10T12:00:00.000Z');

describe('limits', () => {
  let clock: ManualClock;
  let store: MemoryLimitsStore;
  const make = (config: LimitsConfigInput, counters?: RateCounters) =>
    new LimitsService({ store, clock, config, rateCounters: counters ?? memoryRateCounters() });

  beforeEach(() => {
    clock = new ManualClock(START);
    store = new MemoryLimitsStore();
  });

  describe('request rates (1004)', () => {
    it('a burst above the per-second key limit gets 429 1004 with Retry-After; the first N pass', async () => {
      const limits = make(only({ key: { per_second: 5 } }));
      clock.advance(250);
      const { ok, refused } = await burst(12, () => limits.checkRequest({ tenantId: T, keyId: 'k1' }));
      expect(ok).to.equal(5);
      expect(refused).to.have.length(7);
      for (const e of refused) {
        expect([e.code, e.status, e.title]).to.deep.equal([1004, 429, 'Rate Limit Exceeded']);
        expect(e.headers['Retry-After']).to.equal('1');
        expect(e.detail).to.equal('Rate limit exceeded: 5 requests per second for this API key.');
      }
    });

    it('never refuses requests under the limit, second after second', async () => {
      const limits = make(only({ key: { per_second: 5 }, tenant: { per_minute: 15 } }));
      for (let s = 0; s < 3; s++) {
        const { ok } = await burst(5, () => limits.checkRequest({ tenantId: T, keyId: 'k1' }));
        expect(ok, `second ${s}`).to.equal(5);
        clock.advance(1000);
      }
      // 15 used this minute: the tenant minute limit now refuses, with the time left in the minute
      const e = (await outcome(limits.checkRequest({ tenantId: T, keyId: 'k1' }))) as GatewayError;
      expect(e.code).to.equal(1004);
      expect(e.headers['Retry-After']).to.equal('57');
      expect(e.detail).to.match(/15 requests per minute for this account/);
      clock.advance(57_000); // the minute turns
      expect(await outcome(limits.checkRequest({ tenantId: T, keyId: 'k1' }))).to.equal('ok');
    });

    it('per-minute: Retry-After is the rest of the minute, and the window resets', async () => {
      const limits = make(only({ key: { per_minute: 3 } }));
      clock.advance(10_500); // 12:00:10.5
      expect((await burst(3, () => limits.checkRequest({ tenantId: T, keyId: 'k1' }))).ok).to.equal(3);
      const e = (await outcome(limits.checkRequest({ tenantId: T, keyId: 'k1' }))) as GatewayError;
      expect(e.headers['Retry-After']).to.equal('50'); // ceil(49.5)
      clock.advance(49_499);
      expect(await outcome(limits.checkRequest({ tenantId: T, keyId: 'k1' }))).to.be.instanceOf(GatewayError);
      clock.advance(1);
      expect(await outcome(limits.checkRequest({ tenantId: T, keyId: 'k1' }))).to.equal('ok');
    });

    it('per-day windows are UTC days; Retry-After runs to midnight', async () => {
      const limits = make(only({ tenant: { per_day: 2 } }));
      expect((await burst(2, () => limits.checkRequest({ tenantId: T, keyId: 'k1' }))).ok).to.equal(2);
      const e = (await outcome(limits.checkRequest({ tenantId: T, keyId: 'k2' }))) as GatewayError;
      expect(e.headers['Retry-After']).to.equal(String(12 * 3600));
      clock.set(Date.parse('2026-03-11T00:00:00.000Z'));
      expect(await outcome(limits.checkRequest({ tenantId: T, keyId: 'k2' }))).to.equal('ok');
    });

    it('the tenant limit spans its keys; refused requests of one key do not use up the tenant budget', async () => {
      const limits = make(only({ key: { per_second: 2 }, tenant: { per_second: 4 } }));
      const hammer = await burst(20, () => limits.checkRequest({ tenantId: T, keyId: 'k1' }));
      expect(hammer.ok).to.equal(2);
      // the tenant has used 2 of 4: another key still gets 2
      const other = await burst(3, () => limits.checkRequest({ tenantId: T, keyId: 'k2' }));
      expect(other.ok).to.equal(2);
      expect(other.refused[0]!.detail).to.match(/this API key/);
      const third = await burst(2, () => limits.checkRequest({ tenantId: T, keyId: 'k3' }));
      expect(third.ok).to.equal(0);
      expect(third.refused[0]!.detail).to.match(/4 requests per second for this account/);
      // another tenant is unaffected
      expect((await burst(2, () => limits.checkRequest({ tenantId: 'tenant-2', keyId: 'k9' }))).ok).to.equal(2);
    });

    // That refused requests never count against any window or scope is in the LimitsStore
    // contract (test/store/limits.contract), on both stores.

    it('the model scope is per tenant and model, with per-model overrides', async () => {
      const limits = make(only({ model: { per_minute: 3 } }, { models: { model_a: { per_minute: 1 } } }));
      expect((await burst(5, () => limits.checkRequest({ tenantId: T, keyId: 'k1', model: 'model_d' }))).ok).to.equal(3);
      const a = await burst(3, () => limits.checkRequest({ tenantId: T, keyId: 'k1', model: 'model_a' }));
      expect(a.ok).to.equal(1);
      expect(a.refused[0]!.detail).to.equal('Rate limit exceeded: 1 requests per minute for this model.');
      expect((await burst(3, () => limits.checkRequest({ tenantId: 'tenant-2', keyId: 'k2', model: 'model_d' }))).ok).to.equal(3);
      // no model given: the model scope does not apply
      expect((await burst(10, () => limits.checkRequest({ tenantId: T, keyId: 'k1' }))).ok).to.equal(10);
    });

    it('per-tenant overrides win; null means unlimited', async () => {
      const limits = make(only({ tenant: { per_second: 2 } }, { tenants: { vip: { rate: { tenant: { per_second: null } } }, small: { rate: { tenant: { per_second: 1 } } } } }));
      expect((await burst(50, () => limits.checkRequest({ tenantId: 'vip', keyId: 'k1' }))).ok).to.equal(50);
      expect((await burst(5, () => limits.checkRequest({ tenantId: 'small', keyId: 'k2' }))).ok).to.equal(1);
      expect((await burst(5, () => limits.checkRequest({ tenantId: T, keyId: 'k3' }))).ok).to.equal(2);
    });

    it('applies the documented defaults', async () => {
      const limits = make({});
      expect(limits.config.forTenant(T, 'm')).to.deep.equal({
        rate: {
          key: { per_second: 20, per_minute: 600, per_day: 100_000 },
          model: { per_second: 10, per_minute: 300, per_day: null },
          tenant: { per_second: 50, per_minute: 1500, per_day: 500_000 },
        },
        concurrentTasks: 20,
        dailySpend: 100_000_000,
      });
      const { ok, refused } = await burst(25, () => limits.checkRequest({ tenantId: T, keyId: 'k1', model: 'm' }));
      expect(ok).to.equal(10); // the model scope is the tightest default (10/s)
      expect(refused[0]!.detail).to.match(/10 requests per second for this model/);
    });

    it('uses the injected counters (e.g. Redis), asynchronous ones too, one call per request, and maps store failures to 4003', async () => {
      const calls: [string, number][][] = [];
      // Counters that answer with promises, as the Redis ones do.
      const c = memoryRateCounters();
      const limits = make(only({ key: { per_second: 3, per_day: 10 } }), {
        add: async (counts, slot) => {
          expect(slot).to.equal(T);
          calls.push(counts.map((k) => [k.name, k.windowMs]));
          return c.add(counts);
        },
        remove: async (counts) => c.remove(counts),
      });
      const { ok, refused } = await burst(5, () => limits.checkRequest({ tenantId: T, keyId: 'k1' }));
      expect(calls).to.have.length(5);
      expect(calls[0]).to.deep.equal([['rl_key_per_second', 1000], ['rl_key_per_day', 86_400_000]]);
      expect(ok).to.equal(3);
      expect(refused.map((e) => e.code)).to.deep.equal([1004, 1004]);
      // The refused two were given back: 7 more fit in the day once the second turns.
      clock.advance(1000);
      expect((await burst(3, () => limits.checkRequest({ tenantId: T, keyId: 'k1' }))).ok).to.equal(3);
      clock.advance(1000);
      expect((await burst(3, () => limits.checkRequest({ tenantId: T, keyId: 'k1' }))).ok).to.equal(3);
      clock.advance(1000);
      const last = await burst(3, () => limits.checkRequest({ tenantId: T, keyId: 'k1' }));
      expect(last.ok).to.equal(1);
      expect(last.refused[0]!.detail).to.equal('Rate limit exceeded: 10 requests per day for this API key.');
      const broken = make(only({ key: { per_second: 3 } }), {
        add: async () => Promise.reject(new Error('ECONNREFUSED')),
        remove: async () => Promise.reject(new Error('ECONNREFUSED')),
      });
      const e = (await outcome(broken.checkRequest({ tenantId: T, keyId: 'k1' }))) as GatewayError;
      expect([e.code, e.status, e.headers['Retry-After']]).to.deep.equal([4003, 503, '1']);
    });

    it('rejects invalid configuration at construction', () => {
      expect(() => new LimitsConfig({ rate: { key: { per_second: 0 } } })).to.throw(/limits\.rate\.key\.per_second: must be a positive integer/);
      expect(() => new LimitsConfig({ tenants: { t: { concurrent_tasks: -1 } } })).to.throw(/limits.tenants.t.concurrent_tasks/);
      expect(() => new LimitsConfig({ daily_spend_credits: '1.2345' })).to.throw(/3 decimals/);
      expect(() => new LimitsConfig({ models: { m: { per_minute: 1.5 } } })).to.throw(/per_minute/);
    });
  });

  describe('concurrent tasks (1005)', () => {
    // A task is admitted with its hold's spend (the product's path: the price is quoted first).
    const HOLD = 1_000;
    it('acquires up to the limit, refuses the next with 1005 + Retry-After, frees on release', async () => {
      const limits = make({ concurrent_tasks: 3, concurrent_retry_after_seconds: 7 });
      for (const id of ['t1', 't2', 't3']) await limits.acquireTask(T, id, HOLD);
      await limits.acquireTask(T, 't2', HOLD); // the same task again: idempotent, no second slot
      expect(await limits.activeTasks(T)).to.equal(3);
      const e = (await outcome(limits.acquireTask(T, 't4', HOLD))) as GatewayError;
      expect([e.code, e.status, e.title]).to.deep.equal([1005, 429, 'Quota Exceeded']);
      expect(e.headers['Retry-After']).to.equal('7');
      expect(e.detail).to.match(/at most 3 asynchronous tasks/);
      expect(await outcome(limits.acquireTask('tenant-2', 'x', HOLD))).to.equal('ok'); // per tenant
      expect(await limits.releaseTask(T, 't1')).to.equal(true);
      expect(await limits.releaseTask(T, 't1')).to.equal(false); // exactly once
      expect(await limits.activeTasks(T)).to.equal(2);
      await limits.acquireTask(T, 't4', HOLD);
      expect(await limits.activeTasks(T)).to.equal(3);
    });

    it('parallel acquires never pass the limit; parallel duplicate releases free each slot once', async () => {
      const limits = make({ concurrent_tasks: 10 });
      const rs = await Promise.all(Array.from({ length: 40 }, (_, i) => outcome(limits.acquireTask(T, `t${i}`, HOLD))));
      const acquired = rs.map((r, i) => (r === 'ok' ? `t${i}` : null)).filter((x): x is string => x !== null);
      expect(acquired).to.have.length(10);
      expect(rs.filter((r) => r !== 'ok').every((r) => (r as GatewayError).code === 1005)).to.equal(true);
      const freed = await Promise.all(acquired.flatMap((id) => [limits.releaseTask(T, id), limits.releaseTask(T, id), limits.releaseTask(T, id)]));
      expect(freed.filter(Boolean)).to.have.length(10);
      expect(await limits.activeTasks(T)).to.equal(0);
    });

    it('null means no concurrency limit', async () => {
      const limits = make({ concurrent_tasks: null });
      await Promise.all(Array.from({ length: 100 }, (_, i) => limits.acquireTask(T, `t${i}`, HOLD)));
      expect(await limits.activeTasks(T)).to.equal(100);
    });
  });

  describe('daily spend (1005)', () => {
    const C = (n: number) => n * 1000;
    let limits: LimitsService;
    let wallets: MemoryWalletStore;
    let billing: BillingService;
    beforeEach(async () => {
      clock.set(Date.parse('2026-03-10T18:00:00.000Z'));
      limits = make({ daily_spend_credits: '100.00', tenants: { big: { daily_spend_credits: null } } });
      wallets = new MemoryWalletStore();
      billing = new BillingService({ store: wallets, clock, spend: limits });
      await billing.topUp(T, C(1000), 'pay_1');
    });
    afterEach(async () => {
      for (const t of wallets.tenants()) expect(checkLedger(await wallets.snapshot(t)).violations).to.deep.equal([]);
    });

    it('counts holds; a hold past the limit is refused with 1005 and nothing is held', async () => {
      await billing.hold(T, 'a', C(60));
      await billing.hold(T, 'b', C(40)); // exactly 100.00: allowed
      expect(await limits.spentToday(T)).to.equal(C(100));
      const e = (await outcome(billing.hold(T, 'c', 1))) as GatewayError;
      expect([e.code, e.status]).to.deep.equal([1005, 429]);
      expect(e.headers['Retry-After']).to.equal(String(6 * 3600)); // to 00:00 UTC
      expect(e.detail).to.equal('Quota exceeded: the daily spend limit of 100.00 credits is reached (100.00 spent today, UTC).');
      expect((await wallets.snapshot(T)).holds.map((h) => h.ref)).to.deep.equal(['a', 'b']);
      expect(await limits.spentToday(T)).to.equal(C(100));
    });

    it('settling less and releasing give the unspent part back, exactly once', async () => {
      await billing.hold(T, 'a', C(60));
      await billing.hold(T, 'b', C(40));
      await billing.settle(T, 'a', C(20));
      await billing.settle(T, 'a', C(20)); // duplicate: no second adjustment
      expect(await limits.spentToday(T)).to.equal(C(60));
      await billing.release(T, 'b');
      await billing.release(T, 'b');
      expect(await limits.spentToday(T)).to.equal(C(20));
      await billing.hold(T, 'c', C(80));
      expect((await outcome(billing.hold(T, 'd', 1))) as GatewayError).to.have.property('code', 1005);
    });

    it('a hold refused for insufficient balance does not count', async () => {
      await billing.topUp('poor', C(10), 'pay_1');
      expect(((await outcome(billing.hold('poor', 'a', C(50)))) as GatewayError).code).to.equal(1003);
      expect(await limits.spentToday('poor')).to.equal(0);
      await billing.topUp('poor', C(100), 'pay_2');
      await billing.hold('poor', 'a', C(50)); // the same ref may be held once funds arrive
      expect(await limits.spentToday('poor')).to.equal(C(50));
    });

    it('parallel holds never pass the limit', async () => {
      const rs = await Promise.all(Array.from({ length: 30 }, (_, i) => outcome(billing.hold(T, `p${i}`, C(10)))));
      expect(rs.filter((r) => r === 'ok')).to.have.length(10);
      expect(rs.filter((r) => r !== 'ok').every((r) => (r as GatewayError).code === 1005)).to.equal(true);
      expect(await limits.spentToday(T)).to.equal(C(100));
      expect((await billing.getWallet(T)).held).to.equal(C(100));
    });

    it('post-paid charges are recorded and checkSpend refuses once the limit is reached', async () => {
      await limits.checkSpend(T);
      await billing.charge(T, 'req_1', C(99));
      await limits.checkSpend(T); // 99 of 100
      expect(((await outcome(limits.checkSpend(T, C(2)))) as GatewayError).code).to.equal(1005);
      await billing.charge(T, 'req_2', C(5)); // already served: recorded, not refused
      await billing.charge(T, 'req_2', C(5));
      expect(await limits.spentToday(T)).to.equal(C(104));
      expect(((await outcome(limits.checkSpend(T))) as GatewayError).code).to.equal(1005);
    });

    it('starts again on the next UTC day; a hold counts on the day it was taken', async () => {
      await billing.hold(T, 'a', C(100));
      clock.set(Date.parse('2026-03-11T00:00:00.000Z'));
      expect(await limits.spentToday(T)).to.equal(0);
      await billing.hold(T, 'b', C(100));
      await billing.settle(T, 'a', C(10)); // yesterday's hold settles today: yesterday's total drops
      expect(await limits.spentToday(T)).to.equal(C(100));
      expect(await store.spent(T, '2026-03-10')).to.equal(C(10));
    });

    it('honours a per-tenant unlimited override', async () => {
      await billing.topUp('big', C(10_000), 'pay_1');
      await billing.hold('big', 'a', C(5000));
      await limits.checkSpend('big', C(1_000_000));
    });
  });
});
