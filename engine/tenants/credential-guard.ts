// Credential guessing is slowed: failed authentications with a presented credential (an API
// key, the console's sign-ins, the admin bearer token) are counted per client address in a
// fixed window (server.failed_auth: 10 a minute by default), on the store's shared request
// counters (in memory, or on Redis so every process counts together).
// The failure that reaches the limit, and every attempt from that address until the window
// ends, is answered 429 / 1006 with Retry-After, without the credential being checked: an
// address over the limit cannot tell a right guess from a wrong one, so guessing on is useless.
//
// A correct credential from another address is never refused: nothing here is counted per key,
// tenant or token, only per address. (A per-target count could only delay failures: refusing a
// target would let anyone lock its owner out; not done, the per-address count is the throttle.)
//
// Each process remembers the addresses it found over the limit until their window ends, so an
// attempt from such an address costs no store round trip; another process learns it at its
// first failure from that address (the shared count is already over), so a client spreading
// its guesses over N processes gets at most N more answers that say anything.
import { GatewayError } from '../errors/gateway-error.ts';
import type { RateCounters } from '../limits/store.ts';
import { authFailures } from '../metrics/metrics.ts';
import type { Clock } from '../util/clock.ts';

export type CredentialKind = 'api_key' | 'console_sign_in' | 'operator_sign_in' | 'admin_token';

export interface CredentialGuardOptions {
  counters: RateCounters;
  /** Failures from one address in a window that make it wait for the next window; 0: off. */
  limit: number;
  windowMs: number;
  clock: Clock;
}

/** Addresses remembered as over the limit, at most; past it the expired ones are dropped first. */
const MAX_REMEMBERED = 100_000;

export class CredentialGuard {
  private readonly o: CredentialGuardOptions;
  /** address -> when its window ends (ms). */
  private readonly over = new Map<string, number>();

  constructor(o: CredentialGuardOptions) {
    this.o = o;
  }

  /**
   * Runs `check` (which throws 1001 for a wrong credential) for a credential presented from
   * `client`: refused 429 at once while the address is over the limit; a 1001 is counted, and
   * answered 429 instead when it reaches the limit. Anything else passes through.
   */
  attempt<T>(client: string, kind: CredentialKind, check: () => Promise<T>): Promise<T> {
    const now = this.o.clock.now();
    const until = this.over.get(client);
    if (until !== undefined) {
      if (until > now) return Promise.reject(this.throttled(kind, until - now));
      this.over.delete(client);
    }
    // Not async: a passing check (every request with a key) costs one promise, not three.
    return check().catch((err: unknown) => this.failed(client, kind, now, err));
  }

  private async failed(client: string, kind: CredentialKind, now: number, err: unknown): Promise<never> {
    if (!(err instanceof GatewayError && err.errorName === 'authenticationFailed') || this.o.limit === 0) {
      if (err instanceof GatewayError && err.errorName === 'authenticationFailed') authFailures.inc({ credential: kind, answer: '401' });
      throw err;
    }
    const n = Math.floor(now / this.o.windowMs);
    const [count] = await this.o.counters.add([{ name: 'auth_failures', windowMs: this.o.windowMs, id: client, n }]);
    if (count < this.o.limit) {
      authFailures.inc({ credential: kind, answer: '401' });
      throw err;
    }
    const ends = (n + 1) * this.o.windowMs;
    this.remember(client, ends, now);
    throw this.throttled(kind, ends - now);
  }

  private throttled(kind: CredentialKind, waitMs: number): GatewayError {
    authFailures.inc({ credential: kind, answer: '429' });
    const seconds = Math.max(1, Math.ceil(waitMs / 1000));
    return new GatewayError('tooManyFailedAuthentications', `Too many failed authentications from this address: at most ${this.o.limit} in ${Math.round(this.o.windowMs / 1000)} s. Retry after the time in Retry-After.`, {
      headers: { 'Retry-After': String(seconds) },
    });
  }

  private remember(client: string, until: number, now: number): void {
    if (this.over.size >= MAX_REMEMBERED) {
      for (const [a, t] of this.over) if (t <= now) this.over.delete(a);
      if (this.over.size >= MAX_REMEMBERED) this.over.clear();
    }
    this.over.set(client, until);
  }
}
