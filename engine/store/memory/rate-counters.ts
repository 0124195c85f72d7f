// In-memory request counters for engine/limits/rate.ts: one Map of counts per window number.
// Windows are aligned and only the current one is ever asked for, so when a newer window opens
// the older maps are dropped whole: no timer or expiry record per counter (rate-limiter-flexible's
// RateLimiterMemory keeps a timer per key and answers each call with a promise, which cost a
// proxied request about 5 µs across its nine counters).
import type { RateCount, RateCounters } from '../../limits/store.ts';

/** The counters of one process: a MemoryWindowCounters per counter name, answered at once. */
export function memoryRateCounters(): RateCounters {
  const byName = new Map<string, MemoryWindowCounters>();
  const of = (name: string): MemoryWindowCounters => {
    let c = byName.get(name);
    if (!c) byName.set(name, (c = new MemoryWindowCounters()));
    return c;
  };
  return {
    add: (counts: readonly RateCount[]): number[] => {
      const out: number[] = new Array(counts.length);
      for (let i = 0; i < counts.length; i++) {
        const c = counts[i]!;
        out[i] = of(c.name).add(c.id, c.n);
      }
      return out;
    },
    remove: (counts: readonly RateCount[]): void => {
      for (const c of counts) of(c.name).remove(c.id, c.n);
    },
  };
}

/** The counts of one counter name, per window number. */
export class MemoryWindowCounters {
  private readonly windows = new Map<number, Map<string, number>>();
  private latest = -Infinity;
  /** The latest window's counts: nearly every request counts in it, without a lookup by window number. */
  private latestCounts: Map<string, number> | undefined;

  add(id: string, n: number): number {
    let counts = n === this.latest ? this.latestCounts : this.windows.get(n);
    if (!counts) {
      this.windows.set(n, (counts = new Map()));
      if (n > this.latest) {
        this.latest = n;
        this.latestCounts = counts;
        // The previous window stays for requests counted just before the turn.
        for (const old of this.windows.keys()) if (old < n - 1) this.windows.delete(old);
      }
    }
    const count = (counts.get(id) ?? 0) + 1;
    counts.set(id, count);
    return count;
  }

  remove(id: string, n: number): void {
    const counts = this.windows.get(n);
    const count = counts?.get(id);
    if (count === undefined) return;
    if (count > 1) counts!.set(id, count - 1);
    else counts!.delete(id);
  }
}
