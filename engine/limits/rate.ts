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
// Counters are a port (RateCounters in ./store.ts), built by the store: a request's counters are
// ONE call to it, all of them or none. In memory it answers synchronously (no promise on the hot
// path, see engine/store/memory/rate-counters.ts); on Redis it is one promise, answered by the
// tenant's admission script with the rest of the request's admission (engine/store/redis/rate.ts):
// a promise per counter and a Promise.allSettled over them were, with their group entries, some
// of the Redis-mode chat's extra CPU (docs/performance.md).
import { dependencyUnavailable, GatewayError } from '../errors/gateway-error.ts';
import type { Clock } from '../util/clock.ts';
import { RATE_WINDOWS, WINDOW_MS, type RateScope, type RateWindow, type RateWindows } from './config.ts';
import type { RateCount, RateCounters } from './store.ts';
import { limitRefusals } from '../metrics/metrics.ts';

const WINDOW_TEXT: Record<RateWindow, string> = { per_second: 'second', per_minute: 'minute', per_day: 'day' };
const SCOPE_TEXT: Record<RateScope, string> = { key: 'this API key', tenant: 'this account', model: 'this model' };

interface WindowPlan {
  scope: RateScope;
  window: RateWindow;
  points: number;
  ms: number;
  /** The counters' name: unique per (scope, window). */
  name: string;
}

/** One counter touched by a check (the port's RateCount, with its plan). */
interface Counted extends RateCount {
  plan: WindowPlan;
}

export class RateLimits {
  private readonly counters: RateCounters;
  private readonly clock: Clock;
  private readonly plans = new WeakMap<RateWindows, Map<RateScope, WindowPlan[]>>();

  constructor(counters: RateCounters, clock: Clock) {
    this.counters = counters;
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
    for (const { scope, id, windows } of scopes) {
      for (const plan of this.plan(scope, windows)) {
        counted.push({ name: plan.name, windowMs: plan.ms, id, n: Math.floor(now / plan.ms), plan });
      }
    }
    if (!counted.length) return;
    const counts = this.counters.add(counted, tenantId);
    if (Array.isArray(counts)) return this.judge(counted, counts, now, tenantId);
    // A failed count counted nothing (all or none): the request is refused with 4003.
    return counts.then(
      (values) => this.judge(counted, values, now, tenantId),
      (failure: unknown) => {
        throw dependencyUnavailable('rate-limit store', failure);
      },
    );
  }

  /** The counts against the limits; a refusal gives back what was counted. */
  private judge(counted: Counted[], counts: number[], now: number, tenantId: string | undefined): void | Promise<void> {
    let refused: Counted | undefined;
    const wait = (c: Counted) => (c.n + 1) * c.plan.ms - now;
    for (let i = 0; i < counted.length; i++) {
      const c = counted[i]!;
      // The answer names the first scope refused (key, model, tenant), its longest wait.
      if (counts[i]! > c.plan.points && (!refused || (c.plan.scope === refused.plan.scope && wait(c) > wait(refused)))) refused = c;
    }
    if (!refused) return;
    const plan = refused.plan;
    limitRefusals.inc({ kind: `rate_${plan.scope}` });
    const retryAfter = Math.max(1, Math.ceil(wait(refused) / 1000));
    const refusal = new GatewayError('rateLimitExceeded', `Rate limit exceeded: ${plan.points} requests per ${WINDOW_TEXT[plan.window]} for ${SCOPE_TEXT[plan.scope]}.`, {
      headers: { 'Retry-After': String(retryAfter) },
    });
    const undo = this.counters.remove(counted, tenantId);
    if (!(undo instanceof Promise)) throw refusal;
    // Given back or not (a store away), the request is refused as it was judged.
    const thrower = () => {
      throw refusal;
    };
    return undo.then(thrower, thrower);
  }

  /** The limited windows of a scope, worked out once per limits object. */
  private plan(scope: RateScope, windows: RateWindows): WindowPlan[] {
    let byScope = this.plans.get(windows);
    if (!byScope) this.plans.set(windows, (byScope = new Map()));
    let plan = byScope.get(scope);
    if (!plan) {
      plan = [];
      for (const window of RATE_WINDOWS) {
        const points = windows[window];
        if (points !== null) plan.push({ scope, window, points, ms: WINDOW_MS[window], name: `rl_${scope}_${window}` });
      }
      byScope.set(scope, plan);
    }
    return plan;
  }
}
