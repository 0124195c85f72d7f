// Keys to forget a fixed time after they were added, or sooner once more than a set number of
// them are held. With one TTL for every key, the order of adding is the order of expiring, so a
// ring of slots read from a moving head is enough: no timers, no sorted structure. Memory adapters
// drain it as they write (the Redis adapter uses key TTLs).
//
// A ring rather than an array pushed at the tail and cut at the head: held keys run to the
// tens of thousands (store.memory_finished_tasks, 50,000), so the arrays are V8 large objects,
// which only a full collection frees. Pushing past an array's capacity copies it into a new one
// 1.5× as large, and cutting the handed-out prefix copied it again: some 3–4 MB of large-object
// garbage per 50,000 finished tasks (docs/performance.md, "Large objects and what a task life
// promotes"). A ring grows (doubles) only while the keys held grow; once their number is steady it
// allocates nothing.
import type { Clock } from '../../util/clock.ts';

export class ExpiryQueue<K> {
  /**
   * Slots of the ring: the held keys from `head`, oldest first, wrapping around; `at` holds when
   * each is to be forgotten, only with a TTL (without one, only the count bound forgets).
   */
  private keys: (K | undefined)[] = new Array(16);
  private at: number[] = [];
  private head = 0;
  private count = 0;
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
    if (ttlMs > 0) this.at = new Array<number>(16).fill(0);
  }

  add(key: K): void {
    if (this.ttlMs === 0 && this.maxKeys === Infinity) return;
    if (this.count === this.keys.length) this.grow();
    const slot = (this.head + this.count) % this.keys.length;
    this.keys[slot] = key;
    if (this.ttlMs > 0) this.at[slot] = this.clock.now() + this.ttlMs;
    this.count++;
  }

  /** Keys held now (added, not yet handed out). */
  get size(): number {
    return this.count;
  }

  /** Hands every key now due, then the oldest past `maxKeys`, to `forget`, oldest first. */
  expire(forget: (key: K) => void): void {
    if (this.count === 0) return;
    const { keys, at } = this;
    const now = this.ttlMs > 0 ? this.clock.now() : 0;
    while (this.count > 0 && (this.count > this.maxKeys || (this.ttlMs > 0 && at[this.head]! <= now))) {
      const key = keys[this.head]!;
      keys[this.head] = undefined; // the ring does not keep a handed-out key alive
      this.head = (this.head + 1) % keys.length;
      this.count--;
      forget(key);
    }
  }

  /** Twice the slots, the held keys moved to the front in order. */
  private grow(): void {
    const n = this.keys.length;
    const keys = new Array<K | undefined>(n * 2);
    const at = this.ttlMs > 0 ? new Array<number>(n * 2).fill(0) : this.at;
    for (let i = 0; i < this.count; i++) {
      const slot = (this.head + i) % n;
      keys[i] = this.keys[slot];
      if (this.ttlMs > 0) at[i] = this.at[slot]!;
    }
    this.keys = keys;
    this.at = at;
    this.head = 0;
  }
}
