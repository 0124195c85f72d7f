// What the proxy needs from billing, as a small port (BillingService satisfies it as it is).
// The checks before the upstream (rates, daily spend, funds) are admission's
// (engine/tenants/admission.ts).
import type { Milli } from '../util/money.ts';

export interface ProxyBilling {
  /** Post-paid usage: charge `milli` once per `ref` (a repeat is a no-op). */
  charge(tenantId: string, ref: string, milli: Milli, note?: string): Promise<unknown>;
}
