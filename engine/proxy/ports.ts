// What the proxy needs from billing, as a small port (engine/billing/request-charges.ts
// implements it). The checks before the upstream (rates, daily spend) are admission's
// (engine/tenants/admission.ts); the funds check of a priced request is its hold.
import type { Milli } from '../util/money.ts';

export interface ProxyBilling {
  /**
   * Before the upstream is called: hold up to `milli` for `ref` (once per ref). GatewayError
   * 1003 (402) when the tenant has no available credits; 4003 (503, Retry-After) when the store
   * cannot write the hold — the provider is then not called. Resolves to the amount held.
   */
  reserve(tenantId: string, ref: string, milli: Milli, note: string): Promise<Milli>;
  /**
   * The exchange is over: settle `milli` of usage against the hold, or release it (undefined:
   * nothing billable was served). Never throws: a write the store refuses is counted and made
   * again until the store takes it.
   */
  close(tenantId: string, ref: string, milli: Milli | undefined, note: string): Promise<void>;
}
