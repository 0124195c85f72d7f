// An append-only log of JSON values kept off the JS heap: JSON text in byte chunks, each value's
// place (chunk, offset, length) in typed-array pages. Used for the memory wallet ledger and, via
// OffHeapMap, for the records kept per billed request. Those records live for days and grow by
// one or two per request; as heap objects they survived every young-generation collection and
// made each one several times slower (a 4 ms pause every few hundred requests under chat load,
// against under 1 ms without them), and every old-generation marking cycle longer. Reads are
// rare (ledger pages, audits, duplicate requests) and parse the values they return.
// Sizes start small and grow: a tenant with three entries costs a few KiB, not megabytes. The
// bytes come from shared slabs (slabs.ts), so growth allocates no new memory most of the time.
// Index pages are never copied past PAGE entries: a doubling array would pause the event loop
// for tens of milliseconds once it held millions of positions.
import { slabBytes, slabUint32 } from './slabs.ts';

const FIRST_CHUNK = 4 << 10;
const MAX_CHUNK = 1 << 20;
const PAGE_BITS = 12;
const PAGE = 1 << PAGE_BITS;
const FIRST_PAGE = 16;

export class JsonLog<T> {
  private readonly chunks: Buffer[] = [];
  private used = 0; // bytes used in the last chunk
  /** Per value, in pages of PAGE (the first page grows to PAGE by doubling): chunk, offset, byte length. */
  private readonly pages: Uint32Array[] = [];
  length = 0;

  /** Appends `value`; returns its index. */
  push(value: T): number {
    const text = JSON.stringify(value);
    let chunk = this.chunks.at(-1);
    let bytes: number;
    // Room for the worst case (3 bytes per UTF-16 unit): write at once, no separate length scan.
    if (chunk && this.used + text.length * 3 <= chunk.length) bytes = chunk.write(text, this.used, 'utf8');
    else {
      bytes = Buffer.byteLength(text);
      if (!chunk || this.used + bytes > chunk.length) {
        chunk = slabBytes(Math.max(bytes, chunk ? Math.min(MAX_CHUNK, chunk.length * 2) : FIRST_CHUNK));
        this.chunks.push(chunk);
        this.used = 0;
      }
      chunk.write(text, this.used, 'utf8');
    }
    const i = this.length;
    const slot = (i & (PAGE - 1)) * 3;
    let page = this.pages[i >>> PAGE_BITS];
    if (!page) this.pages.push((page = slabUint32((i === 0 ? FIRST_PAGE : PAGE) * 3)));
    else if (slot === page.length) {
      const bigger = slabUint32(page.length * 2); // first page only, up to PAGE
      bigger.set(page);
      this.pages[0] = page = bigger;
    }
    page[slot] = this.chunks.length - 1;
    page[slot + 1] = this.used;
    page[slot + 2] = bytes;
    this.used += bytes;
    this.length++;
    return i;
  }

  /** The value at index `i` (0 <= i < length), as a fresh object. */
  get(i: number): T {
    const page = this.pages[i >>> PAGE_BITS]!;
    const slot = (i & (PAGE - 1)) * 3;
    const off = page[slot + 1]!;
    return JSON.parse(this.chunks[page[slot]!]!.toString('utf8', off, off + page[slot + 2]!)) as T;
  }

  /** Values [start, end) in order, as fresh objects. */
  slice(start: number, end: number = this.length): T[] {
    const out: T[] = [];
    for (let i = Math.max(0, start); i < Math.min(end, this.length); i++) out.push(this.get(i));
    return out;
  }
}
