// The limits port: concurrent-task slots and daily spend. Each method is ONE atomic operation
// (memory: synchronous; Redis: one Lua script per call). Request-rate counters are not here:
// they are WindowCounters (see rate.ts), atomic on their own.
import type { Milli } from '../billing/money.ts';

export type AcquireResult = 'acquired' | 'already' | 'full';

export interface SpendReservation {
  status: 'reserved' | 'duplicate' | 'refused';
  /** The day's spend after this call (before it, when refused). */
  spent: Milli;
}

export interface LimitsStore {
  /** Take a slot for `taskId` unless the tenant already has `limit` (null = no limit) active; idempotent per task. */
  acquireTask(tenantId: string, taskId: string, limit: number | null, now: number): Promise<AcquireResult>;
  /** Free the task's slot. True only for the call that freed it (exactly once per task). */
  releaseTask(tenantId: string, taskId: string): Promise<boolean>;
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
  /** Add already-incurred spend (no limit check). Once per ref. */
  recordSpend(tenantId: string, ref: string, day: string, milli: Milli): Promise<boolean>;
  spent(tenantId: string, day: string): Promise<Milli>;
}
