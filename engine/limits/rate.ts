// Request-rate limits with rate-limiter-flexible. Windows are FIXED and aligned to the injected
// clock (second, minute, UTC day): the limiter key carries the window number, so a counter
// starts fresh when the window turns, tests move a ManualClock instead of sleeping, and
// Retry-After is exactly the time left in the window. (Fixed windows admit up to 2x a limit
// across a boundary; that is the usual trade for O(1) atomic counters.) The library keeps each
// counter a little longer than its window (TTL) and we never read an old window again.
//
// Every scope's windows are counted at once; a refusal names the most specific scope refused
// (key, model, tenant). A refused request is given back to every counter it touched, so refused
// requests never count: a client hammering one key cannot use up its tenant's or model's budget.
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import { GatewayError } from '../errors/gateway-error.ts';
import type { Clock } from '../util/clock.ts';
import { RATE_WINDOWS, WINDOW_MS, type RateScope, type RateWindow, type RateWindows } from './config.ts';

/** The two calls we need from a rate-limiter-flexible limiter (RateLimiterMemory, RateLimiterRedis, ...). */
export interface CounterLimiter {
  consume(key: string, points?: number): Promise<RateLimiterRes>;
  reward(key: string, points?: number): Promise<RateLimiterRes>;
}

/** Builds a limiter; duration in seconds. Default: RateLimiterMemory. For Redis: (o) => new RateLimiterRedis({storeClient, ...o}). */
export type RateLimiterFactory = (opts: { keyPrefix: string; points: number; duration: number }) => CounterLimiter;

export const memoryRateLimiterFactory: RateLimiterFactory = (opts) => new RateLimiterMemory(opts);

const WINDOW_TEXT: Record<RateWindow, string> = { per_second: 'second', per_minute: 'minute', per_day: 'day' };
const SCOPE_TEXT: Record<RateScope, string> = { key: 'this API key', tenant: 'this account', model: 'this model' };

interface WindowPlan {
  window: RateWindow;
  points: number;
  ms: number;
  limiter: CounterLimiter;
}

interface Counter {
  limiter: CounterLimiter;
  key: string;
  scope: RateScope;
  window: RateWindow;
  points: number;
  retryAfterMs: number;
}

export class RateLimits {
  private readonly factory: RateLimiterFactory;
  private readonly clock: Clock;
  private readonly limiters = new Map<string, CounterLimiter>();
  private readonly plans = new WeakMap<RateWindows, Map<RateScope, WindowPlan[]>>();

  constructor(factory: RateLimiterFactory, clock: Clock) {
    this.factory = factory;
    this.clock = clock;
  }

  /** Count one request against each scope's windows, or throw 1004 with Retry-After (nothing counted). */
  async check(scopes: { scope: RateScope; id: string; windows: RateWindows }[]): Promise<void> {
    const now = this.clock.now();
    const counters: Counter[] = [];
    for (const { scope, id, windows } of scopes) {
      for (const { window, points, ms, limiter } of this.plan(scope, windows)) {
        const n = Math.floor(now / ms);
        counters.push({ limiter, key: `${id}:${n}`, scope, window, points, retryAfterMs: (n + 1) * ms - now });
      }
    }
    if (counters.length === 0) return;
    // Every counter at once (one round trip on Redis); a refusal gives every counter back.
    const results = await Promise.allSettled(counters.map((c) => c.limiter.consume(c.key, 1)));
    let refused: Counter | undefined;
    let failure: unknown;
    const taken: Counter[] = [];
    results.forEach((r, i) => {
      const c = counters[i]!;
      if (r.status === 'fulfilled') return taken.push(c);
      if (r.reason instanceof RateLimiterRes) {
        taken.push(c); // it was counted too; give it back below
        // The answer names the first scope refused (key, model, tenant), its longest wait.
        if (!refused || (c.scope === refused.scope && c.retryAfterMs > refused.retryAfterMs)) refused = c;
      } else failure ??= r.reason;
    });
    if (!refused && failure === undefined) return;
    await Promise.allSettled(taken.map((c) => c.limiter.reward(c.key, 1)));
    if (failure !== undefined) throw new GatewayError(4003, 'The rate-limit store is unavailable.', { cause: failure });
    const retryAfter = Math.max(1, Math.ceil(refused!.retryAfterMs / 1000));
    throw new GatewayError(1004, `Rate limit exceeded: ${refused!.points} requests per ${WINDOW_TEXT[refused!.window]} for ${SCOPE_TEXT[refused!.scope]}.`, {
      headers: { 'Retry-After': String(retryAfter) },
    });
  }

  /** The limited windows of a scope with their limiters, worked out once per limits object. */
  private plan(scope: RateScope, windows: RateWindows): WindowPlan[] {
    let byScope = this.plans.get(windows);
    if (!byScope) this.plans.set(windows, (byScope = new Map()));
    let plan = byScope.get(scope);
    if (!plan) {
      plan = [];
      for (const window of RATE_WINDOWS) {
        const points = windows[window];
        if (points !== null) plan.push({ window, points, ms: WINDOW_MS[window], limiter: this.limiter(scope, window, points) });
      }
      byScope.set(scope, plan);
    }
    return plan;
  }

  private limiter(scope: RateScope, window: RateWindow, points: number): CounterLimiter {
    const name = `rl_${scope}_${window}_${points}`;
    let l = this.limiters.get(name);
    if (!l) {
      const sec = WINDOW_MS[window] / 1000;
      // Keep a counter somewhat past its window (the key changes when the window turns).
      l = this.factory({ keyPrefix: name, points, duration: sec + Math.min(sec, 60) });
      this.limiters.set(name, l);
    }
    return l;
  }
}
