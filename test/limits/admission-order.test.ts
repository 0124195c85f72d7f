// Rates before funds: a priced request's rate counts, its day's spend and its hold are asked in
// the same turn (on Redis: one STEPS run of the tenant's slot, its rate counts before its holds),
// also while the tenant's limits are not cached. A cold cache used to send the hold at once and
// the rate counts a read later, in another run: the holds of requests the rate then refused took
// the funds of those it admitted (test/redis/cluster.test.ts: 0 of 24 served). Checked by the turn
// each step is asked in, not by timing.
import { expect } from 'chai';
import { GatewayError } from '../../engine/errors/gateway-error.ts';
import { LimitsService } from '../../engine/limits/service.ts';
import type { RateCounters } from '../../engine/limits/store.ts';
import { MemoryLimitsStore } from '../../engine/store/memory/limits.ts';
import type { AuthContext } from '../../engine/tenants/auth-context.ts';
import { Admission } from '../../engine/tenants/admission.ts';
import type { TenantLimitsInput } from '../../engine/limits/config.ts';
import { BillingService } from '../../engine/billing/service.ts';
import { memoryRateCounters } from '../../engine/store/memory/rate-counters.ts';
import { MemoryWalletStore } from '../../engine/store/memory/wallets.ts';
import { RedisLimitsStore } from '../../engine/store/redis/limits.ts';
import { redisRateCounters } from '../../engine/store/redis/rate.ts';
import { RedisWalletStore } from '../../engine/store/redis/wallets.ts';
import { ManualClock } from '../../engine/util/clock.ts';
import { only } from '../helpers/limits.ts';
import { forEachBackend } from '../store/support.ts';

const auth: AuthContext = { tenantId: 't-1', keyId: 'k-1', scopes: ['*'], mode: 'live' };

describe('admission: rates before funds', () => {
  let turn = 0;
  let ticking = false;
  const tick = () => {
    turn++;
    if (ticking) setImmediate(tick);
  };
  beforeEach(() => {
    turn = 0;
    ticking = true;
    setImmediate(tick);
  });
  afterEach(() => {
    ticking = false;
  });

  /** An admission over a LimitsService whose overrides are read (cold) in a later turn, with each step's turn noted in `seen`. */
  function admission(overrides: () => Promise<TenantLimitsInput | undefined>) {
    const seen: string[] = [];
    const store = new MemoryLimitsStore();
    const spent = store.spent.bind(store);
    store.spent = (tenantId, day) => {
      seen.push(`spend ${turn}`);
      return spent(tenantId, day);
    };
    // Redis-like counters: the count answers later (the tenant's script run).
    const rateCounters: RateCounters = {
      add: (counts) => {
        seen.push(`rate ${turn}`);
        return new Promise((r) => setImmediate(() => r(counts.map(() => 1))));
      },
      remove: () => Promise.resolve(),
    };
    const limits = new LimitsService({ store, rateCounters, config: { daily_spend_credits: '100.00' }, tenantOverrides: overrides });
    const a = new Admission({ tenants: { authenticate: async () => auth }, limits });
    const hold = async () => {
      seen.push(`hold ${turn}`);
    };
    return { seen, run: () => a.limits(auth, { model: 'm', hold }) };
  }

  const later = <T>(v: T) => new Promise<T>((r) => setImmediate(() => setImmediate(() => r(v))));

  it('asks the rate counts, the spend and the hold in one turn while the limits are not cached', async () => {
    const { seen, run } = admission(() => later({ rate: { key: { per_minute: 5 } } }));
    await run();
    expect(seen).to.have.length(3);
    const turns = new Set(seen.map((s) => s.split(' ')[1]));
    expect(turns.size, seen.join(', ')).to.equal(1);
    expect(seen[0]).to.match(/^rate /);
    // Cached now: the same, at once.
    seen.length = 0;
    await run();
    expect(new Set(seen.map((s) => s.split(' ')[1])).size, seen.join(', ')).to.equal(1);
  });

  it('takes no hold when the limits cannot be read (the outage answer, nothing held)', async () => {
    const { seen, run } = admission(() => Promise.reject(new Error('directory away')));
    const err = await Promise.resolve().then(run).then(() => undefined, (e: unknown) => e);
    expect(err).to.be.instanceOf(Error);
    expect(err).not.to.be.instanceOf(GatewayError);
    expect(seen).to.deep.equal([]);
  });
});

// Strict: a priced request its rate counts or its day's spend refuse takes no hold, also when
// it is judged in the same store step as others (on Redis: one STEPS run of the tenant's slot,
// where a hold used to be taken for every request and released after its refusal, so its funds
// could refuse a later request of the same run). Two admissions asked in one synchronous block go
// in one run on Redis (the tenant's group starts at the next check phase), whatever the load.
forEachBackend('admission: rates and spend before funds, strictly (one store step)', (env) => {
  const T = 'tenant-s';
  const START = Date.parse('2026-03-10T12:00:00.500Z');
  const as = (keyId: string): AuthContext => ({ tenantId: T, keyId, scopes: ['*'], mode: 'live' });

  function stores(config: Parameters<typeof only>[1] & { rate?: Parameters<typeof only>[0] }) {
    const prefix = env.prefix();
    const clock = new ManualClock(START);
    const [limitsStore, wallets, rateCounters] = env.isRedis
      ? [new RedisLimitsStore({ client: env.a, prefix }), new RedisWalletStore({ client: env.a, prefix }), redisRateCounters(env.a, prefix)]
      : [new MemoryLimitsStore(), new MemoryWalletStore(), memoryRateCounters()];
    const limits = new LimitsService({ store: limitsStore, rateCounters, clock, config: only(config.rate, { daily_spend_credits: config.daily_spend_credits }) });
    const billing = new BillingService({ store: wallets, clock });
    const admission = new Admission({ tenants: { authenticate: async () => as('k') }, limits });
    /** A priced request of `keyId`: its hold is up to `milli`; what it was answered (`ok` or the refusal's code). */
    const priced = (keyId: string, ref: string, milli: number) =>
      Promise.resolve(admission.limits(as(keyId), { model: 'm', hold: () => billing.holdUpTo(T, ref, milli, 'chat').then(() => undefined) })).then(
          () => 'ok',
          (e: unknown) => (e instanceof GatewayError ? e.code : e),
        );
    return { limits, billing, admission, wallets, limitsStore, priced };
  }

  it('a request refused by its key\'s per-second rate holds nothing, so the one admitted beside it is served', async () => {
    const { billing, admission, wallets, priced } = stores({ rate: { key: { per_second: 1 } } });
    await billing.topUp(T, 10_000, 'pay-1');
    // Key k1 has had its request of this second (unpriced: counted, nothing held).
    await admission.limits(as('k1'), { model: 'm' });
    // A (k1: over its per-second rate) and B (k2: admitted), judged in one step; the funds allow
    // one hold of 10.00 credits.
    const [a, b] = await Promise.all([priced('k1', 'ref-a', 10_000), priced('k2', 'ref-b', 10_000)]);
    expect(a).to.equal(1004);
    expect(b).to.equal('ok');
    const w = await wallets.get(T);
    expect(w.held).to.equal(10_000);
    // A wrote nothing: no hold line, no release line; B's hold is the only line after the top-up.
    const lines = (await wallets.list(T, 10)).entries.map((e) => `${e.kind} ${e.ref}`);
    expect(lines).to.deep.equal(['hold ref-b', 'topup pay-1']);
  });

  it('a request refused by the day\'s spend holds nothing (no hold line, no release line)', async () => {
    const { billing, limitsStore, wallets, priced } = stores({ daily_spend_credits: '1.00' });
    await billing.topUp(T, 10_000, 'pay-1');
    await limitsStore.recordSpend(T, '2026-03-10', 1_000);
    expect(await priced('k1', 'ref-a', 5_000)).to.equal(1005);
    expect((await wallets.get(T)).held).to.equal(0);
    expect((await wallets.list(T, 10)).entries.map((e) => `${e.kind} ${e.ref}`)).to.deep.equal(['topup pay-1']);
  });
});
