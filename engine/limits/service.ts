// LimitsService: request rates (1004), concurrent async tasks (1005) and daily spend (1005),
// all answered as GatewayError 429 with Retry-After. Requests under every limit are never refused.
//
// Wiring (lead): per request   checkRequest({tenantId, keyId, model})
//                async create  acquireTask(tenantId, taskId) ... releaseTask(tenantId, taskId) on the terminal state
//                daily spend   pass the service as BillingService's `spend` (SpendGuard): holds reserve
//                              spend (1005 when over), settle/release lower it to what was settled;
//                              for post-paid chat call checkSpend(tenantId) before the upstream call.
// Spend counts on the UTC day the hold was taken (a task held at 23:59 and settled at 00:01 counts
// on the first day).
import { GatewayError } from '../errors/gateway-error.ts';
import { isoAt, systemClock, type Clock } from '../util/clock.ts';
import { assertMilli, formatCredits, type Milli } from '../util/money.ts';
import { LimitsConfig, type EffectiveLimits, type LimitsConfigInput, type RateScope, type RateWindows, type TenantLimitsInput } from './config.ts';
import { RateLimits } from './rate.ts';
import type { LimitsStore, RateCountersFactory } from './store.ts';
import { limitRefusals } from '../metrics/metrics.ts';

export interface LimitsServiceOptions {
  store: LimitsStore;
  config?: LimitsConfigInput | LimitsConfig;
  clock?: Clock;
  /** The store's request-rate counters (memoryRateCounters, redisRateCounters). */
  rateCounters: RateCountersFactory;
  /**
   * A tenant's own limits set at run time (admin API), or undefined for none. Rejects when the
   * store cannot be read: the request then gets the outage answer, never the defaults.
   */
  tenantOverrides?: (tenantId: string) => Promise<TenantLimitsInput | undefined>;
  /** A tenant's overrides are read again after this long at most (default 5 s). */
  overridesTtlMs?: number;
  /**
   * The store's change feed of the directory the overrides live in (Redis: every limits change
   * is PUBLISHed by the script that writes it, engine/store/redis/directory-feed.ts). With it,
   * cached overrides are used only while the feed is live and has not moved since they were
   * read: no polling, so an idle process sends nothing for its limits. Without it (the memory
   * store) the shared overrides version is read every overridesCheckMs.
   */
  changes?: { readonly live: boolean; readonly generation: number };
  /**
   * Without `changes`: how often the shared overrides version is read (default 250 ms): a change
   * made by any process is seen by every other within this (plus a round trip). Cached overrides
   * are used only while the version was read within OVERRIDES_TRUST_MS.
   */
  overridesCheckMs?: number;
}

export interface RequestIdentity {
  tenantId: string;
  keyId: string;
  /** The model (or route) the request targets; omitted = no model-scope limit. */
  model?: string;
}

const DAY_MS = 86_400_000;
/** Cached overrides are trusted while the shared version was read this recently. */
const OVERRIDES_TRUST_MS = 1000;

interface CachedOverrides {
  at: number;
  /** The change feed's generation before the read (with `changes`). */
  feed: number;
  value: TenantLimitsInput | undefined;
  merged: Map<string, EffectiveLimits>;
}

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
  recordSpend(tenantId: string, milli: Milli): Promise<void>;
}

export class LimitsService implements SpendGuard {
  readonly config: LimitsConfig;
  private readonly store: LimitsStore;
  private readonly clock: Clock;
  private readonly rates: RateLimits;
  private readonly tenantOverrides: LimitsServiceOptions['tenantOverrides'];
  private readonly overridesTtlMs: number;
  private readonly overrides = new Map<string, CachedOverrides>();
  /** The shared overrides version last read, when, and a count of cache clears (see effective()). */
  private version: number | undefined;
  private versionReadAt = 0;
  private generation = 0;
  private readonly watcher: NodeJS.Timeout | undefined;
  private readonly changes: LimitsServiceOptions['changes'];

  constructor(opts: LimitsServiceOptions) {
    this.store = opts.store;
    this.clock = opts.clock ?? systemClock;
    this.config = opts.config instanceof LimitsConfig ? opts.config : new LimitsConfig(opts.config);
    this.rates = new RateLimits(opts.rateCounters, this.clock);
    this.tenantOverrides = opts.tenantOverrides;
    this.overridesTtlMs = opts.overridesTtlMs ?? 5_000;
    this.changes = opts.changes;
    if (this.tenantOverrides && !this.changes) {
      this.watcher = setInterval(() => void this.checkVersion(), opts.overridesCheckMs ?? 250).unref();
      void this.checkVersion();
    }
  }

  /** Stops reading the overrides version. */
  close(): void {
    if (this.watcher) clearInterval(this.watcher);
  }

  /**
   * Reads the shared overrides version; when it moved, every cached override is dropped. A read
   * that fails leaves the cache untrusted once OVERRIDES_TRUST_MS has passed (effective() then
   * reads the tenant's overrides, and a store still away answers that request 503).
   */
  private async checkVersion(): Promise<void> {
    const startedAt = Date.now();
    const version = await this.store.overridesVersion().catch(() => undefined);
    if (version === undefined) return;
    if (version !== this.version) this.forgetAll();
    this.version = version;
    this.versionReadAt = startedAt;
  }

  private forgetAll(): void {
    this.overrides.clear();
    this.generation++;
  }

  /** The limits in force for a tenant (and model), its run-time overrides included. */
  async effective(tenantId: string, model: string | undefined): Promise<EffectiveLimits> {
    if (!this.tenantOverrides) return this.config.forTenant(tenantId, model);
    const now = this.clock.now();
    let cached = this.overrides.get(tenantId);
    if (!cached || now - cached.at >= this.overridesTtlMs || !this.trusted(cached)) {
      // A read that started before the cache was cleared (or the feed moved) may hold overrides
      // older than the change that cleared it: it serves its own request but is not cached.
      const generation = this.generation;
      const feed = this.changes?.generation ?? 0;
      const live = this.changes?.live ?? true;
      cached = { at: now, feed, value: await this.tenantOverrides(tenantId), merged: new Map() };
      if (generation === this.generation && live) {
        if (this.overrides.size > 10_000) this.overrides.clear();
        this.overrides.set(tenantId, cached);
      }
    }
    // Merged once per tenant and model while the overrides are cached (stable objects, too).
    const key = model ?? '';
    let eff = cached.merged.get(key);
    if (!eff) {
      eff = this.config.forTenant(tenantId, model, cached.value);
      if (cached.merged.size < 1_000) cached.merged.set(key, eff);
    }
    return eff;
  }

  /** Cached overrides may answer: the feed live and unmoved since they were read, or (no feed) the version read lately. */
  private trusted(cached: CachedOverrides): boolean {
    if (this.changes) return this.changes.live && this.changes.generation === cached.feed;
    return Date.now() - this.versionReadAt <= OVERRIDES_TRUST_MS;
  }

  /**
   * A tenant's overrides were just changed (in this process): forget them here. With a change
   * feed the write itself announced the change to every process; without one, bump the shared
   * version so every other process forgets its cached overrides within overridesCheckMs.
   */
  async invalidate(tenantId: string): Promise<void> {
    this.overrides.delete(tenantId);
    this.generation++;
    if (!this.changes) await this.store.bumpOverridesVersion();
  }

  /** Count one request; throws 1004 (429, Retry-After) when a key, model or tenant rate is exceeded. */
  async checkRequest(who: RequestIdentity): Promise<void> {
    const eff = await this.effective(who.tenantId, who.model);
    const scopes: { scope: RateScope; id: string; windows: RateWindows }[] = [{ scope: 'key', id: who.keyId, windows: eff.rate.key }];
    if (who.model !== undefined) scopes.push({ scope: 'model', id: `${who.tenantId}:${who.model}`, windows: eff.rate.model });
    scopes.push({ scope: 'tenant', id: who.tenantId, windows: eff.rate.tenant });
    await this.rates.check(scopes, who.tenantId);
  }

  /** Take a concurrent-task slot; throws 1005 when the tenant has its limit of active tasks. Idempotent per task. */
  async acquireTask(tenantId: string, taskId: string): Promise<void> {
    const limit = (await this.effective(tenantId, undefined)).concurrentTasks;
    const r = await this.store.acquireTask(tenantId, taskId, limit, this.clock.now());
    if (r === 'full') {
      limitRefusals.inc({ kind: 'concurrency' });
      throw new GatewayError('quotaExceeded', `Quota exceeded: at most ${limit} asynchronous tasks may be active at once.`, {
        headers: { 'Retry-After': String(this.config.concurrentRetryAfterSeconds) },
      });
    }
  }

  /** Free the task's slot (on its terminal state). True only the first time. */
  releaseTask(tenantId: string, taskId: string): Promise<boolean> {
    return this.store.releaseTask(tenantId, taskId);
  }

  activeTasks(tenantId: string): Promise<number> {
    return this.store.activeTasks(tenantId);
  }

  /**
   * Throws 1005 when spending `milli` more today would pass the daily limit. For post-paid calls
   * (chat) the default of 1 milli-credit refuses once the limit is reached.
   */
  async checkSpend(tenantId: string, milli: Milli = 1): Promise<void> {
    assertMilli(milli, 'spend', { nonNegative: true });
    const limit = (await this.effective(tenantId, undefined)).dailySpend;
    if (limit === null) return;
    const spent = await this.store.spent(tenantId, this.today());
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
  async recordSpend(tenantId: string, milli: Milli): Promise<void> {
    await this.store.recordSpend(tenantId, this.today(), milli);
  }

  /** Credits (milli) held + settled today (UTC). */
  spentToday(tenantId: string): Promise<Milli> {
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

  private today(): string {
    return isoAt(this.clock.now()).slice(0, 10);
  }
}
