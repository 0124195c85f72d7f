// The port of the pool members' circuit breakers (engine/upstream/pool.ts): one small record
// per vendor and member. Memory keeps it in the process; Redis shares it between the gateway's
// processes, so a member one process saw failing is taken out for all of them. Times are the
// caller's clock (epoch ms), passed in, so a scaled test clock drives the cool-downs.

export interface BreakerRecord {
  /** Consecutive failures (connect error, 5xx, 429, timeout before any byte). */
  failures: number;
  /** 0: closed. Otherwise the member is out until this time; after it, one trial call may go. */
  open_until: number;
  /** A trial call (half-open) is on its way. */
  probing: boolean;
}

export type BreakerState = 'closed' | 'half_open' | 'open';

export const CLOSED: Readonly<BreakerRecord> = Object.freeze({ failures: 0, open_until: 0, probing: false });

export function breakerState(r: BreakerRecord, now: number): BreakerState {
  if (r.open_until === 0) return 'closed';
  if (r.probing || r.open_until <= now) return 'half_open';
  return 'open';
}

export interface BreakerStore {
  read(vendor: string, member: string): Promise<BreakerRecord>;
  /**
   * One more failure: at `threshold` consecutive ones (or a failed trial) the member opens until
   * `now + cooldownMs`. Returns the record as it now is.
   */
  failure(vendor: string, member: string, threshold: number, now: number, cooldownMs: number): Promise<BreakerRecord>;
  /** A usable answer: the breaker closes and its count restarts. */
  success(vendor: string, member: string): Promise<void>;
  /**
   * The half-open trial: true for exactly one caller once the cool-down is over (the window is
   * pushed on by another cool-down meanwhile, so a trial lost with its process is retried later).
   */
  claimProbe(vendor: string, member: string, now: number, cooldownMs: number): Promise<boolean>;
}
