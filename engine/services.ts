// The services every role of the gateway needs, built on its stores (part of the composition
// root, with gateway.ts, which wires them to the lifecycle, the proxy and HTTP).
import type { Logger } from 'pino';
import { resolveBillingConfig, type BillingConfigInput } from './billing/config.ts';
import { LowBalanceMonitor } from './billing/low-balance.ts';
import { BillingService } from './billing/service.ts';
import { LedgerArchive } from './billing/ledger-archive.ts';
import type { ResultBackend } from './results/store.ts';
import type { GatewayConfig } from './config/types.ts';
import { GatewayError } from './errors/gateway-error.ts';
import { EventBus } from './events/bus.ts';
import { IdempotencyService } from './idempotency/service.ts';
import type { LimitsConfigInput } from './limits/config.ts';
import { LimitsService } from './limits/service.ts';
import { throttled } from './log/throttle.ts';
import type { Stores } from './store/ports.ts';
import { CredentialGuard } from './tenants/credential-guard.ts';
import { TenantService } from './tenants/service.ts';
import type { Clock } from './util/clock.ts';
import { resolveWebhookConfig, type WebhookConfig } from './webhooks/config.ts';
import { createWebhooks } from './webhooks/service.ts';

/** The services every role needs, on this gateway's stores: tenants, the event bus, limits, webhooks, billing, idempotency. */
export function services(config: GatewayConfig, stores: Stores, clock: Clock, logger: Logger, ledgerBackend?: ResultBackend) {
  const { scheduler } = stores;
  // Credential guessing: failures per client address on the store's shared counters.
  const failedAuth = config.server.failed_auth;
  const guard = new CredentialGuard({ counters: stores.rateCounters, limit: failedAuth.limit, windowMs: failedAuth.window_seconds * 1000, clock });
  const tenants = new TenantService(stores.tenants, clock, guard);
  const bus = new EventBus(clock);

  const billingConfig = resolveBillingConfig(config.billing as BillingConfigInput);
  const limits = new LimitsService({
    store: stores.limits,
    rateCounters: stores.rateCounters,
    config: config.limits as LimitsConfigInput,
    clock,
    // Limit overrides live in the tenant's directory record: its change feed says when to read again.
    changes: stores.tenants.changes,
    // A tenant that does not exist has none; a store that cannot be read is the request's 503,
    // never the defaults in place of the tenant's own limits.
    tenantOverrides: async (id) => (await tenants.getTenant(id).catch((err: unknown) => {
      if (err instanceof GatewayError && err.errorName === 'resourceNotFound') return undefined;
      throw err;
    }))?.limits,
  });
  const webhooks = createWebhooks({
    store: stores.webhooks,
    scheduler,
    clock,
    config: resolveWebhookConfig({ time_scale: config.timing.scale, ...(config.webhooks as Partial<WebhookConfig>) }),
    logger,
  });
  webhooks.attach(bus);
  const wallets = stores.wallets;
  const lowBalance = new LowBalanceMonitor({
    store: wallets,
    bus,
    clock,
    hasSubscriber: (tenantId, type) => webhooks.endpoints.hasSubscriber(tenantId, type),
    defaultThreshold: billingConfig.lowBalanceThreshold,
    throttleMs: billingConfig.lowBalanceThrottleMs,
    onError: (err, tenantId) => throttled(logger).error({ err, tenant_id: tenantId }, 'balance.low could not be emitted'),
  });
  // Old ledger lines move to NDJSON segments; every ledger reader reads across both.
  const ledgerArchive = ledgerBackend && new LedgerArchive({
    store: wallets, backend: ledgerBackend, clock, logger, scheduler,
    retentionMs: Math.round(config.store.ledger_retention_hours * 3_600_000),
    intervalMs: Math.round(config.store.ledger_archive_interval_ms * config.timing.scale),
    tenantIds: async () => (await tenants.listTenants()).map((t) => t.id),
  });
  const billing = new BillingService({ store: wallets, ledger: ledgerArchive, clock, lowBalance, spend: limits });
  const idempotency = new IdempotencyService({
    store: stores.idempotency,
    clock,
    onError: (err, dropped) => throttled(logger)[dropped ? 'error' : 'warn']({ err }, dropped ? 'an Idempotency-Key stays claimed until its lease runs out' : 'Idempotency-Key claims wait for the store to be released'),
  });
  return { tenants, bus, limits, webhooks, wallets, billing, idempotency, ledgerArchive };
}
