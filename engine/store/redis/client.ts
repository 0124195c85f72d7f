// The Redis connections of the request path (the store adapters, the rate-limit counters, and
// BullMQ's producer side). They fail fast instead of waiting for Redis:
//  - no offline queue: a command issued while the connection is down is refused at once, so
//    nothing of a request waits for a reconnect and runs after its client gave up;
//  - no re-sending on reconnect, and commands in flight are failed when the connection drops
//    (maxRetriesPerRequest 0): the request that sent them has been answered by then;
//  - every command answers within `commandTimeoutMs`, and a connection that has returned
//    nothing for that long is dropped (socketTimeout), so a Redis that hangs is treated as
//    one that is gone;
//  - every transport failure is a GatewayError 4003 (503, Retry-After): one mapping for every
//    adapter. Redis's own error replies (a script's refusal, NOSCRIPT) pass through unchanged.
// Background work does not use these semantics to wait: its jobs fail and BullMQ, whose worker
// connections wait for Redis, runs them again once it is back (engine/jobs/bullmq-scheduler.ts).
//
// The same holds on a Redis Cluster (`store.redis_cluster_nodes`): the per-node connections get
// the options above, and the cluster client itself has no offline queue either. A command whose
// connection closed is not re-sent after a failover (it may have run); a MOVED / ASK / TRYAGAIN
// answer is followed, since the node did not run the command. A cluster that is down or
// failing over (CLUSTERDOWN, MASTERDOWN) is a dependency away, like a node that is down.
import { Cluster, Redis, ReplyError, type RedisOptions } from 'ioredis';
import { dependencyUnavailable, GatewayError } from '../../errors/gateway-error.ts';
import type { RedisClient } from './keys.ts';

type Command = Parameters<Redis['sendCommand']>[0];
const MAPPED = Symbol('dependency errors mapped');

/** Cluster state answers: the command did not run and will not run; the cluster is away. */
const CLUSTER_AWAY = /^(CLUSTERDOWN|MASTERDOWN|TRYAGAIN)\b/;

// The mapping sits in the command's own reject, not on the promise sendCommand returns:
// ioredis itself calls sendCommand and drops that promise (pipelines), which would leave a
// second, unhandled rejection. Set before a Cluster wraps the reject with its redirection
// handling, so MOVED and ASK still reach that handling unmapped.
function mapRejections(command: Command): void {
  const reject = command.reject as Command['reject'] & { [MAPPED]?: true };
  if (reject[MAPPED]) return;
  const mapped = (err: Error) =>
    reject(err instanceof GatewayError || (err instanceof ReplyError && !CLUSTER_AWAY.test(err.message)) ? err : dependencyUnavailable('store', err));
  command.reject = Object.assign(mapped, { [MAPPED]: true as const });
}

export class FailFastRedis extends Redis {
  override sendCommand(command: Command, stream?: Parameters<Redis['sendCommand']>[1]): unknown {
    mapRejections(command);
    return super.sendCommand(command, stream);
  }
}

export class FailFastCluster extends Cluster {
  override sendCommand(command: Command, stream?: Parameters<Cluster['sendCommand']>[1], node?: Parameters<Cluster['sendCommand']>[2]): unknown {
    mapRejections(command);
    return super.sendCommand(command, stream, node);
  }
}

type NodeAccess = Pick<RedisOptions, 'username' | 'password' | 'tls'>;

/** Reconnect quickly once Redis is back (requests are refused meanwhile, so retrying costs nothing). */
const reconnectDelay = (attempt: number): number => Math.min(50 * 2 ** attempt, 1000);

const failFastOptions = (commandTimeoutMs: number): Pick<RedisOptions, 'enableOfflineQueue' | 'autoResendUnfulfilledCommands' | 'maxRetriesPerRequest' | 'commandTimeout' | 'socketTimeout'> => ({
  enableOfflineQueue: false,
  autoResendUnfulfilledCommands: false,
  maxRetriesPerRequest: 0,
  commandTimeout: commandTimeoutMs,
  socketTimeout: commandTimeoutMs,
});

export function failFastRedis(url: string, commandTimeoutMs: number): FailFastRedis {
  return new FailFastRedis(url, { lazyConnect: true, retryStrategy: reconnectDelay, ...failFastOptions(commandTimeoutMs) });
}

export function failFastCluster(nodes: readonly string[], commandTimeoutMs: number): FailFastCluster {
  const { startupNodes, redisOptions } = clusterNodes(nodes);
  return new FailFastCluster(startupNodes, {
    lazyConnect: true,
    enableOfflineQueue: false,
    // A command whose connection closed may have run: it is failed, not sent again elsewhere.
    retryDelayOnFailover: 0,
    retryDelayOnClusterDown: 0,
    clusterRetryStrategy: reconnectDelay,
    slotsRefreshTimeout: commandTimeoutMs,
    redisOptions: { ...redisOptions, ...failFastOptions(commandTimeoutMs) },
  });
}

/** The store's fail-fast client: a Cluster when `clusterNodes` lists its nodes, else one Redis at `url`. */
export function failFastClient(store: { redis_url: string; redis_cluster_nodes?: readonly string[] | undefined; command_timeout_ms: number }): FailFastRedis | FailFastCluster {
  return store.redis_cluster_nodes?.length ? failFastCluster(store.redis_cluster_nodes, store.command_timeout_ms) : failFastRedis(store.redis_url, store.command_timeout_ms);
}

/**
 * Startup nodes and the per-node options (credentials, TLS) of `redis://` / `rediss://` URLs.
 * Every node of a cluster is reached with the same credentials (the config loader checks they agree).
 */
export function clusterNodes(urls: readonly string[]): { startupNodes: { host: string; port: number }[]; redisOptions: NodeAccess } {
  const parsed = urls.map((s) => new URL(s));
  const u = parsed[0]!;
  const redisOptions: NodeAccess = {};
  if (u.username) redisOptions.username = decodeURIComponent(u.username);
  if (u.password) redisOptions.password = decodeURIComponent(u.password);
  if (u.protocol === 'rediss:') redisOptions.tls = {};
  return { startupNodes: parsed.map((p) => ({ host: p.hostname, port: Number(p.port || 6379) })), redisOptions };
}

/**
 * The cluster BullMQ's workers start from (it gives each worker copies of it): unlike the
 * request path's, these connections wait for Redis (offline queue, no per-command retry limit,
 * as BullMQ requires), so a job cut short by an outage is run again once the cluster is back.
 */
export function jobWorkerCluster(nodes: readonly string[]): Cluster {
  const { startupNodes, redisOptions } = clusterNodes(nodes);
  return new Cluster(startupNodes, {
    lazyConnect: true,
    // Back within 2 s of Redis, like the single-node workers.
    clusterRetryStrategy: (attempt: number) => Math.min(250 * attempt, 2000),
    redisOptions: { ...redisOptions, maxRetriesPerRequest: null },
  });
}

/**
 * Readiness: resolves once every master answers PING and the cluster serves every slot
 * (`cluster_state:ok`); on one Redis, once it answers PING. Also how the store connects every
 * master before serving: the client opens node connections lazily, and without an offline
 * queue it refuses commands for a node whose connection is still being opened.
 */
export async function pingAll(client: RedisClient): Promise<void> {
  if (!(client instanceof Cluster)) {
    await client.ping();
    return;
  }
  const masters = client.nodes('master');
  if (masters.length === 0) throw new Error('no Redis Cluster master connected');
  const [info] = await Promise.all([client.cluster('INFO'), ...masters.map((n) => n.ping())]);
  if (!/cluster_state:ok/.test(String(info))) throw new Error('Redis Cluster state is not ok');
}
