// The charge of a proxied request (chat), made durable before its answer is served
// (docs/decisions.md, "No answer without its charge"): a hold written before the provider is
// called — a store that cannot write it refuses the request with a fast 503, so nothing is ever
// served unheld — then settled on the request's usage, or released, once the exchange is over.
// A settlement the store refuses (out of memory, read-only, away) is counted
// (gateway_charge_write_failures_total), logged, and made again until the store takes it; the
// hold keeps the money reserved meanwhile. Settling is once per ref, so a repeat never charges
// twice.
import type { Logger } from 'pino';
import { dependencyUnavailable, GatewayError } from '../errors/gateway-error.ts';
import { throttled } from '../log/throttle.ts';
import { chargeWriteFailures } from '../metrics/metrics.ts';
import type { ProxyBilling } from '../proxy/ports.ts';
import { RetryUntilDone } from '../util/retry-until-done.ts';
import type { Milli } from '../util/money.ts';
import type { BillingService } from './service.ts';

export class RequestCharges implements ProxyBilling {
  private readonly billing: BillingService;
  private readonly logger: Logger;
  private readonly pending: RetryUntilDone;

  constructor(billing: BillingService, logger: Logger) {
    this.billing = billing;
    this.logger = logger;
    this.pending = new RetryUntilDone({
      maxDelayMs: 5000,
      onError: (err, key, dropped) => {
        if (dropped) throttled(this.logger).error({ err, ref: key }, 'a request charge could not be written before the process stopped: its hold stays open (released by the sweep)');
        else throttled(this.logger).warn({ err, steps: key }, 'request charges wait for the store');
      },
    });
  }

  // Neither reserve nor close is an async function: every priced request makes one of each, and
  // each layer of promises on its path costs (docs/performance.md).
  reserve(tenantId: string, ref: string, milli: Milli, note: string): Promise<Milli> {
    return this.billing.holdUpTo(tenantId, ref, milli, note).then(undefined, (err: unknown) => {
      if (err instanceof GatewayError && err.errorName !== 'dependencyUnavailable') throw err; // a refusal (1003)
      chargeWriteFailures.inc({ step: 'hold' });
      // Written or not, the request is refused: a hold the store did take is released later.
      this.pending.add(ref, () => this.billing.releaseHold(tenantId, ref, 'refused: the hold could not be confirmed'));
      throw err instanceof GatewayError ? err : dependencyUnavailable('store', err);
    });
  }

  close(tenantId: string, ref: string, milli: Milli | undefined, note: string): Promise<void> {
    return this.write(tenantId, ref, milli, note).then(undefined, (err: unknown) => {
      const step = milli === undefined ? 'release' : 'settle';
      chargeWriteFailures.inc({ step });
      // Once a second at most per kind, with a count (engine/log/throttle.ts): under a store
      // fault every chat's write fails alike; gateway_charge_write_failures_total counts each.
      throttled(this.logger).error({ err, tenant_id: tenantId, ref, milli, note }, `request ${step} refused by the store; retried until it is written`);
      this.pending.add(ref, async () => {
        try {
          await this.write(tenantId, ref, milli, note);
        } catch (again) {
          chargeWriteFailures.inc({ step });
          throw again;
        }
      });
    });
  }

  /** The settlement (`milli`: the usage) or the release (undefined) of a request's hold. */
  private write(tenantId: string, ref: string, milli: Milli | undefined, note: string): Promise<void> {
    return milli === undefined ? this.billing.releaseHold(tenantId, ref, note) : this.billing.settleUsage(tenantId, ref, milli, note);
  }

  /** A last try at the charges still waiting (at shutdown), within `timeoutMs`. */
  flush(timeoutMs: number): Promise<void> {
    return this.pending.flush(timeoutMs);
  }
}
