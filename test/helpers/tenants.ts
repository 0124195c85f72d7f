// Tenants whose wallets are checked after every test: the set-up the task and billing suites
// share, held once here.
import { expect } from 'chai';
import type { Gateway } from '../../engine/gateway.ts';
import { newTenant } from './gateway.ts';

type TenantOptions = NonNullable<Parameters<typeof newTenant>[1]>;

/**
 * Returns a maker of tenants (`defaults` first, then what each call asks) and registers, in the
 * calling `describe`, an afterEach that checks each tenant made during the test: its ledger
 * balances and no credit hold is left open (`BillingService.checkInvariant`). `gateway` is read
 * when it is needed, so the gateway may start in a `before`.
 */
export function checkedTenants(gateway: () => Gateway, defaults: TenantOptions = { credits: 1000 }) {
  const made: string[] = [];
  afterEach(async () => {
    for (const id of made.splice(0)) {
      const report = await gateway().billing.checkInvariant(id);
      expect(report.ok, JSON.stringify(report)).to.equal(true);
    }
  });
  return async (opts: TenantOptions = {}) => {
    const t = await newTenant(gateway(), { ...defaults, ...opts });
    made.push(t.tenant.id);
    return t;
  };
}
