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
import { RATE_SCOPES, RATE_WINDOWS, WINDOW_MS, type RateScope, type RateWindow, type RateWindows } from './config.ts';
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

/** The limited windows of one set of rate limits, per scope. */
type ScopePlans = Record<RateScope, WindowPlan[]>;

export class RateLimits {
  private readonly counters: RateCounters;
  private readonly plans = new WeakMap<Record<RateScope, RateWindows>, ScopePlans>();

  constructor(counters: RateCounters) {
    this.counters = counters;
  }

  /**
   * Count one request against the key's, the model's (`modelId` undefined: none) and the
   * tenant's windows of `rate`, or refuse it with 1004 and Retry-After (nothing counted). The
   * tenant's id also names whose counters they are (on Redis: one script in its slot for all,
   * with the rest of the request's admission). Counters that answer at once (memory) are judged
   * at once: undefined, or a throw; else a promise.
   */
  check(rate: Record<RateScope, RateWindows>, keyId: string, modelId: string | undefined, tenantId: string, now: number): void | Promise<void> {
    const plans = this.plansOf(rate);
    const counted: Counted[] = [];
    count(counted, plans.key, keyId, now);
    if (modelId !== undefined) count(counted, plans.model, modelId, now);
    count(counted, plans.tenant, tenantId, now);
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

  /** The limited windows of each scope, worked out once per limits object. */
  private plansOf(rate: Record<RateScope, RateWindows>): ScopePlans {
    let plans = this.plans.get(rate);
    if (!plans) {
      plans = {} as ScopePlans;
      for (const scope of RATE_SCOPES) {
        const windows = rate[scope];
        const plan: WindowPlan[] = (plans[scope] = []);
        for (const window of RATE_WINDOWS) {
          const points = windows[window];
          if (points !== null) plan.push({ scope, window, points, ms: WINDOW_MS[window], name: `rl_${scope}_${window}` });
        }
      }
      this.plans.set(rate, plans);
    }
    return plans;
  }
}

/** `id`'s counter in the current window of each plan. */
function count(counted: Counted[], plans: WindowPlan[], id: string, now: number): void {
  for (const plan of plans) counted.push({ name: plan.name, windowMs: plan.ms, id, n: Math.floor(now / plan.ms), limit: plan.points, plan });
}
