// Byte slabs shared by the memory stores' off-heap logs (json-log.ts). V8 schedules
// old-generation collections by the growth of ArrayBuffer memory as well as of its heap: with
// every log allocating its own buffers as it grew (1.4 MB/s at 2,000 chat requests/s), a full
// marking cycle ran every 2–3 s and stalled requests for 30–40 ms each time on a one-core
// gateway; with the same bytes carved out of large slabs, none ran in a minute (measured with
// bench/chat's upstream and load). Slabs are never freed: what is carved from them lives as
// long as the process, as the memory stores' records do.
const SLAB_BYTES = 64 << 20;

let slab: ArrayBuffer | undefined;
let used = 0;

/** `bytes` bytes (4-byte aligned start) of a shared slab; larger requests get buffers of their own. */
function carve(bytes: number): { buffer: ArrayBuffer; offset: number } {
  if (bytes > SLAB_BYTES / 16) return { buffer: new ArrayBuffer(bytes), offset: 0 };
  used = (used + 3) & ~3;
  if (!slab || used + bytes > slab.byteLength) {
    slab = new ArrayBuffer(SLAB_BYTES);
    used = 0;
  }
  const offset = used;
  used += bytes;
  return { buffer: slab, offset };
}

/** A byte chunk of its own (never shared with another caller). */
export function slabBytes(bytes: number): Buffer {
  const { buffer, offset } = carve(bytes);
  return Buffer.from(buffer, offset, bytes);
}

/** A zeroed Uint32Array of `length` (slab memory is zero when allocated and never handed out twice). */
export function slabUint32(length: number): Uint32Array {
  const { buffer, offset } = carve(length * 4);
  return new Uint32Array(buffer, offset, length);
}
