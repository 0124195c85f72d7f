// In-memory LimitsStore: every method reads and writes synchronously, so each is atomic.
import type { Milli } from '../../util/money.ts';
import type { AcquireResult, LimitsStore, SpendRequest, SpendReservation, TaskAdmission } from '../../limits/store.ts';
import { systemClock } from '../../util/clock.ts';
import { ExpiryQueue } from './expiry-queue.ts';

interface SpendRef {
  amount: Milli;
  final: boolean;
}

/** One tenant's spend of one UTC day: the total, and each ref's reservation. */
interface DaySpend {
  total: Milli;
  refs: Map<string, SpendRef>;
}

/**
 * Days kept before today, so a late duplicate (or a settlement the day after its hold) is still
 * recognised: the same window as the Redis store (store/redis/limits.ts), which the contract test
 * holds both to. Older days are dropped whole, so memory stays bounded.
 */
const RETAIN_DAYS = 3;

export interface MemoryLimitsStoreOptions {
  /**
   * Finalized reservations kept per tenant at most (config store.memory_ledger_entries, as for the
   * wallet's closed holds); past it the oldest are forgotten first (the day's total stays exact).
   * Default: no count bound. Without one, a busy tenant's async tasks left a record each (about
   * 100 bytes) for three days: 50 MB an hour at 150 tasks/s.
   */
  finalRefs?: number;
}

export class MemoryLimitsStore implements LimitsStore {
  private readonly active = new Map<string, Map<string, number>>();
  /** tenant -> day (UTC "YYYY-MM-DD") -> spend */
  private readonly spend = new Map<string, Map<string, DaySpend>>();
  /** tenant -> its finalized refs, oldest first (only with a finalRefs bound). */
  private readonly finals = new Map<string, ExpiryQueue<string>>();
  private readonly finalRefs: number;

  constructor(opts: MemoryLimitsStoreOptions = {}) {
    this.finalRefs = opts.finalRefs ?? Infinity;
    if (this.finalRefs !== Infinity && (!Number.isSafeInteger(this.finalRefs) || this.finalRefs < 1)) throw new Error('finalRefs must be a positive integer');
  }

  /** Both steps in one synchronous run: atomic, as the Redis script. */
  async admitTask(tenantId: string, taskId: string, limit: number | null, now: number, spend: SpendRequest): Promise<TaskAdmission> {
    const slot = this.take(tenantId, taskId, limit, now);
    return slot === 'full' ? { slot } : { slot, spend: this.reserve(tenantId, taskId, spend.day, spend.milli, spend.limit) };
  }

  private take(tenantId: string, taskId: string, limit: number | null, now: number): AcquireResult {
    let tasks = this.active.get(tenantId);
    if (tasks?.has(taskId)) return 'already';
    if (limit !== null && (tasks?.size ?? 0) >= limit) return 'full';
    if (!tasks) this.active.set(tenantId, (tasks = new Map()));
    tasks.set(taskId, now);
    return 'acquired';
  }

  async releaseTask(tenantId: string, taskId: string): Promise<boolean> {
    const tasks = this.active.get(tenantId);
    if (!tasks?.delete(taskId)) return false;
    if (tasks.size === 0) this.active.delete(tenantId);
    return true;
  }

  async closeTask(tenantId: string, taskId: string, actual: Milli | null): Promise<{ spend: boolean; slot: boolean }> {
    // Both bodies run before either promise is awaited: one synchronous run, as the Redis script.
    const spend = actual === null ? this.cancelSpend(tenantId, taskId) : this.finalizeSpend(tenantId, taskId, actual);
    const slot = this.releaseTask(tenantId, taskId);
    return { spend: await spend, slot: await slot };
  }

  async activeTasks(tenantId: string): Promise<number> {
    return this.active.get(tenantId)?.size ?? 0;
  }

  async reserveSpend(tenantId: string, ref: string, day: string, milli: Milli, limit: Milli | null): Promise<SpendReservation> {
    return this.reserve(tenantId, ref, day, milli, limit);
  }

  private reserve(tenantId: string, ref: string, day: string, milli: Milli, limit: Milli | null): SpendReservation {
    const d = this.day(tenantId, day);
    if (this.find(tenantId, ref)) return { status: 'duplicate', spent: d.total };
    if (limit !== null && d.total + milli > limit) return { status: 'refused', spent: d.total };
    d.refs.set(ref, { amount: milli, final: false });
    d.total += milli;
    return { status: 'reserved', spent: d.total };
  }

  async cancelSpend(tenantId: string, ref: string): Promise<boolean> {
    const found = this.find(tenantId, ref);
    if (!found || found.r.final) return false;
    found.d.total -= found.r.amount;
    found.d.refs.delete(ref);
    return true;
  }

  async finalizeSpend(tenantId: string, ref: string, actual: Milli): Promise<boolean> {
    const found = this.find(tenantId, ref);
    if (!found || found.r.final) return false;
    const kept = Math.min(Math.max(actual, 0), found.r.amount);
    found.d.total -= found.r.amount - kept;
    found.d.refs.set(ref, { amount: kept, final: true });
    if (this.finalRefs !== Infinity) this.keepFinal(tenantId, ref);
    return true;
  }

  /** Queue a finalized ref; the oldest past finalRefs leave their day's records (not its total). */
  private keepFinal(tenantId: string, ref: string): void {
    let q = this.finals.get(tenantId);
    if (!q) this.finals.set(tenantId, (q = new ExpiryQueue<string>(0, systemClock, 'ttlMs', this.finalRefs)));
    q.add(ref);
    q.expire((old) => {
      const found = this.find(tenantId, old);
      if (found?.r.final) found.d.refs.delete(old);
    });
  }

  recordSpend(tenantId: string, day: string, milli: Milli): void {
    this.day(tenantId, day).total += milli;
  }

  spent(tenantId: string, day: string): Milli {
    return this.spend.get(tenantId)?.get(day)?.total ?? 0;
  }

  /** The reservation of `ref` on any retained day. */
  private find(tenantId: string, ref: string): { d: DaySpend; r: SpendRef } | undefined {
    for (const d of this.spend.get(tenantId)?.values() ?? []) {
      const r = d.refs.get(ref);
      if (r) return { d, r };
    }
    return undefined;
  }

  /** The tenant's spend of `day`, created if needed; days older than RETAIN_DAYS before it are dropped whole. */
  private day(tenantId: string, day: string): DaySpend {
    let days = this.spend.get(tenantId);
    if (!days) this.spend.set(tenantId, (days = new Map()));
    let d = days.get(day);
    if (!d) {
      days.set(day, (d = { total: 0, refs: new Map() }));
      // "YYYY-MM-DD" sorts as text.
      const cutoff = new Date(Date.parse(`${day}T00:00:00Z`) - RETAIN_DAYS * 86_400_000).toISOString().slice(0, 10);
      for (const old of days.keys()) if (old < cutoff) days.delete(old);
    }
    return d;
  }
}
