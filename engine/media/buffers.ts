// Reusable buffers for large request bodies. A burst of big uploads would otherwise allocate
// (and page in, and later free) a fresh buffer per body on the main thread, and every such
// external allocation nudges V8 towards a full garbage collection. A body buffer travels to the
// media worker and comes back (transferred both ways, never copied), then serves the next body.
// At most MAX_RETAINED bytes are kept (GATEWAY_MEDIA_BUFFER_POOL_MB, default 256; 0 turns reuse
// off), and none after a minute without large bodies.
const MiB = 1024 * 1024;
const MAX_RETAINED = Number(process.env.GATEWAY_MEDIA_BUFFER_POOL_MB ?? 256) * MiB;
const IDLE_MS = 60_000;

const free: ArrayBuffer[] = [];
let retained = 0;
let idleTimer: NodeJS.Timeout | undefined;

/** A buffer of at least `size` bytes (contents undefined). */
export function acquireBodyBuffer(size: number): Uint8Array {
  let best = -1;
  for (let i = 0; i < free.length; i++) {
    const len = free[i]!.byteLength;
    if (len >= size && len <= size * 2 + MiB && (best < 0 || len < free[best]!.byteLength)) best = i;
  }
  if (best >= 0) {
    const ab = free.splice(best, 1)[0]!;
    retained -= ab.byteLength;
    return new Uint8Array(ab);
  }
  // allocUnsafeSlow: an ArrayBuffer of its own, not zero-filled (the body overwrites it).
  const b = Buffer.allocUnsafeSlow(Math.ceil(size / MiB) * MiB);
  return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
}

/** Give a buffer back for reuse (it must not be used by the caller afterwards). */
export function recycleBodyBuffer(ab: ArrayBuffer): void {
  if (ab.byteLength < MiB || ab.detached || retained + ab.byteLength > MAX_RETAINED) return;
  free.push(ab);
  retained += ab.byteLength;
  clearTimeout(idleTimer);
  idleTimer = setTimeout(() => {
    free.length = 0;
    retained = 0;
  }, IDLE_MS).unref();
}

export function retainedBodyBytes(): number {
  return retained;
}

/** Forget every kept buffer (tests; memory pressure). */
export function dropBodyBuffers(): void {
  free.length = 0;
  retained = 0;
}
