// Strict: a priced request its rate counts or its day's spend refuse takes no hold, also when it
// is judged in the same store step as others (on Redis: one STEPS run of the tenant's slot, where
// a hold used to be taken for every request and released after its refusal, so its funds could
// refuse a later request of the same run). Two admissions asked in one synchronous block go in
// one run on Redis (the tenant's group starts at the next check phase), whatever the load. Run by
// test/limits/admission-order.test.ts on every backend and by test/redis/cluster.test.ts on three
// masters (a Cluster client).
import { expect } from 'chai';
import { BillingService } from '../../engine/billing/service.ts';
import { GatewayError } from '../../engine/errors/gateway-error.ts';
import { LimitsService } from '../../engine/limits/service.ts';
import { MemoryLimitsStore } from '../../engine/store/memory/limits.ts';
import { memoryRateCounters } from '../../engine/store/memory/rate-counters.ts';
import { MemoryWalletStore } from '../../engine/store/memory/wallets.ts';
import type { RedisClient } from '../../engine/store/redis/keys.ts';
import { RedisLimitsStore } from '../../engine/store/redis/limits.ts';
import { redisRateCounters } from '../../engine/store/redis/rate.ts';
import { RedisWalletStore } from '../../engine/store/redis/wallets.ts';
import type { AuthContext } from '../../engine/tenants/auth-context.ts';
import { Admission } from '../../engine/tenants/admission.ts';
import { ManualClock } from '../../engine/util/clock.ts';
import { only } from '../helpers/limits.ts';

/** Where the stores live: memory, or a Redis client (a single server, or a Cluster) and a new key prefix per test. */
export interface StrictBackend {
  readonly isRedis: boolean;
  readonly a: RedisClient;
  prefix(): string;
}

export function strictAdmission(env: StrictBackend): void {
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
    /** A priced request of `keyId`, asked at once: its hold is up to `milli`; what it was answered (`ok` or the refusal's code). */
    const priced = (keyId: string, ref: string, milli: number) =>
      Promise.resolve(admission.limits(as(keyId), { model: 'm', hold: () => billing.holdUpTo(T, ref, milli, 'chat').then(() => undefined) })).then(
        () => 'ok',
        (e: unknown) => (e instanceof GatewayError ? e.code : e),
      );
    return { billing, admission, wallets, limitsStore, priced };
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
    expect((await wallets.get(T)).held).to.equal(10_000);
    // A wrote nothing: no hold line, no release line; B's hold is the only line after the top-up.
    expect((await wallets.list(T, 10)).entries.map((e) => `${e.kind} ${e.ref}`)).to.deep.equal(['hold ref-b', 'topup pay-1']);
  });

  it('a request refused by the day\'s spend holds nothing (no hold line, no release line)', async () => {
    const { billing, limitsStore, wallets, priced } = stores({ daily_spend_credits: '1.00' });
    await billing.topUp(T, 10_000, 'pay-1');
    await limitsStore.recordSpend(T, '2026-03-10', 1_000);
    expect(await priced('k1', 'ref-a', 5_000)).to.equal(1005);
    expect((await wallets.get(T)).held).to.equal(0);
    expect((await wallets.list(T, 10)).entries.map((e) => `${e.kind} ${e.ref}`)).to.deep.equal(['topup pay-1']);
  });
}
