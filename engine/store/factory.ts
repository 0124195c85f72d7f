// Chooses the adapters of every store port from config: `memory` (one process, the embedded
// default) or `redis` (any number of processes sharing one Redis; jobs on BullMQ).
import { Redis } from 'ioredis';
import type { GatewayConfig } from '../config/types.ts';
import type { WalletStore } from '../billing/store.ts';
import type { IdempotencyStore } from '../idempotency/store.ts';
import type { SharedMediaStore } from '../media/shared.ts';
import { BullJobScheduler } from '../jobs/bullmq-scheduler.ts';
import { MemoryJobScheduler, type JobErrorReporter, type JobScheduler } from '../jobs/scheduler.ts';
import type { RateCountersFactory } from '../limits/rate.ts';
import type { LimitsStore } from '../limits/store.ts';
import type { TaskStore } from '../tasks/store.ts';
import type { TenantStore } from '../tenants/store.ts';
import type { WebhookStore } from '../webhooks/store.ts';
import { MemoryIdempotencyStore } from './memory/idempotency.ts';
import { MemoryLimitsStore } from './memory/limits.ts';
import { memoryRateCounters } from './memory/rate-counters.ts';
import { MemoryTaskStore } from './memory/tasks.ts';
import { MemoryTenantStore } from './memory/tenants.ts';
import { MemoryWalletStore } from './memory/wallets.ts';
import { MemoryWebhookStore } from './memory/webhooks.ts';
import {
  RedisIdempotencyStore, RedisLimitsStore, RedisMediaStore, RedisTaskStore, RedisTenantStore, RedisWalletStore, RedisWebhookStore, redisRateCounters,
} from './redis/index.ts';

export type Role = 'all' | 'api' | 'worker';

export interface Stores {
  tasks: TaskStore;
  tenants: TenantStore;
  wallets: WalletStore;
  limits: LimitsStore;
  idempotency: IdempotencyStore;
  webhooks: WebhookStore;
  /** Media bytes shared across processes (redis); undefined with the memory store. */
  media?: SharedMediaStore;
  rateCounters: RateCountersFactory;
  scheduler: JobScheduler;
  /** Close the scheduler first (no job mid-run), then the connections. */
  close(): Promise<void>;
}

export async function createStores(config: GatewayConfig, role: Role, onJobError: JobErrorReporter, onConnectionError: (err: Error) => void = () => {}): Promise<Stores> {
  // Finished tasks are forgotten after the retention period (not scaled: it is wall-clock policy).
  const finishedTtlMs = config.store.task_retention_hours * 3_600_000;
  if (config.store.kind === 'memory') {
    if (role !== 'all') throw new Error(`--role ${role} needs store.kind redis: with the memory store one process does everything`);
    const scheduler = new MemoryJobScheduler(onJobError);
    return {
      tasks: new MemoryTaskStore({ finishedTtlMs }),
      tenants: new MemoryTenantStore(),
      wallets: new MemoryWalletStore(),
      limits: new MemoryLimitsStore(),
      rateCounters: memoryRateCounters,
      idempotency: new MemoryIdempotencyStore(),
      webhooks: new MemoryWebhookStore(),
      scheduler,
      close: () => scheduler.close(),
    };
  }
  // Commands issued in the same tick share one write (auto-pipelining): a create makes about ten
  // store calls. rate-limiter-flexible gets a connection of its own: it does not work with it.
  const client = new Redis(config.store.redis_url, { lazyConnect: true, maxRetriesPerRequest: 3 });
  const limiterClient = new Redis(config.store.redis_url, { lazyConnect: true, maxRetriesPerRequest: 3 });
  // Connection trouble is reported (ioredis reconnects by itself) instead of going unhandled.
  for (const c of [client, limiterClient]) c.on('error', onConnectionError);
  try {
    await Promise.all([client.connect(), limiterClient.connect()]);
    await client.ping();
  } catch (err) {
    client.disconnect();
    limiterClient.disconnect();
    throw new Error(`cannot reach Redis at ${redactUrl(config.store.redis_url)}: ${(err as Error).message}`);
  }
  const o = { client, prefix: `${config.store.key_prefix}:` };
  const scheduler = new BullJobScheduler({
    url: config.store.redis_url,
    prefix: config.store.key_prefix,
    runWorkers: role !== 'api',
    lockMs: Math.max(1000, Math.round(config.store.job_lock_ms * config.timing.scale)),
    onError: onJobError,
  });
  return {
    tasks: new RedisTaskStore({ ...o, finishedTtlMs }),
    tenants: new RedisTenantStore(o),
    wallets: new RedisWalletStore(o),
    limits: new RedisLimitsStore(o),
    idempotency: new RedisIdempotencyStore(o),
    webhooks: new RedisWebhookStore(o),
    media: new RedisMediaStore(o),
    rateCounters: redisRateCounters(limiterClient, o.prefix),
    scheduler,
    close: async () => {
      await scheduler.close();
      await Promise.all([client, limiterClient].map((c) => c.quit().catch(() => c.disconnect())));
    },
  };
}

function redactUrl(url: string): string {
  return url.replace(/\/\/[^@/]*@/, '//***@');
}
