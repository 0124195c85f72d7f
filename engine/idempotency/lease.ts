// The lease of an Idempotency-Key claim: at most `leaseMs` (10 s) without a renewal, renewed every
// third of it while its owner lives, so a retry after the owner died takes the key over within
// one lease, not minutes. The owner stops itself before any effect once its lease may have run
// out (a renewal refused, or none received in time: a paused process, a store away), so two
// attempts never act on one key at once: `check()` is called before each step that writes.
import { GatewayError } from '../errors/gateway-error.ts';
import type { Clock } from '../util/clock.ts';
import type { IdempotencyStore } from './store.ts';

export interface Claim {
  /** The id the key's create takes: the same for every attempt, so a retry finds what an earlier one made. */
  readonly taskId: string;
  /** An earlier attempt owned the key and died: a task with `taskId` may exist already. */
  readonly recovered: boolean;
  /** Throws 409 (Retry-After) when this attempt may no longer own the key. Called before each effect. */
  check(): void;
  /** Give the key's create another id (the earlier attempt's was undone). */
  relink(taskId: string): Promise<void>;
}

/** A claim without a key: nothing to renew or lose. */
export function freeClaim(taskId: string): Claim {
  return { taskId, recovered: false, check: () => {}, relink: async () => {} };
}

export class Lease implements Claim {
  taskId: string;
  readonly recovered: boolean;
  private until: number;
  private lost = false;
  private readonly timer: NodeJS.Timeout;
  private readonly at: { store: IdempotencyStore; tenantId: string; key: string; token: string; clock: Clock; leaseMs: number };

  /** `claimedAt`: the `now` the claim was made with (the lease counts from it). */
  constructor(at: Lease['at'], claim: { taskId: string; recovered: boolean }, claimedAt: number) {
    this.at = at;
    this.taskId = claim.taskId;
    this.recovered = claim.recovered;
    this.until = claimedAt + at.leaseMs;
    this.timer = setInterval(() => void this.renew(), Math.max(1, Math.floor(at.leaseMs / 3)));
    this.timer.unref();
  }

  check(): void {
    // A fifth of the lease is left for the step about to be written to land.
    if (this.lost || this.at.clock.now() >= this.until - this.at.leaseMs / 5) {
      throw new GatewayError('conflict', 'This request lost its Idempotency-Key to a retry of it; retry to get that answer.', { headers: { 'Retry-After': '1' } });
    }
  }

  async relink(taskId: string): Promise<void> {
    this.check();
    const { store, tenantId, key, token } = this.at;
    if (!(await store.relink(tenantId, key, token, taskId))) this.lost = true;
    this.check();
    this.taskId = taskId;
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private async renew(): Promise<void> {
    const { store, tenantId, key, token, clock, leaseMs } = this.at;
    const at = clock.now();
    try {
      if (await store.renew(tenantId, key, token, at, leaseMs)) this.until = at + leaseMs;
      else this.lost = true;
    } catch {
      // The store is away: the lease runs out on its own, and check() stops the owner.
    }
  }
}
