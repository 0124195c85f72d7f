// One call to wire the webhooks part: config → pool → dispatcher → endpoint and delivery
// services. The caller owns the store and the scheduler; `close()` stops only the pool
// created here (close the scheduler first so no attempt is mid-flight).
import type { EventBus } from '../events/bus.ts';
import type { JobScheduler } from '../jobs/scheduler.ts';
import type { Clock } from '../util/clock.ts';
import type { WebhookConfig } from './config.ts';
import { WebhookDeliveries } from './deliveries.ts';
import { WebhookDispatcher, type WebhookLogger } from './dispatcher.ts';
import { WebhookEndpoints } from './endpoints.ts';
import { createSendPool, type SendPool } from './pool.ts';
import type { HostResolver } from './ssrf.ts';
import type { WebhookStore } from './store.ts';

export interface WebhooksOptions {
  store: WebhookStore;
  scheduler: JobScheduler;
  clock: Clock;
  /** `resolveWebhookConfig(config.webhooks)`. */
  config: WebhookConfig;
  /** Defaults to a Piscina pool of worker threads. */
  pool?: SendPool;
  logger?: WebhookLogger;
  resolveHost?: HostResolver;
}

export interface Webhooks {
  config: WebhookConfig;
  dispatcher: WebhookDispatcher;
  endpoints: WebhookEndpoints;
  deliveries: WebhookDeliveries;
  /** Subscribe the dispatcher to the bus. */
  attach(bus: EventBus): void;
  close(): Promise<void>;
}

export function createWebhooks(opts: WebhooksOptions): Webhooks {
  const config = opts.config;
  const ownPool = opts.pool === undefined;
  const pool = opts.pool ?? createSendPool(config);
  const dispatcher = new WebhookDispatcher({ store: opts.store, scheduler: opts.scheduler, clock: opts.clock, config, pool, logger: opts.logger });
  const endpoints = new WebhookEndpoints({ store: opts.store, clock: opts.clock, config, dispatcher, resolveHost: opts.resolveHost });
  const deliveries = new WebhookDeliveries({ store: opts.store, dispatcher });
  return {
    config,
    dispatcher,
    endpoints,
    deliveries,
    attach: (bus) => dispatcher.attach(bus),
    close: async () => {
      if (ownPool) await pool.destroy();
    },
  };
}
