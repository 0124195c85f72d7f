// One wallet's closed holds on the memory store, remembered until the retention passes or the
// wallet has `cap` newer ones (MemoryWalletStore.remember), oldest forgotten first. A hold of a
// new ref (HoldOptions.newRef: a chat's) is kept here alone, as its JSON record in one growing
// buffer outside the V8 heap: as objects, 10,000 closed chat holds (with their refs and times)
// each lived through some 10,000 later chats, were promoted and died in the old generation (the
// sync chat's scavenge pauses; docs/performance.md). Other closed holds (tasks', charges') stay
// in the wallet's Map of holds as objects, because they may be held again; this ring points at
// them, to forget them in turn. The 16 newest are also kept as objects: a repeated hold of a new
// ref looks at them alone ("closed a moment ago"), once per chat.
import type { HoldRecord } from '../../billing/store.ts';
import { regrown } from './ledger-lines.ts';

/** A hold as kept: `newRef` when it was taken as one (HoldOptions.newRef); callers get a HoldRecord copy (copyHold). */
export type KeptHold = HoldRecord & { newRef?: true };

/** Closed holds looked at by a repeated hold of a new ref. */
const RECENT = 16;
const FIRST_BYTES = 1024;
const FIRST_SLOTS = 8;

export class ClosedHolds {
  private readonly cap: number;
  /** FIFO of slots in closing order: slot `k` (k from `head`, `count` of them, modulo the arrays' length) forgets at until[k]. */
  private until = new Float64Array(FIRST_SLOTS);
  /** Where a new-ref slot's record ends in `bytes` (it starts where the previous one ended); -1: an object slot. */
  private ends = new Float64Array(FIRST_SLOTS);
  /** The object of an object slot (a hold that is also in the wallet's Map). */
  private objects: (KeptHold | undefined)[] = [];
  private head = 0;
  count = 0;
  /** The records of new-ref slots, oldest first, from `start`. */
  private bytes: Buffer = Buffer.alloc(0);
  private start = 0;
  private used = 0;
  /** The newest closed holds, as objects (any kind), a ring of RECENT. */
  private readonly recent: (KeptHold | undefined)[] = new Array<KeptHold | undefined>(RECENT).fill(undefined);
  private recentAt = 0;

  constructor(cap: number) {
    this.cap = cap;
  }

  /** Whether the oldest must be forgotten before another is remembered: `cap` kept, or its time passed (ttl > 0). */
  oldestDue(now: number, ttl: number): boolean {
    return this.count > 0 && (this.count === this.cap || (ttl > 0 && this.until[this.head]! <= now));
  }

  /** Forgets the oldest; answers its object when it is an object slot (the caller drops it from the Map). */
  forgetOldest(): KeptHold | undefined {
    const k = this.head;
    const obj = this.objects[k];
    if (obj) this.objects[k] = undefined;
    else this.start = this.ends[k]!;
    this.head = k + 1 === this.until.length ? 0 : k + 1;
    if (--this.count === 0 || this.start === this.used) this.start = this.used = 0; // empty again: reuse the buffer from its start
    return obj;
  }

  /** Remembers `hold` (closed) until `until`: as its record when a new ref's, else as the object. */
  add(hold: KeptHold, until: number): void {
    if (this.count === this.until.length) this.growSlots();
    let k = this.head + this.count;
    if (k >= this.until.length) k -= this.until.length;
    this.until[k] = until;
    if (hold.newRef) {
      const record = JSON.stringify(hold); // its fields in HoldRecord's order from hold(), `ref` first, then `"newRef":true`
      const most = this.used + record.length * 3 + 1;
      if (most > this.bytes.length) this.compactOrGrow(Math.max(most, FIRST_BYTES));
      this.used += this.bytes.write(record, this.used);
      this.bytes[this.used++] = 0x0a; // one record a line: a '\n' is never raw inside JSON
      this.ends[k] = this.used;
    } else {
      this.objects[k] = hold;
      this.ends[k] = -1;
    }
    this.count++;
    this.recent[this.recentAt] = hold;
    this.recentAt = (this.recentAt + 1) % RECENT;
  }

  /** A hold of a new ref among the newest closed ones (a repeat of a chat's hold a moment after it closed). */
  recentlyClosed(ref: string): KeptHold | undefined {
    // The newest min(count, RECENT) are remembered: forgetting takes the oldest first.
    for (let j = 1; j <= this.count && j <= RECENT; j++) {
      const h = this.recent[(this.recentAt - j + RECENT) % RECENT];
      if (h?.ref === ref) return h;
    }
    return undefined;
  }

  /** The newest remembered new-ref hold `ref` (a repeated settle or release: a scan of the records' bytes). */
  find(ref: string): KeptHold | undefined {
    const recent = this.recentlyClosed(ref);
    if (recent?.newRef) return recent;
    const at = this.used > this.start ? this.bytes.lastIndexOf(`{"ref":${JSON.stringify(ref)},`, this.used - 1) : -1;
    if (at < this.start) return undefined;
    // A raw '{"ref":' only starts a record (a '"' inside a JSON string is escaped), and a record ends at its line's end.
    return JSON.parse(this.bytes.toString('utf8', at, this.bytes.indexOf(0x0a, at))) as KeptHold;
  }

  /** Every hold remembered, in closing order (copies of the records, the objects themselves). */
  all(): KeptHold[] {
    const out: KeptHold[] = [];
    let from = this.start;
    for (let i = 0, k = this.head; i < this.count; i++, k = k + 1 === this.until.length ? 0 : k + 1) {
      const obj = this.objects[k];
      if (obj) {
        out.push(obj);
        continue;
      }
      const end = this.ends[k]!;
      out.push(JSON.parse(this.bytes.toString('utf8', from, end)) as KeptHold);
      from = end;
    }
    return out;
  }

  /** Room for `most - used` more bytes: the records moved to the buffer's start when that makes it, else a larger buffer. */
  private compactOrGrow(most: number): void {
    const live = this.used - this.start;
    if (this.start > 0 && live + (most - this.used) <= this.bytes.length / 2) {
      this.bytes.copy(this.bytes, 0, this.start, this.used);
      this.shiftEnds(this.start);
    } else {
      this.bytes = regrown(this.bytes.subarray(this.start), live, most - this.start);
      this.shiftEnds(this.start);
    }
    this.used = live;
    this.start = 0;
  }

  private shiftEnds(by: number): void {
    for (let i = 0, k = this.head; i < this.count; i++, k = k + 1 === this.until.length ? 0 : k + 1) {
      if (this.ends[k]! >= 0) this.ends[k] = this.ends[k]! - by;
    }
  }

  private growSlots(): void {
    const size = Math.min(this.until.length * 2, Math.max(this.cap, FIRST_SLOTS));
    const until = new Float64Array(size);
    const ends = new Float64Array(size);
    const objects: (KeptHold | undefined)[] = [];
    for (let i = 0, k = this.head; i < this.count; i++, k = k + 1 === this.until.length ? 0 : k + 1) {
      until[i] = this.until[k]!;
      ends[i] = this.ends[k]!;
      objects[i] = this.objects[k];
    }
    this.until = until;
    this.ends = ends;
    this.objects = objects;
    this.head = 0;
  }
}

/** A caller's copy of a kept hold (never the `newRef` mark). */
export function copyHold(h: KeptHold): HoldRecord {
  return { ref: h.ref, amount: h.amount, state: h.state, settled: h.settled, released: h.released, at: h.at, charge: h.charge };
}
