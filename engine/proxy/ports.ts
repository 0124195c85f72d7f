// What the proxy needs from billing and limits, as small ports. BillingService and
// LimitsService satisfy them as they are; the defaults do nothing (no billing, no limits).
import type { Milli } from '../util/money.ts';

export interface ProxyBilling {
  /** Refuse with GatewayError 1003 (402) unless the tenant has available credits. Called before the upstream. */
  ensureCanSpend(tenantId: string): Promise<void>;
  /** Post-paid usage: charge `milli` once per `ref` (a repeat is a no-op). */
  charge(tenantId: string, ref: string, milli: Milli, note?: string): Promise<unknown>;
}

export interface ProxyLimits {
  /** Count one request; GatewayError 1004 (429, Retry-After) over a rate limit. */
  checkRequest(who: { tenantId: string; keyId: string; model?: string }): Promise<void>;
  /** GatewayError 1005 (429) when the tenant's daily spend limit is reached. */
  checkSpend(tenantId: string): Promise<void>;
}

export const noBilling: ProxyBilling = {
  ensureCanSpend: async () => {},
  charge: async () => undefined,
};

export const noLimits: ProxyLimits = {
  checkRequest: async () => {},
  checkSpend: async () => {},
};
