// One wallet's kept ledger lines on the memory store, as the bytes the archive writes: each line
// is serialised once when it is written (the NDJSON line of engine/billing/ledger-archive.ts) and
// appended to one growing buffer, outside the V8 heap. Kept as objects, a sync chat's three lines
// (and their ids, times, refs and notes) lived through some 3,000 later chats on a busy wallet:
// copied by one or two scavenges, promoted, and dropped from the old generation a second later,
// which set the sync chat's scavenge pauses and its p99 (docs/performance.md). As bytes they are
// one buffer the collector never traces. Beside them, per line, only what the hot paths need
// unparsed: its kind and amount (folded into the opening when the archive trims), and where each
// UTC day starts (a segment holds one day). The rare readers (ledger pages, snapshots, the
// archive's checks) parse the lines they read.
import type { LedgerEntry, LedgerKind } from '../../billing/store.ts';

const KINDS: readonly LedgerKind[] = ['topup', 'hold', 'settle', 'release', 'adjustment'];
const KIND_CODE: Record<LedgerKind, number> = { topup: 0, hold: 1, settle: 2, release: 3, adjustment: 4 };
/** A wallet's first buffer, at its first line (grown by doubling): most wallets keep few lines. */
const FIRST_BYTES = 1024;
const FIRST_LINES = 8;
/** Dropped lines past which the kept ones move to the front (or to smaller arrays, after a burst the archive caught up with). */
const COMPACT_AFTER = 1024;

export class LedgerLines {
  /** The lines' bytes; line `i` (an index into the arrays below) is bytes[starts[i], end(i)). */
  private bytes: Buffer = EMPTY;
  private used = 0;
  private starts = new Float64Array(0);
  private amounts = new Float64Array(0);
  private kinds = new Uint8Array(0);
  /** Indices of the first line kept and past the last; the seq of line `first` is `firstSeq`. */
  private first = 0;
  private end = 0;
  firstSeq = 1;
  /** Seqs at which a new UTC day starts (the first 10 characters of `at` change), ascending; and the last day seen. */
  private dayStarts: number[] = [];
  private lastDay = '';

  /** Lines kept. */
  get length(): number {
    return this.end - this.first;
  }

  /** Seq of the last line kept (firstSeq - 1 when none). */
  get lastSeq(): number {
    return this.firstSeq + this.length - 1;
  }

  /** Bytes held for the lines (their buffer's size): the memory a wallet's lines take, for tests and audits. */
  get capacity(): number {
    return this.bytes.length + this.starts.length * 17;
  }

  /** Appends `e` (its seq must be lastSeq + 1) as its JSON line. */
  push(e: LedgerEntry): void {
    const line = JSON.stringify(e);
    const most = this.used + line.length * 3 + 1; // UTF-8: 3 bytes a UTF-16 unit at most, and the '\n'
    if (most > this.bytes.length) this.bytes = regrown(this.bytes, this.used, Math.max(most, FIRST_BYTES));
    if (this.end === this.starts.length) this.growLines();
    const i = this.end++;
    this.starts[i] = this.used;
    this.amounts[i] = e.amount;
    this.kinds[i] = KIND_CODE[e.kind];
    this.used += this.bytes.write(line, this.used);
    this.bytes[this.used++] = 0x0a;
    // An ISO time's first 10 characters are its UTC day; a line of another day starts a run.
    if (!e.at.startsWith(this.lastDay) || this.lastDay === '') {
      this.lastDay = e.at.slice(0, 10);
      this.dayStarts.push(e.seq);
    }
  }

  /** The line with this seq (kept), parsed: a new object. */
  get(seq: number): LedgerEntry {
    const i = this.first + seq - this.firstSeq;
    return JSON.parse(this.bytes.toString('utf8', this.starts[i]!, this.lineEnd(i) - 1)) as LedgerEntry;
  }

  /** Lines from seq `from` up to (not including) `to`, parsed, oldest first. */
  slice(from: number, to: number): LedgerEntry[] {
    const out: LedgerEntry[] = [];
    for (let seq = from; seq < to; seq++) out.push(this.get(seq));
    return out;
  }

  kindOf(seq: number): LedgerKind {
    return KINDS[this.kinds[this.first + seq - this.firstSeq]!]!;
  }

  amountOf(seq: number): number {
    return this.amounts[this.first + seq - this.firstSeq]!;
  }

  /** The first seq after `seq` on another UTC day (Infinity: none kept). */
  nextDay(seq: number): number {
    for (const d of this.dayStarts) if (d > seq) return d;
    return Infinity;
  }

  /** The NDJSON bytes of lines from..to (seqs, inclusive): a copy, the caller's to keep while lines come and go. */
  ndjson(from: number, to: number): Buffer {
    const a = this.first + from - this.firstSeq;
    const b = this.first + to - this.firstSeq;
    return Buffer.from(this.bytes.subarray(this.starts[a]!, this.lineEnd(b)));
  }

  /** Drops the oldest `n` lines (archived); the arrays and bytes are compacted once the dropped prefix is most of them. */
  dropOldest(n: number): void {
    this.first += n;
    this.firstSeq += n;
    while (this.dayStarts.length > 1 && this.dayStarts[1]! <= this.firstSeq) this.dayStarts.shift();
    if (this.first > COMPACT_AFTER && this.first * 2 > this.end) this.compact();
  }

  private lineEnd(i: number): number {
    return i + 1 < this.end ? this.starts[i + 1]! : this.used;
  }

  /**
   * Moves the kept lines to the front: in place (the bytes handed out by ndjson are copies, so
   * nothing points into this buffer), or into buffers a quarter the size when the kept lines fill
   * less than an eighth (a burst the archive lagged behind grew them: its memory goes back).
   */
  private compact(): void {
    const from = this.first === this.end ? this.used : this.starts[this.first]!;
    const live = this.used - from;
    const n = this.end - this.first;
    if (this.bytes.length > 8 * Math.max(live, FIRST_BYTES)) {
      const bytes = Buffer.allocUnsafe(Math.floor(this.bytes.length / 4));
      this.bytes.copy(bytes, 0, from, this.used);
      this.bytes = bytes;
    } else this.bytes.copy(this.bytes, 0, from, this.used);
    if (this.starts.length > 8 * Math.max(n, FIRST_LINES)) this.resizeLines(Math.floor(this.starts.length / 4), this.first, this.end);
    else {
      this.starts.copyWithin(0, this.first, this.end);
      this.amounts.copyWithin(0, this.first, this.end);
      this.kinds.copyWithin(0, this.first, this.end);
    }
    for (let i = 0; i < n; i++) this.starts[i] = this.starts[i]! - from;
    this.used = live;
    this.first = 0;
    this.end = n;
  }

  private growLines(): void {
    this.resizeLines(Math.max(this.starts.length * 2, FIRST_LINES), 0, this.end);
  }

  /** New arrays of `size` lines holding lines from..end of the old ones from index 0. */
  private resizeLines(size: number, from: number, end: number): void {
    const starts = new Float64Array(size);
    const amounts = new Float64Array(size);
    const kinds = new Uint8Array(size);
    starts.set(this.starts.subarray(from, end));
    amounts.set(this.amounts.subarray(from, end));
    kinds.set(this.kinds.subarray(from, end));
    this.starts = starts;
    this.amounts = amounts;
    this.kinds = kinds;
  }
}

const EMPTY = Buffer.alloc(0);

/** A buffer of at least `most` bytes holding the first `used` of `bytes`. */
export function regrown(bytes: Buffer, used: number, most: number): Buffer {
  const grown = Buffer.allocUnsafe(Math.max(bytes.length * 2, most));
  bytes.copy(grown, 0, 0, used);
  return grown;
}
