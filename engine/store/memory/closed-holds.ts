// One wallet's closed holds on the memory store, remembered until the retention passes or the
// wallet has `cap` newer ones (MemoryWalletStore.remember), oldest forgotten first: a ring of the
// hold objects in closing order, with when each is forgotten. A hold of a new ref
// (HoldOptions.newRef: a chat's) is kept here alone once closed (its ref is never held again);
// other closed holds (tasks', charges') are also in the wallet's Map, because they may be held
// again, and this ring points at them to forget them in turn. Kept as bytes off the V8 heap
// instead, a chat's closed hold promoted less but no user-visible figure moved by 10%
// (docs/performance.md, 2026-11-27 14:30–16:00): plain objects are the simpler form.
import type { HoldRecord } from '../../billing/store.ts';

/** A hold as kept: `newRef` when it was taken as one (HoldOptions.newRef); callers get a HoldRecord copy (copyHold). */
export type KeptHold = HoldRecord & { newRef?: true };

/** Closed holds looked at by a repeated hold of a new ref ("closed a moment ago"). */
const RECENT = 16;
const FIRST_SLOTS = 8;

export class ClosedHolds {
  private readonly cap: number;
  /** Slot `k` (k from `head`, `count` of them, modulo the arrays' length) holds a hold and when it is forgotten. */
  private holds: (KeptHold | undefined)[] = new Array<KeptHold | undefined>(FIRST_SLOTS).fill(undefined);
  private until = new Float64Array(FIRST_SLOTS);
  private head = 0;
  count = 0;

  constructor(cap: number) {
    this.cap = cap;
  }

  /** Whether the oldest must be forgotten before another is remembered: `cap` kept, or its time passed (ttl > 0). */
  oldestDue(now: number, ttl: number): boolean {
    return this.count > 0 && (this.count === this.cap || (ttl > 0 && this.until[this.head]! <= now));
  }

  /** Forgets the oldest; answers it unless it is a new ref's (the caller drops the others from the Map). */
  forgetOldest(): KeptHold | undefined {
    const k = this.head;
    const hold = this.holds[k]!;
    this.holds[k] = undefined;
    this.head = k + 1 === this.holds.length ? 0 : k + 1;
    this.count--;
    return hold.newRef ? undefined : hold;
  }

  /** Remembers `hold` (closed) until `until`. */
  add(hold: KeptHold, until: number): void {
    if (this.count === this.holds.length) this.growSlots();
    const k = this.slot(this.count);
    this.holds[k] = hold;
    this.until[k] = until;
    this.count++;
  }

  /** A hold of a new ref among the newest closed ones (a repeat of a chat's hold a moment after it closed). */
  recentlyClosed(ref: string): KeptHold | undefined {
    for (let j = 1; j <= this.count && j <= RECENT; j++) {
      const h = this.holds[this.slot(this.count - j)]!;
      if (h.ref === ref) return h;
    }
    return undefined;
  }

  /** The newest remembered new-ref hold `ref` (a repeated settle or release: a scan, newest first). */
  find(ref: string): KeptHold | undefined {
    for (let j = 1; j <= this.count; j++) {
      const h = this.holds[this.slot(this.count - j)]!;
      if (h.ref === ref && h.newRef) return h;
    }
    return undefined;
  }

  /** Every hold remembered, in closing order. */
  all(): KeptHold[] {
    const out: KeptHold[] = [];
    for (let i = 0; i < this.count; i++) out.push(this.holds[this.slot(i)]!);
    return out;
  }

  /** The slot of the i-th oldest. */
  private slot(i: number): number {
    const k = this.head + i;
    return k >= this.holds.length ? k - this.holds.length : k;
  }

  private growSlots(): void {
    const size = Math.min(this.holds.length * 2, Math.max(this.cap, FIRST_SLOTS));
    const holds = new Array<KeptHold | undefined>(size).fill(undefined);
    const until = new Float64Array(size);
    for (let i = 0; i < this.count; i++) {
      holds[i] = this.holds[this.slot(i)];
      until[i] = this.until[this.slot(i)]!;
    }
    this.holds = holds;
    this.until = until;
    this.head = 0;
  }
}

/** A caller's copy of a kept hold (never the `newRef` mark). */
export function copyHold(h: KeptHold): HoldRecord {
  return { ref: h.ref, amount: h.amount, state: h.state, settled: h.settled, released: h.released, at: h.at, charge: h.charge };
}
