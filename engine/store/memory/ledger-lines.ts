// One wallet's kept ledger lines on the memory store, oldest first, as the entries themselves
// (never changed once written: readers get copies), with the seqs where each UTC day starts (a
// segment holds one day). Kept as their NDJSON bytes off the V8 heap instead, a sync chat
// promoted less but no user-visible figure moved by 10% (docs/performance.md, 2026-11-27
// 14:30–16:00): plain objects are the simpler form.
import type { LedgerEntry, LedgerKind } from '../../billing/store.ts';

/** Dropped lines past which the kept ones move to the front of the array. */
const COMPACT_AFTER = 1024;

export class LedgerLines {
  private entries: LedgerEntry[] = [];
  /** Index of the first line kept; its seq is `firstSeq`. */
  private first = 0;
  firstSeq = 1;
  /** Seqs at which a new UTC day starts (the first 10 characters of `at` change), ascending; and the last day seen. */
  private dayStarts: number[] = [];
  private lastDay = '';

  /** Lines kept. */
  get length(): number {
    return this.entries.length - this.first;
  }

  /** Seq of the last line kept (firstSeq - 1 when none). */
  get lastSeq(): number {
    return this.firstSeq + this.length - 1;
  }

  /** Appends `e` (its seq must be lastSeq + 1), kept as it is: the caller hands it over. */
  push(e: LedgerEntry): void {
    this.entries.push(e);
    // An ISO time's first 10 characters are its UTC day; a line of another day starts a run.
    if (!e.at.startsWith(this.lastDay) || this.lastDay === '') {
      this.lastDay = e.at.slice(0, 10);
      this.dayStarts.push(e.seq);
    }
  }

  /** The line with this seq (kept): a copy. */
  get(seq: number): LedgerEntry {
    return { ...this.at(seq) };
  }

  /** Lines from seq `from` up to (not including) `to`, copies, oldest first. */
  slice(from: number, to: number): LedgerEntry[] {
    const out: LedgerEntry[] = [];
    for (let seq = from; seq < to; seq++) out.push(this.get(seq));
    return out;
  }

  kindOf(seq: number): LedgerKind {
    return this.at(seq).kind;
  }

  amountOf(seq: number): number {
    return this.at(seq).amount;
  }

  /** The first seq after `seq` on another UTC day (Infinity: none kept). */
  nextDay(seq: number): number {
    for (const d of this.dayStarts) if (d > seq) return d;
    return Infinity;
  }

  /** The kept lines from..to (seqs, inclusive) themselves, read-only: entries are never changed. */
  range(from: number, to: number): LedgerEntry[] {
    return this.entries.slice(this.first + from - this.firstSeq, this.first + to - this.firstSeq + 1);
  }

  /** Drops the oldest `n` lines (archived); the array is compacted once the dropped prefix is most of it. */
  dropOldest(n: number): void {
    this.first += n;
    this.firstSeq += n;
    while (this.dayStarts.length > 1 && this.dayStarts[1]! <= this.firstSeq) this.dayStarts.shift();
    if (this.first > COMPACT_AFTER && this.first * 2 > this.entries.length) {
      this.entries = this.entries.slice(this.first);
      this.first = 0;
    }
  }

  private at(seq: number): LedgerEntry {
    return this.entries[this.first + seq - this.firstSeq]!;
  }
}
