// Chooses the adapters of every store port from config: `memory` (one process, the embedded
// default) or `redis` (any number of processes sharing one Redis; jobs on BullMQ).
import { MemoryBreakerStore } from './store/memory/breakers.ts';
import type { GatewayConfig } from './config/types.ts';
import type { JobErrorReporter } from './jobs/scheduler.ts';
import type { Stores } from './store/ports.ts';

export type { Stores } from './store/ports.ts';
import { MemoryJobScheduler } from './store/memory/job-scheduler.ts';
import { RoutedJobScheduler } from './jobs/routed.ts';
import { MemoryIdempotencyStore } from './store/memory/idempotency.ts';
import { MemoryLimitsStore } from './store/memory/limits.ts';
import { memoryRateCounters } from './store/memory/rate-counters.ts';
import { MemoryTaskStore } from './store/memory/tasks.ts';
import { MemoryTenantStore } from './store/memory/tenants.ts';
import { MemorySessionStore } from './store/memory/sessions.ts';
import { SESSION_LIFETIME_CAP_MS } from './tenants/sessions.ts';
import { MemoryWalletStore } from './store/memory/wallets.ts';
import { MemoryWebhookStore } from './store/memory/webhooks.ts';
import { within } from './util/within.ts';
import type { ResultBackend } from './results/store.ts';
import { LocalResultFiles } from './store/files/result-files.ts';

export type Role = 'all' | 'api' | 'worker';


/**
 * `longestTaskMs`: the longest any route lets a task run (its max execution); a finished task's
 * entry in its tenant's index (Redis) is kept this long past the retention, plus the sweep's slack.
 */
export async function createStores(config: GatewayConfig, role: Role, onJobError: JobErrorReporter, onConnectionError: (err: Error) => void = () => {}, longestTaskMs?: number): Promise<Stores> {
  // Finished tasks are forgotten after the retention period (not scaled: it is wall-clock policy).
  const finishedTtlMs = Math.round(config.store.task_retention_hours * 3_600_000);
  if (config.store.kind === 'memory') {
    if (role !== 'all') throw new Error(`--role ${role} needs store.kind redis: with the memory store one process does everything`);
    return memoryStores(config, finishedTtlMs, onJobError);
  }
  const t = config.timing;
  const indexMarginMs = longestTaskMs === undefined ? undefined : Math.round(longestTaskMs + 2 * (t.sweep_interval_ms + t.sweep_grace_ms) * t.scale);
  return redisStores(config, role, { finishedTtlMs, indexMarginMs }, onJobError, onConnectionError);
}

function memoryStores(config: GatewayConfig, finishedTtlMs: number, onJobError: JobErrorReporter): Stores {
  const scheduler = new MemoryJobScheduler(onJobError);
  return {
    tasks: new MemoryTaskStore({ finishedTtlMs, maxFinished: config.store.memory_finished_tasks }),
    tenants: new MemoryTenantStore(),
    sessions: new MemorySessionStore(),
    wallets: new MemoryWalletStore({ ledgerEntries: config.store.memory_ledger_entries, closedHoldTtlMs: Math.round(config.store.hold_retention_hours * 3_600_000) }),
    limits: new MemoryLimitsStore({ finalRefs: config.store.memory_ledger_entries }),
    rateCounters: memoryRateCounters(),
    idempotency: new MemoryIdempotencyStore(),
    webhooks: new MemoryWebhookStore(),
    breakers: new MemoryBreakerStore(),
    scheduler,
    unavailable: async () => [],
    close: (graceMs) => scheduler.close(graceMs),
  };
}

async function redisStores(config: GatewayConfig, role: Role, taskTtls: { finishedTtlMs: number; indexMarginMs?: number }, onJobError: JobErrorReporter, onConnectionError: (err: Error) => void): Promise<Stores> {
  // The Redis adapters (ioredis, BullMQ) are loaded only for this store:
  // with the memory store their code would hold about 10 MB of heap for nothing.
  const [{ RedisBreakerStore }, { BullJobScheduler }, { RedisDueJobScheduler }, { failFastClient, jobWorkerCluster, pingAll, probeWrites }, {
    RedisIdempotencyStore, RedisLimitsStore, RedisMediaStore, RedisSessionStore, RedisTaskStore, RedisTenantStore, RedisWalletStore, RedisWebhookStore, redisRateCounters,
  }, { RedisDirectoryFeed }, { Keys }] = await Promise.all([
    import('./store/redis/breakers.ts'), import('./store/redis/job-scheduler.ts'), import('./store/redis/due-jobs.ts'), import('./store/redis/client.ts'), import('./store/redis/index.ts'),
    import('./store/redis/directory-feed.ts'), import('./store/redis/keys.ts'),
  ]);
  // Requests use fail-fast connections (engine/store/redis/client.ts): while Redis is away they
  // are refused within store.command_timeout_ms (503 / 4003), and nothing they sent is queued to
  // run after they were answered. With store.redis_cluster_nodes they are Redis Cluster clients,
  // and so are the job workers'.
  const clusterNodes = config.store.redis_cluster_nodes?.length ? config.store.redis_cluster_nodes : undefined;
  const client = failFastClient(config.store);
  // Connection trouble is reported (ioredis reconnects by itself) instead of going unhandled.
  client.on('error', onConnectionError);
  try {
    await client.connect();
    // On a cluster, also waits until every master's connection is up before serving.
    await pingAll(client);
  } catch (err) {
    client.disconnect();
    const why = err instanceof Error && err.cause instanceof Error ? err.cause : (err as Error);
    const where = clusterNodes ? `the Redis Cluster at ${clusterNodes.map(redactUrl).join(', ')}` : `Redis at ${redactUrl(config.store.redis_url)}`;
    throw new Error(`cannot reach ${where}: ${why.message}`);
  }
  const workerCluster = clusterNodes && role !== 'api' ? jobWorkerCluster(clusterNodes) : undefined;
  const o = { client, prefix: `${config.store.key_prefix}:` };
  // Keys and tenants are cached in the process while this subscription vouches for them.
  const directory = new RedisDirectoryFeed(config.store, new Keys(o.prefix).dirChanges());
  await directory.start();
  const lockMs = Math.max(1000, Math.round(config.store.job_lock_ms * config.timing.scale));
  // The task timers (polls, sweeps) run on a due-time sorted set, a few commands per job; the
  // webhook deliveries keep BullMQ (its attempts, back-off and per-job records).
  const bull = new BullJobScheduler({
    url: config.store.redis_url,
    workerCluster,
    producer: client,
    prefix: config.store.key_prefix,
    runWorkers: role !== 'api',
    lockMs,
    onError: onJobError,
  });
  const due = new RedisDueJobScheduler({ client, prefix: o.prefix, runWorkers: role !== 'api', leaseMs: lockMs, onError: onJobError });
  const scheduler = new RoutedJobScheduler((queue) => (queue.startsWith('webhook.') ? bull : due), [due, bull]);
  return {
    tasks: new RedisTaskStore({ ...o, ...taskTtls }),
    tenants: new RedisTenantStore({ ...o, changes: directory }),
    sessions: new RedisSessionStore({ ...o, maxLifetimeMs: SESSION_LIFETIME_CAP_MS }),
    // Post-paid spend goes in the settlement's script: the limits store below keeps it, same prefix.
    wallets: new RedisWalletStore({ ...o, closedHoldTtlMs: Math.round(config.store.hold_retention_hours * 3_600_000), recordsSpend: true }),
    limits: new RedisLimitsStore({ ...o, finalRefTtlMs: Math.round(config.store.hold_retention_hours * 3_600_000) }),
    idempotency: new RedisIdempotencyStore(o),
    webhooks: new RedisWebhookStore({ ...o, changes: directory }),
    media: new RedisMediaStore(o),
    breakers: new RedisBreakerStore(o),
    rateCounters: redisRateCounters(client, o.prefix),
    scheduler,
    unavailable: async (timeoutMs) => {
      // Answering is not enough: a store that refuses writes (OOM, READONLY) refuses most requests.
      const [store, jobs] = await Promise.all([within(Promise.all([pingAll(client), probeWrites(client, o.prefix)]), timeoutMs), scheduler.connected()]);
      return [...(store === 'done' ? [] : ['store']), ...(jobs ? [] : ['job queue'])];
    },
    close: async (graceMs) => {
      directory.close();
      await scheduler.close(graceMs);
      // QUIT waits for the replies in flight; a Redis that is away or silent gets none: drop the connection.
      if (!(client.status === 'ready' && (await within(client.quit(), 500)) === 'done')) client.disconnect();
      workerCluster?.disconnect();
    },
  };
}

function redactUrl(url: string): string {
  return url.replace(/\/\/[^@/]*@/, '//***@');
}

/**
 * The result store's backend (results.store), or undefined when it is off. The S3 adapter (the
 * AWS SDK, about 5 MB of memory) is loaded only when it is the one configured.
 */
/**
 * Where the ledger archive's segments go: the result store's backend, or with results.store off a
 * local directory (results.local.dir): ledger lines are money and are never dropped
 * (docs/decisions.md). Undefined when ledger_retention_hours is 0 on Redis (lines stay there).
 */
export function ledgerBackend(config: GatewayConfig, results: ResultBackend | undefined): ResultBackend | undefined {
  // The memory store archives past memory_ledger_entries even then: its heap is the bound.
  if (!(config.store.ledger_retention_hours > 0) && config.store.kind !== 'memory') return undefined;
  return results ?? new LocalResultFiles(config.results.local.dir);
}

export async function createResultBackend(config: GatewayConfig): Promise<ResultBackend | undefined> {
  const r = config.results;
  if (r.store === 'off') return undefined;
  if (r.store === 'local') return new LocalResultFiles(r.local.dir);
  const s3 = r.s3;
  const { S3ResultObjects } = await import('./store/s3/result-objects.ts');
  return new S3ResultObjects({
    bucket: s3.bucket!, prefix: s3.prefix, region: s3.region, endpoint: s3.endpoint, forcePathStyle: s3.force_path_style,
    credentials: s3.access_key_id && s3.secret_access_key ? { accessKeyId: s3.access_key_id, secretAccessKey: s3.secret_access_key } : undefined,
  });
}
