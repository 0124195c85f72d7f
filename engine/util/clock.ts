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
