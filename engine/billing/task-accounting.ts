// Billing and quotas of asynchronous tasks (the lifecycle's TaskAccounting port):
//   reserve  → a concurrent-task slot, then a hold of the route's maximum price (402 / 1003,
//              429 / 1005 refuse the task before anything is stored)
//   freeSlot → the concurrent-task slot, just before the terminal transition (so it is free
//              by the time the terminal state is visible)
//   complete → settle the actual price (from the result, e.g. billed seconds) and release the rest
//   abandon  → release the whole hold: a failed task is never billed
// The lifecycle calls complete/abandon only after winning the transition to a terminal state,
// and the wallet settles or releases a hold once per task id even if called again.
import type { AsyncRoutePlan } from '../descriptors/compile.ts';
import { HoldClosedError, type TaskAccounting } from '../tasks/accounting.ts';
import type { TaskStore } from '../tasks/store.ts';
import type { Clock } from '../util/clock.ts';
import { isUuid } from '../util/ids.ts';
import type { TaskRecord } from '../tasks/task.ts';
import type { Milli } from '../util/money.ts';
import type { BillingService, CloseOutcome } from './service.ts';

/** The concurrent-task slots a task holds while it runs (LimitsService implements them). */
export interface TaskSlots {
  /**
   * Take the tenant's slot for the task and reserve `spend` (its hold) against the day's spend
   * under the task id, or throw 1005 (429) with neither taken.
   */
  acquireTask(tenantId: string, taskId: string, spend: Milli): Promise<void>;
  releaseTask(tenantId: string, taskId: string): Promise<unknown>;
  /** The task's end: its reservation finalized at `settled` (null: cancelled) and its slot freed, in one step. */
  closeTask(tenantId: string, taskId: string, settled: Milli | null): Promise<void>;
}

/** The hold's spend is reserved with the task's slot (TaskSlots.acquireTask), and closed with it (closeTask). */
const SPEND_RESERVED = Object.freeze({ spendReserved: true });
const SPEND_BY_CALLER = Object.freeze({ spendByCaller: true });

/** How long a proxied request's hold may stay open before the sweep takes its process for dead. */
export const REQUEST_HOLD_MAX_MS = 3_600_000;

export interface OrphanCheckDeps {
  tasks: TaskStore;
  /** Every tenant id (the sweep looks at each one's open holds). */
  tenantIds(): Promise<string[]>;
  clock: Clock;
}

export class BilledTaskAccounting implements TaskAccounting {
  private readonly billing: BillingService;
  private readonly limits: TaskSlots;
  private readonly orphans: OrphanCheckDeps;

  constructor(billing: BillingService, limits: TaskSlots, orphans: OrphanCheckDeps) {
    this.billing = billing;
    this.limits = limits;
    this.orphans = orphans;
  }

  // The price is quoted first, so the slot and the hold's spend are taken in one store step (one
  // script on Redis); the hold itself is the wallet's own step after it.
  async reserve(task: TaskRecord, route: AsyncRoutePlan): Promise<number> {
    const quote = await route.pricing.quoteHold(task.request);
    await this.limits.acquireTask(task.tenant_id, task.id, quote.milli);
    try {
      const hold = await this.billing.hold(task.tenant_id, task.id, quote.milli, `${route.key}: ${quote.quantity} ${route.pricing.unit} x ${quote.unitPriceUsd} USD`, SPEND_RESERVED);
      if (!hold.open) throw new HoldClosedError(task.id);
      return hold.amount;
    } catch (err) {
      await this.limits.releaseTask(task.tenant_id, task.id);
      throw err;
    }
  }

  async freeSlot(task: TaskRecord): Promise<void> {
    await this.limits.releaseTask(task.tenant_id, task.id);
  }

  async price(task: TaskRecord, route: AsyncRoutePlan, upstream?: unknown): Promise<number> {
    return (await route.pricing.quoteSettle(task.request, task.result, upstream)).milli;
  }

  // The hold is closed first (the wallet's step), then the task's spend reservation in one store
  // step with the slot (freed before the terminal transition by freeSlot; the HDEL here is a
  // no-op then, and frees the slot of a task that went terminal before freeSlot existed). Each
  // step is idempotent and both are done before the task is marked finalized: a process killed
  // between them leaves the task unfinalized, and whoever re-runs its ending repeats both.
  async complete(task: TaskRecord): Promise<void> {
    const r = await this.billing.settle(task.tenant_id, task.id, task.charge ?? 0, `${task.route}: completed`, SPEND_BY_CALLER);
    // No hold to settle: its spend is left as it is, as BillingService.settle leaves it.
    if (r.status === 'unknown') await this.limits.releaseTask(task.tenant_id, task.id);
    else await this.limits.closeTask(task.tenant_id, task.id, r.settled);
  }

  async releaseOrphans(olderThanMs: number): Promise<number> {
    const cutoff = this.orphans.clock.now() - olderThanMs;
    let released = 0;
    const requestCutoff = this.orphans.clock.now() - Math.max(olderThanMs, REQUEST_HOLD_MAX_MS);
    for (const tenantId of await this.orphans.tenantIds()) {
      for (const hold of await this.billing.openHolds(tenantId)) {
        const at = Date.parse(hold.at);
        if (!isUuid(hold.ref)) {
          // A proxied request's hold (chat: not a task id). Its request may still be streaming;
          // one left open this long lost its process before it was settled: released, as a
          // request whose process died is taken as not served.
          if (at > requestCutoff) continue;
          await this.billing.releaseHold(tenantId, hold.ref, 'orphaned: the request\'s process stopped before its charge');
          released++;
          continue;
        }
        if (at > cutoff || (await this.orphans.tasks.get(hold.ref))) continue;
        await this.close(tenantId, hold.ref, await this.billing.release(tenantId, hold.ref, 'orphaned: the task was never stored', SPEND_BY_CALLER));
        released++;
      }
    }
    return released;
  }

  async abandon(task: TaskRecord): Promise<void> {
    await this.close(task.tenant_id, task.id, await this.billing.release(task.tenant_id, task.id, task.error ? `failed: ${task.error.code}` : 'not started', SPEND_BY_CALLER));
  }

  /** After a release: the reservation finalized at what was settled (0), or cancelled when no hold was written; the slot freed. */
  private close(tenantId: string, taskId: string, r: CloseOutcome): Promise<void> {
    return this.limits.closeTask(tenantId, taskId, r.status === 'unknown' ? null : r.settled);
  }
}
