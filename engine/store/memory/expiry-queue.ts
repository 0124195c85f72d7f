// Keys to forget a fixed time after they were added. With one TTL for every key, the order of
// adding is the order of expiring, so a plain array read from a moving head is enough: no timers,
// no sorted structure. Memory adapters drain it as they write (the Redis adapter uses key TTLs).
import type { Clock } from '../../util/clock.ts';

export class ExpiryQueue<K> {
  /** [key, forget at], oldest first; `head` is the first not yet handed out. */
  private items: [K, number][] = [];
  private head = 0;
  private readonly ttlMs: number;
  private readonly clock: Clock;

  /** `ttlMs` 0: nothing is ever forgotten (add is a no-op); `option` names it in the error. */
  constructor(ttlMs: number, clock: Clock, option = 'ttlMs') {
    if (!Number.isSafeInteger(ttlMs) || ttlMs < 0) throw new Error(`${option} must be a non-negative integer`);
    this.ttlMs = ttlMs;
    this.clock = clock;
  }

  add(key: K): void {
    if (this.ttlMs > 0) this.items.push([key, this.clock.now() + this.ttlMs]);
  }

  /** Hands every key now due to `forget`, oldest first. */
  expire(forget: (key: K) => void): void {
    const q = this.items;
    if (this.head === q.length) return;
    const now = this.clock.now();
    while (this.head < q.length && q[this.head]![1] <= now) forget(q[this.head++]![0]);
    // Drop the handed-out prefix once it is most of the array (amortised O(1) per key).
    if (this.head > 1024 && this.head * 2 > q.length) {
      this.items = q.slice(this.head);
      this.head = 0;
    }
  }
}
