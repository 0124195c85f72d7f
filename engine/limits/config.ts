// The `limits:` section of config.yaml. The spec enforces limits with 429 + codes 1004 (rate)
// and 1005 (concurrent tasks, daily spend) but publishes no numbers; these defaults are ours.
// A window set to null means "no limit" for that window; absent means "the default".
//
//   limits:
//     rate:
//       key:    { per_second: 20, per_minute: 600,  per_day: 100000 }   # per API key
//       tenant: { per_second: 50, per_minute: 1500, per_day: 500000 }   # per tenant (all its keys)
//       model:  { per_second: 10, per_minute: 300,  per_day: null }     # per tenant AND model
//     models:                          # per-model override of the model scope, e.g.
//       model_a: { per_second: 2 }
//     concurrent_tasks: 20             # active (pending/processing) async tasks per tenant
//     concurrent_retry_after_seconds: 5
//     daily_spend_credits: "100000.00" # credits held+settled per tenant per UTC day (1000 USD)
//     tenants:                         # per-tenant overrides of any of the above
//       <tenant-id>: { rate: { tenant: { per_minute: 6000 } }, concurrent_tasks: 100, daily_spend_credits: null }
import { creditsToMilli, MoneyError, type Milli } from '../util/money.ts';
import { ConfigValueError, configPointer, type ConfigProblem } from '../errors/config-error.ts';

export type RateScope = 'key' | 'tenant' | 'model';
export type RateWindow = 'per_second' | 'per_minute' | 'per_day';
export const RATE_SCOPES: readonly RateScope[] = ['key', 'model', 'tenant']; // checked in this order
export const RATE_WINDOWS: readonly RateWindow[] = ['per_second', 'per_minute', 'per_day'];
export const WINDOW_MS: Readonly<Record<RateWindow, number>> = { per_second: 1_000, per_minute: 60_000, per_day: 86_400_000 };

export type RateWindowsInput = Partial<Record<RateWindow, number | null>>;
export type RateWindows = Record<RateWindow, number | null>;

export interface TenantLimitsInput {
  rate?: Partial<Record<RateScope, RateWindowsInput>>;
  concurrent_tasks?: number | null;
  daily_spend_credits?: string | number | null;
}

export interface LimitsConfigInput extends TenantLimitsInput {
  models?: Record<string, RateWindowsInput>;
  concurrent_retry_after_seconds?: number;
  tenants?: Record<string, TenantLimitsInput>;
}

export const LIMITS_DEFAULTS = Object.freeze({
  rate: {
    key: { per_second: 20, per_minute: 600, per_day: 100_000 },
    tenant: { per_second: 50, per_minute: 1_500, per_day: 500_000 },
    model: { per_second: 10, per_minute: 300, per_day: null },
  } satisfies Record<RateScope, RateWindows>,
  concurrent_tasks: 20,
  concurrent_retry_after_seconds: 5,
  daily_spend_credits: '100000.00',
});

/** Limits that apply to one tenant (and, for the model scope, one model). */
export interface EffectiveLimits {
  rate: Record<RateScope, RateWindows>;
  concurrentTasks: number | null;
  dailySpend: Milli | null;
}

export class LimitsConfig {
  readonly concurrentRetryAfterSeconds: number;
  private readonly input: LimitsConfigInput;
  private readonly cache = new Map<string, EffectiveLimits>();

  constructor(input: LimitsConfigInput = {}) {
    this.input = input;
    this.concurrentRetryAfterSeconds = input.concurrent_retry_after_seconds ?? LIMITS_DEFAULTS.concurrent_retry_after_seconds;
    // Validate everything now, so a bad config stops start-up rather than a request: each value
    // where it is written (the config loader runs this too, for its file:line:col report).
    const problems = limitsProblems(input);
    if (problems.length) throw new ConfigValueError(problems);
    this.forTenant('', undefined);
    for (const m of Object.keys(input.models ?? {})) this.forTenant('', m);
    for (const t of Object.keys(input.tenants ?? {})) this.forTenant(t, undefined);
  }

  /**
   * The limits of one tenant (and model): defaults < config < config's limits.tenants.<id> <
   * `override` (the tenant's own limits, set by the operator at run time through the admin API).
   */
  forTenant(tenantId: string, model: string | undefined, override?: TenantLimitsInput): EffectiveLimits {
    const configured = own(this.input.tenants, tenantId);
    const t = override ? mergeTenant(configured, override) : configured;
    const m = model === undefined ? undefined : own(this.input.models, model);
    // Cache per configured tenant/model only, so arbitrary ids from requests cannot grow it.
    const cacheKey = `${configured ? tenantId : ''}\u0000${m ? model : ''}`;
    const hit = override ? undefined : this.cache.get(cacheKey);
    if (hit) return hit;
    const where = t ? `limits.tenants.${tenantId}` : 'limits';
    const rate = {} as Record<RateScope, RateWindows>;
    for (const scope of RATE_SCOPES) {
      const layers: (RateWindowsInput | undefined)[] = [LIMITS_DEFAULTS.rate[scope], this.input.rate?.[scope]];
      if (scope === 'model') layers.push(m);
      layers.push(t?.rate?.[scope]);
      const merged = {} as RateWindows;
      for (const w of RATE_WINDOWS) {
        let v: number | null = null;
        for (const layer of layers) if (layer && layer[w] !== undefined) v = layer[w] as number | null;
        if (v !== null) validateCount(v, `${where}.rate.${scope}.${w}`, true);
        merged[w] = v;
      }
      rate[scope] = merged;
    }
    const concurrent = pick(t?.concurrent_tasks, this.input.concurrent_tasks, LIMITS_DEFAULTS.concurrent_tasks);
    if (concurrent !== null) validateCount(concurrent, `${where}.concurrent_tasks`, false);
    const spend = pick(t?.daily_spend_credits, this.input.daily_spend_credits, LIMITS_DEFAULTS.daily_spend_credits);
    const eff: EffectiveLimits = Object.freeze({
      rate,
      concurrentTasks: concurrent,
      dailySpend: spend === null ? null : creditsToMilli(spend, `${where}.daily_spend_credits`),
    });
    if (eff.dailySpend !== null && eff.dailySpend < 0) throw new Error(`${where}.daily_spend_credits must not be negative`);
    if (!override) this.cache.set(cacheKey, eff);
    return eff;
  }
}

function mergeTenant(base: TenantLimitsInput | undefined, over: TenantLimitsInput): TenantLimitsInput {
  const rate: Partial<Record<RateScope, RateWindowsInput>> = { ...base?.rate };
  for (const scope of RATE_SCOPES) if (over.rate?.[scope]) rate[scope] = { ...base?.rate?.[scope], ...over.rate[scope] };
  return { ...base, ...over, rate };
}

function own<T>(map: Record<string, T> | undefined, key: string): T | undefined {
  return map && Object.prototype.hasOwnProperty.call(map, key) ? map[key] : undefined;
}

function pick<T>(...values: (T | null | undefined)[]): T | null {
  for (const v of values) if (v !== undefined) return v;
  return null;
}

/** Why `v` cannot be a count (a limit, or seconds), or null when it can. */
function countProblem(v: number, positive: boolean): string | null {
  return Number.isSafeInteger(v) && v >= (positive ? 1 : 0) ? null : `must be ${positive ? 'a positive' : 'a non-negative'} integer or null, got ${v}`;
}

function validateCount(v: number, where: string, positive: boolean): void {
  const problem = countProblem(v, positive);
  if (problem) throw new Error(`${where} ${problem}`);
}

/** Every value of a limits config the engine cannot use, at its JSON pointer under /limits. */
function limitsProblems(input: LimitsConfigInput): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  const count = (v: number | null | undefined, positive: boolean, path: string[]) => {
    const problem = v === null || v === undefined ? null : countProblem(v, positive);
    if (problem) problems.push({ pointer: configPointer('limits', ...path), message: problem });
  };
  const windows = (w: RateWindowsInput | undefined, path: string[]) => {
    for (const k of RATE_WINDOWS) count(w?.[k], true, [...path, k]);
  };
  const tenantLike = (t: TenantLimitsInput | undefined, path: string[]) => {
    for (const scope of RATE_SCOPES) windows(t?.rate?.[scope], [...path, 'rate', scope]);
    count(t?.concurrent_tasks, false, [...path, 'concurrent_tasks']);
    const spend = t?.daily_spend_credits;
    if (spend === null || spend === undefined) return;
    const pointer = configPointer('limits', ...path, 'daily_spend_credits');
    try {
      if (creditsToMilli(spend, 'the amount') < 0) problems.push({ pointer, message: 'must not be negative' });
    } catch (err) {
      if (!(err instanceof MoneyError)) throw err;
      problems.push({ pointer, message: err.message });
    }
  };
  tenantLike(input, []);
  count(input.concurrent_retry_after_seconds, false, ['concurrent_retry_after_seconds']);
  for (const [model, w] of Object.entries(input.models ?? {})) windows(w, ['models', model]);
  for (const [tenant, t] of Object.entries(input.tenants ?? {})) tenantLike(t, ['tenants', tenant]);
  return problems;
}
