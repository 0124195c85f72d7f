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
import { forEachBackend } from '../store/support.ts';
import { strictAdmission } from './strict-admission.ts';

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

// Strict within one store step: ./strict-admission.ts, on every backend (and on three masters in
// test/redis/cluster.test.ts).
forEachBackend('admission: rates and spend before funds, strictly (one store step)', (env) => strictAdmission(env));
