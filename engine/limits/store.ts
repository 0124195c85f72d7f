// The limits ports: concurrent-task slots and daily spend (LimitsStore: each method is ONE atomic
// operation; memory: synchronous, Redis: one Lua script per call), and the request-rate counters
// (WindowCounters, atomic on their own; rate.ts counts with them). What every chat asks (its
// rate counts, its day's spend, its spend record) is answered by the memory store as a value,
// not a promise: the service waits only where a store makes it (Redis).
import type { Milli } from '../util/money.ts';

export type AcquireResult = 'acquired' | 'already' | 'full';

export interface SpendReservation {
  status: 'reserved' | 'duplicate' | 'refused';
  /** The day's spend after this call (before it, when refused). */
  spent: Milli;
}

/** The spend a task's admission reserves under its id (as reserveSpend). */
export interface SpendRequest {
  day: string;
  milli: Milli;
  limit: Milli | null;
}

/** What a task's admission did: its slot, and the reservation unless the slot was full (then none is made). */
export interface TaskAdmission {
  slot: AcquireResult;
  spend?: SpendReservation;
}

export interface LimitsStore {
  /**
   * A task's admission as ONE atomic step (Redis: one script, one round trip at each create): a
   * slot for `taskId` unless the tenant already has `limit` (null = no limit) active (idempotent
   * per task), then, unless the slot is 'full', reserveSpend of `spend` under the task id. A
   * refused reservation keeps the slot: the caller frees it.
   */
  admitTask(tenantId: string, taskId: string, limit: number | null, now: number, spend: SpendRequest): Promise<TaskAdmission>;
  /** Free the task's slot. True only for the call that freed it (exactly once per task). */
  releaseTask(tenantId: string, taskId: string): Promise<boolean>;
  /**
   * A task's end as ONE atomic step (Redis: one script): finalizeSpend(taskId, actual) (null:
   * cancelSpend), then releaseTask. What each of the two answered.
   */
  closeTask(tenantId: string, taskId: string, actual: Milli | null): Promise<{ spend: boolean; slot: boolean }>;
  activeTasks(tenantId: string): Promise<number>;

  /**
   * Add `milli` to the tenant's spend of `day` (UTC "YYYY-MM-DD") for `ref`, unless that would
   * pass `limit` (null = no limit). Once per ref: a repeat is a 'duplicate' that adds nothing.
   */
  reserveSpend(tenantId: string, ref: string, day: string, milli: Milli, limit: Milli | null): Promise<SpendReservation>;
  /** Undo a reservation that is not final (the hold it was for was refused). True if one was undone. */
  cancelSpend(tenantId: string, ref: string): Promise<boolean>;
  /** Lower the reservation of `ref` to min(actual, reserved), on the day it was reserved. Once per ref; false if already final or unknown. */
  finalizeSpend(tenantId: string, ref: string, actual: Milli): Promise<boolean>;
  /**
   * Add already-incurred (post-paid) spend to `day`, with no limit check and no ref kept: the
   * wallet's charge is what is once per ref, and BillingService records spend only for a charge
   * the wallet took as new. A record per chat request, kept for days, would grow with traffic.
   */
  recordSpend(tenantId: string, day: string, milli: Milli): void | Promise<void>;
  /**
   * The tenant's spend of `day`. `refusedAbove`: asked inside gate(), the spend past which the
   * request asking is refused (its limit less what it asks): its hold is then withheld.
   */
  spent(tenantId: string, day: string, refusedAbove?: Milli): Milli | Promise<Milli>;
  /**
   * Runs `run`, in which one priced request asks its steps of `tenantId` (its rate counts, its
   * day's spend, its hold), as one step of the store that judges them together: the hold is
   * withheld (HoldResult 'withheld') when a count passes its limit (RateCount.limit) or the spend
   * passes `refusedAbove`, so a refused request holds no funds, not even for a moment. Redis: the
   * steps asked synchronously in `run` go in one STEPS run of the tenant's slot, whose ADMIT part
   * judges the counts and the spend before the holds (engine/store/redis/wallet-batches.ts). A
   * store without it (memory) answers the counts and the spend at once: LimitsService asks the
   * hold only once they passed.
   */
  gate?(tenantId: string, run: () => void): void;
}

/**
 * One counter of a request: `id`'s count in window number `n` of the counters `name` (one per
 * scope and window; `windowMs` long).
 */
export interface RateCount {
  name: string;
  windowMs: number;
  id: string;
  n: number;
  /** The window's limit (a count past it refuses the request): what a gated hold is judged by (LimitsStore.gate). */
  limit?: number;
}

/**
 * The request-rate counters, atomic each. A request's counters are counted in ONE call (one
 * promise on Redis, none in memory), all of them or none: `slot`, the tenant they belong to if
 * any: a shared store keeps a tenant's counters together and counts them in one step (Redis: in
 * the tenant's admission script).
 */
export interface RateCounters {
  /** Count one request in each counter; the counts after it, in order (memory: synchronously). */
  add(counts: readonly RateCount[], slot?: string): number[] | Promise<number[]>;
  /** Give back a request add() counted. */
  remove(counts: readonly RateCount[], slot?: string): void | Promise<unknown>;
}
