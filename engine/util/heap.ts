// Gives back the memory that start-up used and no longer needs. Compiling the descriptors, the
// validators and loading a thousand modules make V8 grow its young generation to 32 MB of semi-
// spaces (and keep garbage in the old one); nothing shrinks them again until the process is
// under memory pressure, so an idle gateway held about 40 MB of empty heap. One full,
// memory-reducing collection once the gateway is up returns it (docs/performance.md, 2026-11-27).
// The young generation grows back under load as V8 sees fit: this costs steady state nothing.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

type GcFunction = (options: { type: 'major'; execution: 'sync'; flavor: 'last-resort' }) => void;

/**
 * One synchronous, memory-reducing collection (V8's `last-resort` flavour: it also shrinks the
 * young generation). Node exposes V8's `gc` only to contexts made while --expose-gc is set, so
 * the flag is set for the one context that fetches it, then unset.
 */
export function compactHeap(): void {
  setFlagsFromString('--expose-gc');
  try {
    (runInNewContext('gc') as GcFunction)({ type: 'major', execution: 'sync', flavor: 'last-resort' });
  } finally {
    setFlagsFromString('--no-expose-gc');
  }
}
