// Request-rate limits. Windows are FIXED and aligned to the injected clock (second, minute, UTC
// day): a counter is (id, window number), so it starts fresh when the window turns, tests move a
// ManualClock instead of sleeping, and Retry-After is exactly the time left in the window.
// (Fixed windows admit up to 2x a limit across a boundary; that is the usual trade for O(1)
// atomic counters.) A counter belongs to its (scope, window), not to the limit's number, so a
// changed limit applies to the requests already counted.
//
// Every scope's windows are counted at once; a refusal names the most specific scope refused
// (key, model, tenant). A refused request is given back to every counter it touched, so refused
// requests never count: a client hammering one key cannot use up its tenant's or model's budget.
//
// Counters are a port (WindowCounters in ./store.ts), built by the store: in memory they answer
// synchronously (no promise per counter on the hot path, see engine/store/memory/rate-counters.ts);
// on Redis a request's counters are one script on its tenant's hash of counters
// (engine/store/redis/rate.ts).
import { dependencyUnavailable, GatewayError } from '../errors/gateway-error.ts';
import type { Clock } from '../util/clock.ts';
import { RATE_WINDOWS, WINDOW_MS, type RateScope, type RateWindow, type RateWindows } from './config.ts';
import type { RateCountersFactory, WindowCounters } from './store.ts';
import { limitRefusals } from '../metrics/metrics.ts';

const WINDOW_TEXT: Record<RateWindow, string> = { per_second: 'second', per_minute: 'minute', per_day: 'day' };
const SCOPE_TEXT: Record<RateScope, string> = { key: 'this API key', tenant: 'this account', model: 'this model' };

interface WindowPlan {
  scope: RateScope;
  window: RateWindow;
  points: number;
  ms: number;
  counters: WindowCounters;
}

/** One counter touched by a check. */
interface Counted {
  plan: WindowPlan;
  id: string;
  n: number;
}

export class RateLimits {
  private readonly factory: RateCountersFactory;
  private readonly clock: Clock;
  private readonly counters = new Map<string, WindowCounters>();
  private readonly plans = new WeakMap<RateWindows, Map<RateScope, WindowPlan[]>>();

  constructor(factory: RateCountersFactory, clock: Clock) {
    this.factory = factory;
    this.clock = clock;
  }

  /**
   * Count one request against each scope's windows, or refuse it with 1004 and Retry-After
   * (nothing counted). `tenantId`: whose counters they are (on Redis: one script in its slot for
   * all, with the rest of the request's admission). Counters that answer at once (memory) are
   * judged at once: undefined, or a throw; else a promise.
   */
  check(scopes: { scope: RateScope; id: string; windows: RateWindows }[], tenantId?: string): void | Promise<void> {
    const now = this.clock.now();
    const counted: Counted[] = [];
    const counts: (number | Promise<number>)[] = [];
    let pending = false;
    for (const { scope, id, windows } of scopes) {
      for (const plan of this.plan(scope, windows)) {
        const n = Math.floor(now / plan.ms);
        const c = plan.counters.add(id, n, tenantId);
        if (typeof c !== 'number') pending = true;
        counted.push({ plan, id, n });
        counts.push(c);
      }
    }
    if (!pending) return this.judge(counted, counts as number[], undefined, now, tenantId);
    // Every counter at once (one round trip on Redis).
    return Promise.allSettled(counts).then((all) => {
      let failure: unknown;
      const values = all.map((r) => (r.status === 'fulfilled' ? r.value : ((failure ??= r.reason), undefined)));
      return this.judge(counted, values, failure, now, tenantId);
    });
  }

  /** The counts against the limits; a refusal (or a failed count) gives back what was counted. */
  private judge(counted: Counted[], counts: (number | undefined)[], failure: unknown, now: number, tenantId: string | undefined): void | Promise<void> {
    let refused: Counted | undefined;
    const taken: Counted[] = [];
    const wait = (c: Counted) => (c.n + 1) * c.plan.ms - now;
    for (let i = 0; i < counted.length; i++) {
      const c = counted[i]!;
      const count = counts[i];
      if (count === undefined) continue;
      taken.push(c);
      // The answer names the first scope refused (key, model, tenant), its longest wait.
      if (count > c.plan.points && (!refused || (c.plan.scope === refused.plan.scope && wait(c) > wait(refused)))) refused = c;
    }
    if (!refused && failure === undefined) return;
    const refusal = () => {
      if (failure !== undefined) return dependencyUnavailable('rate-limit store', failure);
      const plan = refused!.plan;
      limitRefusals.inc({ kind: `rate_${plan.scope}` });
      const retryAfter = Math.max(1, Math.ceil(wait(refused!) / 1000));
      return new GatewayError('rateLimitExceeded', `Rate limit exceeded: ${plan.points} requests per ${WINDOW_TEXT[plan.window]} for ${SCOPE_TEXT[plan.scope]}.`, {
        headers: { 'Retry-After': String(retryAfter) },
      });
    };
    const undo = taken.map((c) => c.plan.counters.remove(c.id, c.n, tenantId)).filter((r) => r instanceof Promise);
    if (!undo.length) throw refusal();
    return Promise.allSettled(undo).then(() => {
      throw refusal();
    });
  }

  /** The limited windows of a scope with their counters, worked out once per limits object. */
  private plan(scope: RateScope, windows: RateWindows): WindowPlan[] {
    let byScope = this.plans.get(windows);
    if (!byScope) this.plans.set(windows, (byScope = new Map()));
    let plan = byScope.get(scope);
    if (!plan) {
      plan = [];
      for (const window of RATE_WINDOWS) {
        const points = windows[window];
        if (points !== null) plan.push({ scope, window, points, ms: WINDOW_MS[window], counters: this.countersOf(scope, window) });
      }
      byScope.set(scope, plan);
    }
    return plan;
  }

  private countersOf(scope: RateScope, window: RateWindow): WindowCounters {
    const name = `rl_${scope}_${window}`;
    let c = this.counters.get(name);
    if (!c) this.counters.set(name, (c = this.factory(name, WINDOW_MS[window])));
    return c;
  }
}
