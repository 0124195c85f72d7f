// The memory wallet store's ledger: append-only entries kept off the JS heap, as JSON text in
// 1 MiB buffers, with their positions in typed arrays. A ledger grows by two entries per
// billed request and every entry lives forever; as objects on the heap they survived every
// young-generation collection and made each one several times slower (a 4 ms pause every few
// hundred requests under chat load, against under 1 ms without them). Reads (ledger pages,
// audits) are rare and parse the entries they return.
import type { LedgerEntry } from '../../billing/store.ts';

const CHUNK_BYTES = 1 << 20;

export class LedgerLog {
  private readonly chunks: Buffer[] = [];
  private used = 0; // bytes used in the last chunk
  private chunkOf = new Uint32Array(1024);
  private offsetOf = new Uint32Array(1024);
  private lengthOf = new Uint32Array(1024);
  length = 0;

  push(entry: LedgerEntry): void {
    const text = JSON.stringify(entry);
    const bytes = Buffer.byteLength(text);
    let chunk = this.chunks.at(-1);
    if (!chunk || this.used + bytes > chunk.length) {
      chunk = Buffer.allocUnsafeSlow(Math.max(CHUNK_BYTES, bytes));
      this.chunks.push(chunk);
      this.used = 0;
    }
    chunk.write(text, this.used, 'utf8');
    if (this.length === this.chunkOf.length) this.grow();
    this.chunkOf[this.length] = this.chunks.length - 1;
    this.offsetOf[this.length] = this.used;
    this.lengthOf[this.length] = bytes;
    this.used += bytes;
    this.length++;
  }

  /** Entries [start, end) in order, as fresh objects. */
  slice(start: number, end: number = this.length): LedgerEntry[] {
    const out: LedgerEntry[] = [];
    for (let i = Math.max(0, start); i < Math.min(end, this.length); i++) {
      const off = this.offsetOf[i]!;
      out.push(JSON.parse(this.chunks[this.chunkOf[i]!]!.toString('utf8', off, off + this.lengthOf[i]!)) as LedgerEntry);
    }
    return out;
  }

  private grow(): void {
    const bigger = (a: Uint32Array) => {
      const b = new Uint32Array(a.length * 2);
      b.set(a);
      return b;
    };
    this.chunkOf = bigger(this.chunkOf);
    this.offsetOf = bigger(this.offsetOf);
    this.lengthOf = bigger(this.lengthOf);
  }
}
