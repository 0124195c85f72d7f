// Admission: the one step every data-plane request passes before its service does any work,
// whatever the route's kind (async create / read / cancel, sync and stream proxy, model lists):
//   caller  the API key (401), its scope for the vendor and action (403)
//   limits  request rates (429 / 1004, Retry-After); for a priced proxy request also the daily
//           spend (1005) and its hold (the funds: 402 / 1003; a store that cannot write it:
//           503 / 4003), asked together: one round trip to the stores, not three (they matter
//           with Redis); the first refusal in this order answers. Rates before funds, strictly:
//           the three are asked in the same turn once the tenant's limits are known (read first
//           when not cached), as one step of the store (LimitsService.checkPriced), and a request
//           its rates or its spend refuse takes no hold, so its funds never refuse another (on
//           Redis: one STEPS run whose ADMIT part judges the counts before the holds). A cold
//           cache once sent a request's hold at once and its rate counts a read later, in a later
//           run: the holds of requests the rate then refused took the funds of those it admitted
//           (docs/decisions.md, 2026-11-27).
// A proxied completion learns its model (the rates' model scope) only from its validated body, so
// it asks for the caller first and the limits after validation; the others ask for both at once.
import type { ModelLimits, RequestIdentity } from '../limits/service.ts';
import type { AuthContext } from './auth-context.ts';
import { requireScope } from './auth-context.ts';

/** What admission asks of the limits (LimitsService satisfies it). */
export interface RequestLimits {
  /**
   * Count one request; GatewayError 1004 (429, Retry-After) over a rate limit. Undefined when
   * answered at once (the memory store: no promise to wait for); a refusal is a rejected promise.
   */
  checkRequest(who: RequestIdentity, known?: ModelLimits): void | Promise<void>;
  /** The tenant's limits for `model`: at once while cached, else once read (a rejection: the store is away). */
  limitsOf(tenantId: string, model: string | undefined): ModelLimits | Promise<ModelLimits>;
  /**
   * A priced request's rate counts, day's spend and hold (`takeHold`), in that order as one step:
   * a request the first two refuse takes no hold. The first refusal in that order answers.
   */
  checkPriced(who: RequestIdentity, known: ModelLimits, takeHold: () => Promise<void>): void | Promise<void>;
}

export interface AdmissionDeps {
  /** `client`: the request's address, by which failed authentications are counted (CredentialGuard). */
  tenants: { authenticate(authorization: string | undefined, client?: string): Promise<AuthContext> };
  limits: RequestLimits;
}

/** Where admission notes the caller as soon as it is known (the access line names the tenant of a 403 too). */
export interface Seen {
  tenantId?: string;
  /** The request's client address (engine/http/client-address.ts): failed authentications are counted by it. */
  clientAddress?(): string;
}

export class Admission {
  private readonly d: AdmissionDeps;

  constructor(deps: AdmissionDeps) {
    this.d = deps;
  }

  /** The caller and its scope; then its limits (see the header). */
  async admit(authorization: string | undefined, vendor: string, action: 'create' | 'read', seen: Seen, limits: { model?: string } = {}): Promise<AuthContext> {
    const auth = await this.caller(authorization, vendor, action, seen);
    await this.limits(auth, limits);
    return auth;
  }

  /** The API key (401) and its scope for `vendor`:`action` (403). Not async: one promise fewer per request. */
  caller(authorization: string | undefined, vendor: string, action: 'create' | 'read', seen: Seen): Promise<AuthContext> {
    return this.d.tenants.authenticate(authorization, seen.clientAddress?.()).then((auth) => {
      seen.tenantId = auth.tenantId;
      requireScope(auth, vendor, action);
      return auth;
    });
  }

  /**
   * Request rates (`model`: the model scope); for a priced request (`hold`: the hold of its
   * charge, the funds check) the daily spend and the hold too (RequestLimits.checkPriced). A hold
   * written when another check refuses (a store away mid-step) is the caller's to release.
   */
  limits(auth: AuthContext, opts: { model?: string; hold?: () => Promise<void> }): void | Promise<void> {
    const who = { tenantId: auth.tenantId, keyId: auth.keyId, model: opts.model };
    if (!opts.hold) return this.d.limits.checkRequest(who);
    // The limits first when they are not cached, so the three steps go in one turn.
    let eff: ModelLimits | Promise<ModelLimits>;
    try {
      eff = this.d.limits.limitsOf(auth.tenantId, opts.model);
    } catch (err) {
      return Promise.reject(err);
    }
    const hold = opts.hold;
    return eff instanceof Promise ? eff.then((e) => this.d.limits.checkPriced(who, e, hold)) : this.d.limits.checkPriced(who, eff, hold);
  }
}
