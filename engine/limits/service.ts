// LimitsService: request rates (1004), concurrent async tasks (1005) and daily spend (1005),
// all answered as GatewayError 429 with Retry-After. Requests under every limit are never refused.
//
// Wiring (lead): per request   checkRequest({tenantId, keyId, model})
//                async create  acquireTask(tenantId, taskId, spend) (the slot and the hold's spend in one
//                              store step) ... closeTask(tenantId, taskId, settled) on the terminal state
//                daily spend   pass the service as BillingService's `spend` (SpendGuard): holds reserve
//                              spend (1005 when over), settle/release lower it to what was settled;
//                              a priced chat: checkPriced (its rate counts, day's spend and hold as
//                              one store step: a request the first two refuse takes no hold).
// Spend counts on the UTC day the hold was taken (a task held at 23:59 and settled at 00:01 counts
// on the first day).
import { GatewayError } from '../errors/gateway-error.ts';
import { isoAt, systemClock, type Clock } from '../util/clock.ts';
import { assertMilli, formatCredits, type Milli } from '../util/money.ts';
import { LimitsConfig, type EffectiveLimits, type LimitsConfigInput, type TenantLimitsInput } from './config.ts';
import { RateLimits } from './rate.ts';
import type { LimitsStore, RateCounters } from './store.ts';
import { limitRefusals } from '../metrics/metrics.ts';

export interface LimitsServiceOptions {
  store: LimitsStore;
  config?: LimitsConfigInput | LimitsConfig;
  clock?: Clock;
  /** The store's request-rate counters (memoryRateCounters, redisRateCounters). */
  rateCounters: RateCounters;
  /**
   * A tenant's own limits set at run time (admin API), or undefined for none. Rejects when the
   * store cannot be read: the request then gets the outage answer, never the defaults.
   */
  tenantOverrides?: (tenantId: string) => Promise<TenantLimitsInput | undefined>;
  /** A tenant's overrides are read again after this long at most (default 5 s). */
  overridesTtlMs?: number;
  /**
   * The one change signal of the directory the overrides live in: cached overrides answer only
   * while it is live and has not moved since they were read (no polling: an idle process sends
   * nothing for its limits). Redis: every limits change is PUBLISHed by the script that writes it
   * (engine/store/redis/directory-feed.ts). A store read by one process alone (memory) has no
   * feed: every change is made through this process, whose invalidate() is then the whole signal.
   */
  changes?: ChangeFeed;
}

export interface RequestIdentity {
  tenantId: string;
  keyId: string;
  /** The model (or route) the request targets; omitted = no model-scope limit. */
  model?: string;
}

/** The directory's change signal (the tenant store's ChangeFeed satisfies it). */
export interface ChangeFeed {
  readonly live: boolean;
  readonly generation: number;
}

const DAY_MS = 86_400_000;
/** The feed of a store read by this process alone: always live; only invalidate() moves what it caches. */
const LOCAL: ChangeFeed = { live: true, generation: 0 };

/** A value the memory store answers at once and Redis through a round trip. */
type Maybe<T> = T | Promise<T>;

/**
 * `step.call(self, a, b, value)` once `value` is known: at once when it already is (the memory
 * store with the limits cached: no closure and no promise per request, where a `then` cost each
 * chat an allocation and a microtask turn), else when it resolves. A throw comes back as a
 * rejected promise either way, so a caller may start its other checks beside this one.
 */
function whenKnown<S, T, A, B, R>(self: S, value: Maybe<T>, step: (this: S, a: A, b: B, value: T) => Maybe<R>, a: A, b: B): Maybe<R> {
  if (value instanceof Promise) return value.then((v: T) => step.call(self, a, b, v));
  try {
    return step.call(self, a, b, value);
  } catch (err) {
    return Promise.reject(err);
  }
}

interface CachedOverrides {
  at: number;
  /** The change feed's generation before the read. */
  feed: number;
  value: TenantLimitsInput | undefined;
  merged: Map<string, ModelLimits>;
}

/** A tenant's limits for one model (or none), merged once while its overrides are cached. */
export interface ModelLimits {
  eff: EffectiveLimits;
  /**
   * The model scope's counter id (`<tenant>:<model>`), one string per tenant and model: built per
   * request it was a new string, which the counters' lookups had to flatten and hash each time
   * (that lookup and the model's own one here, each of a new string, were 1.1% of a sync chat's
   * profile; the model's stays, the proxy's string of it being new per request).
   */
  modelId: string | undefined;
}

const effOf = (_a: undefined, _b: undefined, limits: ModelLimits): EffectiveLimits => limits.eff;

/**
 * Daily-spend accounting hooked into holds and settlements: BillingService's `spend`, which
 * LimitsService implements. reserveSpend may refuse with GatewayError 1005; cancelSpend undoes a
 * reservation whose hold was refused; finalizeSpend and recordSpend never refuse. The first
 * three are idempotent per ref; recordSpend adds every time (it follows a wallet charge, which is).
 */
export interface SpendGuard {
  reserveSpend(tenantId: string, ref: string, milli: Milli): Promise<void>;
  cancelSpend(tenantId: string, ref: string): Promise<void>;
  finalizeSpend(tenantId: string, ref: string, actualMilli: Milli): Promise<void>;
  /** Undefined when recorded at once (the memory store), else its write. */
  recordSpend(tenantId: string, milli: Milli): void | Promise<void>;
}

export class LimitsService implements SpendGuard {
  readonly config: LimitsConfig;
  private readonly store: LimitsStore;
  private readonly clock: Clock;
  private readonly rates: RateLimits;
  private readonly tenantOverrides: LimitsServiceOptions['tenantOverrides'];
  private readonly overridesTtlMs: number;
  private readonly overrides = new Map<string, CachedOverrides>();
  /** A count of this process's cache clears (see effective()). */
  private generation = 0;
  private readonly changes: ChangeFeed;
  /** The UTC day number today() last formatted, and its text. */
  private day = Number.NaN;
  private dayText = '';

  constructor(opts: LimitsServiceOptions) {
    this.store = opts.store;
    this.clock = opts.clock ?? systemClock;
    this.config = opts.config instanceof LimitsConfig ? opts.config : new LimitsConfig(opts.config);
    this.rates = new RateLimits(opts.rateCounters);
    this.tenantOverrides = opts.tenantOverrides;
    this.overridesTtlMs = opts.overridesTtlMs ?? 5_000;
    this.changes = opts.changes ?? LOCAL;
  }

  /**
   * The limits in force for a tenant (and model), its run-time overrides included: at once while
   * they are cached (every request asks, and a promise here cost each chat a few microtask turns),
   * else after the tenant's record is read. A failure is a rejected promise, never a throw.
   */
  effective(tenantId: string, model: string | undefined, now = this.clock.now()): Maybe<EffectiveLimits> {
    return whenKnown(this, this.limitsOf(tenantId, model, now), effOf, undefined, undefined);
  }

  /** effective(), with the model scope's counter id (what checkRequest and checkSpend take as `known`). */
  limitsOf(tenantId: string, model: string | undefined, now = this.clock.now()): Maybe<ModelLimits> {
    if (!this.tenantOverrides) return { eff: this.config.forTenant(tenantId, model), modelId: model === undefined ? undefined : `${tenantId}:${model}` };
    const cached = this.overrides.get(tenantId);
    const fresh = cached && now - cached.at < this.overridesTtlMs && this.changes.live && this.changes.generation === cached.feed;
    return whenKnown(this, fresh ? cached : this.readOverrides(tenantId, now), this.merged, tenantId, model);
  }

  private async readOverrides(tenantId: string, now: number): Promise<CachedOverrides> {
    // A read that started before the cache was cleared (or the feed moved) may hold overrides
    // older than the change that cleared it: it serves its own request but is not cached.
    const generation = this.generation;
    const { generation: feed, live } = this.changes;
    const read: CachedOverrides = { at: now, feed, value: await this.tenantOverrides!(tenantId), merged: new Map() };
    if (generation === this.generation && live) {
      if (this.overrides.size > 10_000) this.overrides.clear();
      this.overrides.set(tenantId, read);
    }
    return read;
  }

  /** Merged once per tenant and model while the overrides are cached (stable objects, too). */
  private merged(tenantId: string, model: string | undefined, cached: CachedOverrides): ModelLimits {
    const key = model ?? '';
    let limits = cached.merged.get(key);
    if (!limits) {
      limits = { eff: this.config.forTenant(tenantId, model, cached.value), modelId: model === undefined ? undefined : `${tenantId}:${model}` };
      if (cached.merged.size < 1_000) cached.merged.set(key, limits);
    }
    return limits;
  }

  /**
   * A tenant's overrides were just changed (in this process): forget them here at once. Every
   * other process learns it from the change feed, on which the write itself announced the change.
   */
  invalidate(tenantId: string): void {
    this.overrides.delete(tenantId);
    this.generation++;
  }

  /**
   * Count one request; refused with 1004 (429, Retry-After) when a key, model or tenant rate is
   * exceeded. Undefined when counted at once (the memory store); a refusal is always a rejected
   * promise, never a throw, so a caller may start its other checks beside this one. `known`:
   * the limits limitsOf() answered for the tenant and model (Admission waits for them before a
   * priced request's steps, so they go in one turn), else looked up here.
   */
  checkRequest(who: RequestIdentity, known?: ModelLimits): void | Promise<void> {
    const now = this.clock.now();
    return whenKnown(this, known ?? this.limitsOf(who.tenantId, who.model, now), this.countRequest, who, now);
  }

  private countRequest(who: RequestIdentity, now: number, limits: ModelLimits): void | Promise<void> {
    return this.rates.check(limits.eff.rate, who.keyId, limits.modelId, who.tenantId, now);
  }

  /**
   * A priced request's admission (Admission; the chat path): its rate counts, its day's spend
   * and its hold (`takeHold`, the funds check), asked in one turn, in that order, and as one step
   * of a store that has LimitsStore.gate. Rates and spend before funds, strictly: a request that
   * its rate counts or its day's spend refuse takes no hold, so its funds never refuse another
   * request, not even one judged in the same step. Memory: the counts and the spend answer at
   * once (a refusal throws here), and the hold is asked only once both passed. Redis: the three
   * go in one STEPS run, whose ADMIT part judges the counts and the spend against the limits
   * sent with them and withholds the hold of a refused request (docs/decisions.md, 2026-11-27).
   * The first refusal in that order answers. `known`: the tenant's limits (limitsOf()).
   */
  checkPriced(who: RequestIdentity, known: ModelLimits, takeHold: () => Promise<void>): void | Promise<void> {
    const now = this.clock.now();
    const limit = known.eff.dailySpend;
    let request = undefined as void | Promise<void>;
    let spend = undefined as Milli | Promise<Milli> | undefined;
    let hold = undefined as Promise<void> | undefined;
    const steps = () => {
      request = this.rates.check(known.eff.rate, who.keyId, known.modelId, who.tenantId, now);
      if (limit !== null) {
        spend = this.store.spent(who.tenantId, this.today(), limit - 1);
        if (!(spend instanceof Promise)) this.underLimit(1, limit, spend);
      }
      hold = takeHold();
    };
    try {
      if (this.store.gate) this.store.gate(who.tenantId, steps);
      else steps();
    } catch (err) {
      return Promise.reject(err);
    }
    const spent = spend instanceof Promise ? spend.then((s) => this.underLimit(1, limit!, s)) : undefined;
    if (!request && !spent) return hold;
    return Promise.allSettled([request, spent, hold]).then((all) => {
      for (const r of all) if (r.status === 'rejected') throw r.reason;
    });
  }

  /**
   * Take a concurrent-task slot and reserve the task's hold (`spend`) against today's spend under
   * the task id, as reserveSpend would, in one store step (the hold that follows is then made with
   * `spendReserved`). 1005 when the tenant has its limit of active tasks, or when the spend is
   * over the day's limit (the slot is then freed again). Idempotent per task.
   */
  async acquireTask(tenantId: string, taskId: string, spend: Milli): Promise<void> {
    assertMilli(spend, 'spend', { nonNegative: true });
    const eff = await this.effective(tenantId, undefined);
    const limit = eff.concurrentTasks;
    const r = await this.store.admitTask(tenantId, taskId, limit, this.clock.now(), { day: this.today(), milli: spend, limit: eff.dailySpend });
    if (r.slot === 'full') throw this.slotsError(limit!);
    if (r.spend!.status === 'refused') {
      await this.store.releaseTask(tenantId, taskId);
      throw this.spendError(eff.dailySpend!, r.spend!.spent);
    }
  }

  private slotsError(limit: number): GatewayError {
    limitRefusals.inc({ kind: 'concurrency' });
    return new GatewayError('quotaExceeded', `Quota exceeded: at most ${limit} asynchronous tasks may be active at once.`, {
      headers: { 'Retry-After': String(this.config.concurrentRetryAfterSeconds) },
    });
  }

  /** Free the task's slot (on its terminal state). True only the first time. */
  releaseTask(tenantId: string, taskId: string): Promise<boolean> {
    return this.store.releaseTask(tenantId, taskId);
  }

  /**
   * A task's end: its spend reservation finalized at what was settled (`settled`; null: cancelled,
   * no hold was written) and its slot freed, in one store step. Idempotent, as the two are.
   */
  async closeTask(tenantId: string, taskId: string, settled: Milli | null): Promise<void> {
    await this.store.closeTask(tenantId, taskId, settled);
  }

  activeTasks(tenantId: string): Promise<number> {
    return this.store.activeTasks(tenantId);
  }

  /**
   * Refused with 1005 when spending `milli` more today would pass the daily limit. For post-paid
   * calls (chat) the default of 1 milli-credit refuses once the limit is reached. Undefined when
   * answered at once (as checkRequest; a refusal is a rejected promise). `known`: the tenant's
   * limits as limitsOf() answered them (a caller that waited for them), else looked up here.
   */
  checkSpend(tenantId: string, milli: Milli = 1, known?: ModelLimits): void | Promise<void> {
    return whenKnown(this, known ?? this.limitsOf(tenantId, undefined, this.clock.now()), this.spendUnder, tenantId, milli);
  }

  private spendUnder(tenantId: string, milli: Milli, limits: ModelLimits): void | Promise<void> {
    assertMilli(milli, 'spend', { nonNegative: true });
    const limit = limits.eff.dailySpend;
    if (limit === null) return;
    return whenKnown(this, this.store.spent(tenantId, this.today()), this.underLimit, milli, limit);
  }

  private underLimit(milli: Milli, limit: Milli, spent: Milli): void {
    if (spent + milli > limit) throw this.spendError(limit, spent);
  }

  /** SpendGuard: count a hold against today's spend, or throw 1005. Once per ref. */
  async reserveSpend(tenantId: string, ref: string, milli: Milli): Promise<void> {
    assertMilli(milli, 'spend', { nonNegative: true });
    const limit = (await this.effective(tenantId, undefined)).dailySpend;
    const r = await this.store.reserveSpend(tenantId, ref, this.today(), milli, limit);
    if (r.status === 'refused') throw this.spendError(limit as Milli, r.spent);
  }

  /** SpendGuard: the hold this reservation was for was refused; forget it (the ref may be held later). */
  async cancelSpend(tenantId: string, ref: string): Promise<void> {
    await this.store.cancelSpend(tenantId, ref);
  }

  /** SpendGuard: the hold was settled for `actualMilli` (0 when released). Once per ref. */
  async finalizeSpend(tenantId: string, ref: string, actualMilli: Milli): Promise<void> {
    await this.store.finalizeSpend(tenantId, ref, actualMilli);
  }

  /** SpendGuard: post-paid usage already incurred; never refused. */
  recordSpend(tenantId: string, milli: Milli): void | Promise<void> {
    return this.store.recordSpend(tenantId, this.today(), milli);
  }

  /** Credits (milli) held + settled today (UTC). */
  async spentToday(tenantId: string): Promise<Milli> {
    return this.store.spent(tenantId, this.today());
  }

  private spendError(limit: Milli, spent: Milli): GatewayError {
    limitRefusals.inc({ kind: 'daily_spend' });
    const now = this.clock.now();
    const retryAfter = Math.max(1, Math.ceil((DAY_MS - (now % DAY_MS)) / 1000));
    return new GatewayError(
      'quotaExceeded',
      `Quota exceeded: the daily spend limit of ${formatCredits(limit)} credits is reached (${formatCredits(spent)} spent today, UTC).`,
      { headers: { 'Retry-After': String(retryAfter) } },
    );
  }

  /** Today's UTC date ("YYYY-MM-DD"), formatted once a day: every chat asks (its spend check and record). */
  private today(): string {
    const day = Math.floor(this.clock.now() / DAY_MS);
    if (day !== this.day) {
      this.day = day;
      this.dayText = isoAt(day * DAY_MS).slice(0, 10);
    }
    return this.dayText;
  }
}
