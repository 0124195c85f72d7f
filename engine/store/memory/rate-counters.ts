// In-memory request counters for engine/limits/rate.ts: one Map of counts per window number.
// Windows are aligned and only the current one is ever asked for, so when a newer window opens
// the older maps are dropped whole: no timer or expiry record per counter (rate-limiter-flexible's
// RateLimiterMemory keeps a timer per key and answers each call with a promise, which cost a
// proxied request about 5 µs across its nine counters).
import type { RateCountersFactory, WindowCounters } from '../../limits/store.ts';

export const memoryRateCounters: RateCountersFactory = () => new MemoryWindowCounters();

export class MemoryWindowCounters implements WindowCounters {
  private readonly windows = new Map<number, Map<string, number>>();
  private latest = -Infinity;

  add(id: string, n: number): number {
    let counts = this.windows.get(n);
    if (!counts) {
      this.windows.set(n, (counts = new Map()));
      if (n > this.latest) {
        this.latest = n;
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
