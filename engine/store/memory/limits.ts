// In-memory LimitsStore: every method reads and writes synchronously, so each is atomic.
import type { Milli } from '../../billing/money.ts';
import type { AcquireResult, LimitsStore, SpendReservation } from '../../limits/store.ts';
import { ShardedMap } from './sharded-map.ts';

interface SpendRef {
  day: string;
  amount: Milli;
  final: boolean;
}

interface TenantSpend {
  /** day -> total */
  days: Map<string, Milli>;
  /** ref -> reservation; kept for RETAIN_DAYS so a late duplicate is still recognised. */
  refs: ShardedMap<SpendRef>;
}

const RETAIN_DAYS = 3;

export class MemoryLimitsStore implements LimitsStore {
  private readonly active = new Map<string, Map<string, number>>();
  private readonly spend = new Map<string, TenantSpend>();

  async acquireTask(tenantId: string, taskId: string, limit: number | null, now: number): Promise<AcquireResult> {
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

  async activeTasks(tenantId: string): Promise<number> {
    return this.active.get(tenantId)?.size ?? 0;
  }

  async reserveSpend(tenantId: string, ref: string, day: string, milli: Milli, limit: Milli | null): Promise<SpendReservation> {
    const s = this.tenantSpend(tenantId, day);
    const spent = s.days.get(day) ?? 0;
    if (s.refs.has(ref)) return { status: 'duplicate', spent };
    if (limit !== null && spent + milli > limit) return { status: 'refused', spent };
    s.refs.set(ref, { day, amount: milli, final: false });
    s.days.set(day, spent + milli);
    return { status: 'reserved', spent: spent + milli };
  }

  async cancelSpend(tenantId: string, ref: string): Promise<boolean> {
    const s = this.spend.get(tenantId);
    const r = s?.refs.get(ref);
    if (!s || !r || r.final) return false;
    s.days.set(r.day, (s.days.get(r.day) ?? 0) - r.amount);
    s.refs.delete(ref);
    return true;
  }

  async finalizeSpend(tenantId: string, ref: string, actual: Milli): Promise<boolean> {
    const s = this.spend.get(tenantId);
    const r = s?.refs.get(ref);
    if (!s || !r || r.final) return false;
    const kept = Math.min(Math.max(actual, 0), r.amount);
    s.days.set(r.day, (s.days.get(r.day) ?? 0) - (r.amount - kept));
    r.amount = kept;
    r.final = true;
    return true;
  }

  async recordSpend(tenantId: string, ref: string, day: string, milli: Milli): Promise<boolean> {
    const s = this.tenantSpend(tenantId, day);
    if (s.refs.has(ref)) return false;
    s.refs.set(ref, { day, amount: milli, final: true });
    s.days.set(day, (s.days.get(day) ?? 0) + milli);
    return true;
  }

  async spent(tenantId: string, day: string): Promise<Milli> {
    return this.spend.get(tenantId)?.days.get(day) ?? 0;
  }

  private tenantSpend(tenantId: string, today: string): TenantSpend {
    let s = this.spend.get(tenantId);
    if (!s) this.spend.set(tenantId, (s = { days: new Map(), refs: new ShardedMap() }));
    if (s.days.size > RETAIN_DAYS) {
      // Drop days (and their refs) older than RETAIN_DAYS before today. "YYYY-MM-DD" sorts as text.
      const cutoff = new Date(Date.parse(`${today}T00:00:00Z`) - RETAIN_DAYS * 86_400_000).toISOString().slice(0, 10);
      for (const d of s.days.keys()) if (d < cutoff) s.days.delete(d);
      for (const [ref, r] of s.refs.entries()) if (r.day < cutoff) s.refs.delete(ref); // deleting while iterating a Map is safe
    }
    return s;
  }
}
