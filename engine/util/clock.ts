// An injectable clock: services take a Clock so tests can move time instead of sleeping.
export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** A clock a test moves by hand. */
export class ManualClock implements Clock {
  private t: number;
  constructor(start = Date.parse('2026-01-01T00:00:00Z')) {
    this.t = start;
  }
  now(): number {
    return this.t;
  }
  advance(ms: number): void {
    this.t += ms;
  }
  set(ms: number): void {
    this.t = ms;
  }
}

export function isoNow(clock: Clock): string {
  return isoAt(clock.now());
}

// Several records a millisecond share their timestamp: format it once.
let lastMs = Number.NaN;
let lastIso = '';

/** ISO 8601 (UTC, milliseconds) of an epoch-milliseconds time. */
export function isoAt(ms: number): string {
  if (ms !== lastMs) {
    lastIso = new Date(ms).toISOString();
    lastMs = ms;
  }
  return lastIso;
}

const MIN_SCALED_TIMEOUT_MS = 1000;

/**
 * A network timeout under timing.scale. It scales like every other duration, so a test with a
 * scaled clock can reach a timeout; but scaling never takes it below 1 s (or below the configured
 * value, when that is smaller): a round trip, a TLS handshake or a large upload does not get
 * faster with the test clock (provider_b's 15 s at scale 0.001 would fail healthy calls after
 * 15 ms, a webhook's 30 s would fail a handshake on a busy machine after 30 ms).
 */
export function scaledTimeout(ms: number, scale: number): number {
  return Math.max(Math.round(ms * scale), Math.min(ms, MIN_SCALED_TIMEOUT_MS));
}
