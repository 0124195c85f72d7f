// A vendor's upstream as a pool of members (accounts, regions, base URLs), each with its own
// client, weight and circuit breaker. A call goes to a member chosen by weight among the healthy
// ones; a member whose cool-down is over gets one trial call first (half-open), so it can come
// back. A member is taken out after `failures` consecutive connect errors, timeouts before any
// byte, 5xx or 429 answers, for `cooldown_ms`. When every member is out the pool still tries the
// one that is back soonest: the breaker steers traffic, it never refuses a call by itself (a pool
// of one behaves as a single upstream did).
//
// Breaker state lives behind BreakerStore (in the process, or shared through Redis). Reads are
// cached per member for `cacheMs` (a second at most), so a busy pool costs Redis about one read
// per member per second plus a write per failure; this process's own writes update the cache.
import { breakerState, CLOSED, type BreakerRecord, type BreakerStore } from './breaker-store.ts';
import { failedAfterAnswer, type UpstreamCall, type UpstreamClient, type UpstreamResponse } from './client.ts';
import { UpstreamFailure } from './failure.ts';
import type { Clock } from '../util/clock.ts';
import { memberBreakerState, memberErrors, memberFailovers, memberRequests } from '../metrics/metrics.ts';

export interface PoolMember {
  readonly id: string;
  readonly weight: number;
  readonly client: UpstreamClient;
}

export interface BreakerSettings {
  /** Consecutive failures that open a member's breaker. */
  readonly failures: number;
  /** How long an open member is left alone before its trial call. */
  readonly cooldownMs: number;
}

/** Why an outcome counts against a member; undefined when the member answered usably. */
export type FailureReason = 'connect' | 'timeout' | '5xx' | '429';

/** An HTTP answer that counts against its member (and may go to the next one). */
export function statusReason(status: number): FailureReason | undefined {
  if (status === 429) return '429';
  return status >= 500 ? '5xx' : undefined;
}

/**
 * A call that got no answer and that another member may take: refused or dropped before any
 * byte came back, or no answer in time. Anything after the answer began is not: the provider
 * may have acted on it.
 */
export function failureReason(err: unknown): FailureReason | undefined {
  if (!(err instanceof UpstreamFailure) || failedAfterAnswer(err)) return undefined;
  if (err.error === 'upstreamUnavailable') return 'connect';
  if (err.error === 'upstreamTimeout') return 'timeout';
  return undefined;
}

/** What one try at a member came to, and why it counts against the member (then the call may go on to the next). */
export interface MemberTry<T> {
  outcome: T;
  reason?: FailureReason;
}

export interface FailoverOptions {
  /** Epoch ms after which no further member is tried. */
  until?: number;
  onFailover?: (from: PoolMember, reason: FailureReason) => void;
}

/**
 * A call's tries at members, made by the caller (the proxy's exchange, which streams, so it
 * records each try itself): UpstreamPool.call.
 */
export interface FailoverAttempt<T> {
  /** The metrics' stage label. */
  readonly stage: string;
  /** The try at `m`: it records the outcome (`record`) and says why it counts against the member. */
  attempt(m: PoolMember): Promise<MemberTry<T>>;
  /** True stops the failover (a stream's head already went to the client, or the client left). */
  final(): boolean;
  /** A try at `from` failed and the call goes on to the next member. */
  failedOver(from: PoolMember, reason: FailureReason): void;
}

/** No member tried yet (the first pick of every call). */
const NONE_TRIED: ReadonlySet<string> = new Set();

const STATE_VALUE = { closed: 0, half_open: 1, open: 2 } as const;

/** Before the gateway attaches its store (offline tools compile vendors without one): always closed. */
const UNATTACHED: BreakerStore = {
  read: async () => ({ ...CLOSED }),
  failure: async () => ({ ...CLOSED }),
  success: async () => undefined,
  claimProbe: async () => false,
};

interface View {
  record: BreakerRecord;
  readAt: number;
  reading?: Promise<BreakerRecord>;
}

export class UpstreamPool {
  readonly vendor: string;
  readonly members: readonly PoolMember[];
  readonly breaker: BreakerSettings;
  private store: BreakerStore;
  private cacheMs: number;
  private readonly clock: Clock;
  private readonly random: () => number;
  private readonly views = new Map<string, View>();

  constructor(opts: { vendor: string; members: readonly PoolMember[]; breaker: BreakerSettings; clock: Clock; store?: BreakerStore; cacheMs?: number; random?: () => number }) {
    if (!opts.members.length) throw new Error(`the pool of ${opts.vendor} has no member`);
    this.vendor = opts.vendor;
    this.members = Object.freeze([...opts.members]);
    this.breaker = opts.breaker;
    this.clock = opts.clock;
    this.store = opts.store ?? UNATTACHED;
    this.cacheMs = opts.cacheMs ?? 0;
    this.random = opts.random ?? Math.random;
    for (const m of this.members) memberBreakerState.set({ vendor: this.vendor, member: m.id }, 0);
  }

  /** The breakers' store (set once the stores exist: vendors are compiled before them). */
  attach(store: BreakerStore, cacheMs: number): void {
    this.store = store;
    this.cacheMs = cacheMs;
    this.views.clear();
  }

  get first(): PoolMember {
    return this.members[0]!;
  }

  member(id: string): PoolMember | undefined {
    return this.members.find((m) => m.id === id);
  }

  /**
   * The member for the next call, none of `exclude`; undefined when every member was excluded.
   * `healthyOnly` (a failover): no member whose breaker is open, rather than the one back soonest.
   */
  pick(exclude: ReadonlySet<string> = NONE_TRIED, opts?: { healthyOnly?: boolean }): Promise<PoolMember | undefined> {
    // A pool of one (most vendors) has nothing to choose: no breaker read, no async layer, no list.
    if (this.members.length === 1 && !opts?.healthyOnly) return Promise.resolve(exclude.has(this.first.id) ? undefined : this.first);
    const candidates = this.members.filter((m) => !exclude.has(m.id));
    if (candidates.length === 0 || (candidates.length === 1 && !opts?.healthyOnly)) return Promise.resolve(candidates[0]);
    return this.pickAmong(candidates, opts ?? {});
  }

  private async pickAmong(candidates: PoolMember[], opts: { healthyOnly?: boolean }): Promise<PoolMember | undefined> {
    const records = await Promise.all(candidates.map((m) => this.view(m)));
    const now = this.clock.now();
    for (let i = 0; i < candidates.length; i++) {
      const r = records[i]!;
      if (r.open_until !== 0 && r.open_until <= now && (await this.claim(candidates[i]!))) return candidates[i];
    }
    const closed = candidates.filter((_, i) => breakerState(records[i]!, now) === 'closed');
    if (closed.length) return this.weighted(closed);
    if (opts.healthyOnly) return undefined;
    let soonest = 0;
    for (let i = 1; i < candidates.length; i++) if (records[i]!.open_until < records[soonest]!.open_until) soonest = i;
    return candidates[soonest];
  }

  private weighted(members: readonly PoolMember[]): PoolMember {
    const total = members.reduce((sum, m) => sum + m.weight, 0);
    let x = this.random() * total;
    for (const m of members) {
      x -= m.weight;
      if (x < 0) return m;
    }
    return members.at(-1)!;
  }

  /**
   * One call with failover, the only failover loop: a call that fails before the provider
   * accepted it (no connection, a timeout before any byte, a 5xx or 429 answer) goes to the next
   * healthy member, while `until` (epoch ms) is not reached.
   *  - An UpstreamCall (task submissions): returns the last answer and the member that gave it;
   *    throws the last failure when no member answered.
   *  - A FailoverAttempt (the proxy's exchange, which streams): it makes each try, records its
   *    outcome and says why it counts against the member; its `final()` true stops the failover.
   *    Returns the last try's outcome. An object of methods, not closures: a chat makes one call,
   *    and the closures and options of each were four allocations more per request.
   */
  call(c: UpstreamCall, opts?: FailoverOptions): Promise<{ res: UpstreamResponse; member: PoolMember }>;
  call<T>(attempt: FailoverAttempt<T>): Promise<T>;
  async call<T>(c: UpstreamCall | FailoverAttempt<T>, opts?: FailoverOptions): Promise<unknown> {
    const proxied = 'attempt' in c;
    // The tried members, kept once a try failed (most calls make one: no set for them).
    let tried: Set<string> | undefined;
    let member = await this.pick(NONE_TRIED);
    for (;;) {
      const m = member!;
      const { outcome, reason } = await (proxied ? c.attempt(m) : this.tryCall(m, c));
      if (!reason || (proxied && c.final()) || !(member = await this.next((tried ??= new Set()).add(m.id), opts?.until))) {
        if (proxied) return outcome;
        const o = outcome as { res: UpstreamResponse; member: PoolMember } | { err: unknown };
        if ('err' in o) throw o.err;
        return o;
      }
      if (proxied) c.failedOver(m, reason);
      else opts?.onFailover?.(m, reason);
      memberFailovers.inc({ vendor: this.vendor, stage: c.stage });
    }
  }

  /** One try of an UpstreamCall at `m`: an answer, or the failure that took its place; either may send the call on. */
  private async tryCall(m: PoolMember, c: UpstreamCall): Promise<MemberTry<{ res: UpstreamResponse; member: PoolMember } | { err: unknown }>> {
    try {
      const res = await this.callMember(m, c);
      return { outcome: { res, member: m }, reason: statusReason(res.status) };
    } catch (err) {
      return { outcome: { err }, reason: failureReason(err) };
    }
  }

  private async next(tried: ReadonlySet<string>, until: number | undefined): Promise<PoolMember | undefined> {
    if (until !== undefined && this.clock.now() >= until) return undefined;
    return this.pick(tried, { healthyOnly: true });
  }

  /** One call to one member (polls and cancels go to the member that accepted the task), its outcome recorded. */
  async callMember(m: PoolMember, c: UpstreamCall): Promise<UpstreamResponse> {
    let res: UpstreamResponse;
    try {
      res = await m.client.call(c);
    } catch (err) {
      await this.record(m, c.stage, failureReason(err) ?? 'neutral');
      throw err;
    }
    await this.record(m, c.stage, statusReason(res.status) ?? 'usable');
    return res;
  }

  /**
   * A call's outcome at `m`: a failure reason counts against its breaker, a usable answer closes
   * it, anything else (the provider may have acted on the call) is only counted.
   */
  // Neither this nor succeeded is async: a usable answer with a clean breaker (nearly every call)
  // writes nothing and costs no promise of its own.
  record(m: PoolMember, stage: string, outcome: FailureReason | 'usable' | 'neutral'): Promise<void> | undefined {
    if (outcome === 'usable') return this.succeeded(m, stage);
    if (outcome === 'neutral') this.count(m, stage);
    else return this.failed(m, stage, outcome);
  }

  /** A usable answer from `m`: its breaker closes. */
  private succeeded(m: PoolMember, stage: string): Promise<void> | undefined {
    this.count(m, stage);
    const v = this.views.get(m.id);
    // Nothing to write while this process sees it closed and clean: no Redis write per success.
    if (!v || (v.record.failures === 0 && v.record.open_until === 0)) return;
    this.setView(m, { ...CLOSED });
    return this.store.success(this.vendor, m.id).catch(() => undefined);
  }

  /** A failure of `m` that counts against its breaker. */
  private async failed(m: PoolMember, stage: string, reason: FailureReason): Promise<void> {
    this.count(m, stage);
    memberErrors.inc({ vendor: this.vendor, member: m.id, stage, reason });
    const now = this.clock.now();
    try {
      this.setView(m, await this.store.failure(this.vendor, m.id, this.breaker.failures, now, this.breaker.cooldownMs));
    } catch {
      // The shared store is away: the calls go on, steered by what this process saw last.
    }
  }

  /** A call to `m` that says nothing of its health (counted only). */
  private count(m: PoolMember, stage: string): void {
    memberRequests.inc({ vendor: this.vendor, member: m.id, stage });
  }

  /** The member's breaker as this process knows it, re-read when older than cacheMs. */
  private async view(m: PoolMember): Promise<BreakerRecord> {
    const now = this.clock.now();
    const v = this.views.get(m.id);
    if (v && (now - v.readAt < this.cacheMs || v.reading)) return v.reading ? v.reading.catch(() => v.record) : v.record;
    const reading = this.store.read(this.vendor, m.id);
    const held: View = v ?? { record: { ...CLOSED }, readAt: 0 };
    held.reading = reading;
    this.views.set(m.id, held);
    try {
      const record = await reading;
      this.setView(m, record);
      return record;
    } catch {
      held.reading = undefined;
      return held.record;
    }
  }

  private async claim(m: PoolMember): Promise<boolean> {
    const now = this.clock.now();
    let claimed = false;
    try {
      claimed = await this.store.claimProbe(this.vendor, m.id, now, this.breaker.cooldownMs);
    } catch {
      return false;
    }
    // Claimed or not, someone is trying it now: this process waits for the outcome.
    const v = this.views.get(m.id);
    this.setView(m, { failures: v?.record.failures ?? this.breaker.failures, open_until: now + this.breaker.cooldownMs, probing: true });
    return claimed;
  }

  private setView(m: PoolMember, record: BreakerRecord): void {
    this.views.set(m.id, { record, readAt: this.clock.now() });
    memberBreakerState.set({ vendor: this.vendor, member: m.id }, STATE_VALUE[breakerState(record, this.clock.now())]);
  }

  /** The breaker state of each member as this process last saw it (tests, diagnostics). */
  async states(): Promise<Record<string, ReturnType<typeof breakerState>>> {
    const out: Record<string, ReturnType<typeof breakerState>> = {};
    const now = this.clock.now();
    for (const m of this.members) out[m.id] = breakerState(await this.view(m), now);
    return out;
  }
}
