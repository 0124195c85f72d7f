// Keys to forget a fixed time after they were added, or sooner once more than a set number of
// them are held. With one TTL for every key, the order of adding is the order of expiring, so a
// plain array read from a moving head is enough: no timers, no sorted structure. Memory adapters
// drain it as they write (the Redis adapter uses key TTLs).
import type { Clock } from '../../util/clock.ts';

export class ExpiryQueue<K> {
  /**
   * Keys oldest first, and when each is to be forgotten: two flat arrays rather than a [key, at]
   * pair per key (a pair cost about 50 bytes more per retained task); `head` is the first key not
   * yet handed out.
   */
  private keys: K[] = [];
  private at: number[] = [];
  private head = 0;
  private readonly ttlMs: number;
  private readonly maxKeys: number;
  private readonly clock: Clock;

  /**
   * `ttlMs` 0: forgotten for age never; `maxKeys` (default unbounded): past that many, the oldest
   * are forgotten first. With neither, add is a no-op. `option` names the TTL in the error.
   */
  constructor(ttlMs: number, clock: Clock, option = 'ttlMs', maxKeys = Infinity) {
    if (!Number.isSafeInteger(ttlMs) || ttlMs < 0) throw new Error(`${option} must be a non-negative integer`);
    if (maxKeys !== Infinity && (!Number.isSafeInteger(maxKeys) || maxKeys < 1)) throw new Error('maxKeys must be a positive integer');
    this.ttlMs = ttlMs;
    this.maxKeys = maxKeys;
    this.clock = clock;
  }

  add(key: K): void {
    if (this.ttlMs === 0 && this.maxKeys === Infinity) return;
    this.keys.push(key);
    this.at.push(this.ttlMs > 0 ? this.clock.now() + this.ttlMs : Infinity);
  }

  /** Keys held now (added, not yet handed out). */
  get size(): number {
    return this.keys.length - this.head;
  }

  /** Hands every key now due, then the oldest past `maxKeys`, to `forget`, oldest first. */
  expire(forget: (key: K) => void): void {
    const { keys, at } = this;
    if (this.head === keys.length) return;
    const now = this.clock.now();
    while (this.head < keys.length && (at[this.head]! <= now || keys.length - this.head > this.maxKeys)) forget(keys[this.head++]!);
    // Drop the handed-out prefix once it is most of the arrays (amortised O(1) per key).
    if (this.head > 1024 && this.head * 2 > keys.length) {
      this.keys = keys.slice(this.head);
      this.at = at.slice(this.head);
      this.head = 0;
    }
  }
}
