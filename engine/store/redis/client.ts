// The Redis connections of the request path (the store adapters, the rate-limit counters, and
// BullMQ's producer side). They fail fast instead of waiting for Redis:
//  - no offline queue: a command issued while the connection is down is refused at once, so
//    nothing of a request waits for a reconnect and runs after its client gave up;
//  - no re-sending on reconnect, and commands in flight are failed when the connection drops
//    (maxRetriesPerRequest 0): the request that sent them has been answered by then;
//  - every command answers within `commandTimeoutMs`, and a connection that has returned
//    nothing for that long is dropped, so a Redis that hangs is treated as one that is gone
//    (CommandGuard below);
//  - every transport failure is a GatewayError 4003 (503, Retry-After): one mapping for every
//    adapter. So is every error reply by which Redis refuses a command for its own state rather
//    than for the command (STORE_REFUSES below: out of memory, a read-only replica, loading, busy
//    with a script, a cluster down, a redirection storm): to a client that is the store being away,
//    not a defect. Other error replies (NOSCRIPT, WRONGTYPE, a syntax error) pass through
//    unchanged: those are defects, answered 500 / 4002 and logged.
// Background work does not use these semantics to wait: its jobs fail and BullMQ, whose worker
// connections wait for Redis, runs them again once it is back (./job-scheduler.ts).
//
// The same holds on a Redis Cluster (`store.redis_cluster_nodes`): the per-node connections get
// the options above, and the cluster client itself has no offline queue either. A command whose
// connection closed is not re-sent after a failover (it may have run); a MOVED / ASK / TRYAGAIN
// answer is followed, since the node did not run the command. A cluster that is down or
// failing over (CLUSTERDOWN, MASTERDOWN) is a dependency away, like a node that is down.
import calculateSlot from 'cluster-key-slot';
import { Cluster, Redis, ReplyError, type RedisOptions } from 'ioredis';
import { dependencyUnavailable, GatewayError } from '../../errors/gateway-error.ts';
import { Keys, type RedisClient } from './keys.ts';

type Command = Parameters<Redis['sendCommand']>[0];
type NetStream = Redis['stream'];
const MAPPED = Symbol('dependency errors mapped');

/**
 * Error replies by which Redis refuses a command for its state, not for the command: it did
 * not run. OOM (maxmemory reached under noeviction), READONLY (a replica, e.g. mid-failover),
 * LOADING (a restart reading its data), BUSY (a script or function running too long), MISCONF
 * (writes stopped because the last save failed), NOREPLICAS (min-replicas-to-write not met),
 * CLUSTERDOWN / MASTERDOWN / TRYAGAIN (the cluster or a slot is away), MOVED / ASK reaching
 * here (a single-node client pointed at a cluster; a Cluster client follows them itself and fails
 * with a plain Error after too many). A script's error keeps the refused command's code first
 * ("OOM command not allowed ... script: ..."); EXECABORT is a transaction refused for one of these;
 * UNBLOCKED, a blocking command cut short by a master turning replica.
 */
export const STORE_REFUSES = /^(OOM|READONLY|LOADING|BUSY|MISCONF|NOREPLICAS|CLUSTERDOWN|MASTERDOWN|TRYAGAIN|MOVED|ASK|EXECABORT|UNBLOCKED)\b/;

/** Whether `err` is the store refusing or failing to answer (mapped to 4003), not a defect. */
export function isStoreAway(err: unknown): boolean {
  return !(err instanceof ReplyError) || STORE_REFUSES.test((err as Error).message);
}

// The mapping sits in the command's own reject, not on the promise sendCommand returns:
// ioredis itself calls sendCommand and drops that promise (pipelines), which would leave a
// second, unhandled rejection. Set before a Cluster wraps the reject with its redirection
// handling, so MOVED and ASK still reach that handling unmapped.
function mapRejections(command: Command & { [MAPPED]?: true }): void {
  if (command[MAPPED]) return;
  command[MAPPED] = true;
  const reject = command.reject;
  command.reject = (err: Error) => reject(err instanceof GatewayError || !isStoreAway(err) ? err : dependencyUnavailable('store', err));
}

/** When a command was first handed to a connection (performance.now()): its deadline is commandTimeoutMs later. */
const SENT_AT = Symbol('sent at');
type Sent = Command & { [SENT_AT]?: number };

/**
 * What one connection does around each command it writes, beside ioredis's own work.
 *
 * Deadlines. Every command answers within `timeoutMs` or is failed ('Command timed out', mapped to
 * 4003), and a connection that has received nothing for `timeoutMs` while commands wait is
 * destroyed (so a Redis that hangs is treated as one that is gone: the commands in flight fail and
 * new ones are refused until it reconnects). ioredis's commandTimeout and socketTimeout options do
 * the same with a timer per command, and a timer and a 'data' listener per read: in a create
 * profile those were 2-3% of the gateway's CPU. Here one timer per connection runs at the
 * earliest deadline of the commands ioredis has written and not yet matched with a reply (its
 * commandQueue, oldest first), fails those past it, and sets itself for the next; a command
 * only has its send time noted.
 *
 * Write coalescing. ioredis writes each command to its socket on its own, and a write to a
 * loopback or LAN socket is a system call that runs the receiving TCP stack: in Redis mode that was
 * the gateway's largest single cost (a sixth of its CPU per task life, 112 of 714 µs, in a create
 * profile). Here the socket is corked when a command is written and uncorked in the event loop's
 * next check phase (setImmediate), so every command issued while one batch of I/O callbacks runs
 * leaves in one writev. Each command stays a command of its own (its own reply, deadline and
 * error; no pipeline, whose retry and ordering rules differ): only the system calls are shared.
 * The delay is the rest of the current loop turn. ioredis's enableAutoPipelining does the batching
 * with a Pipeline per batch instead; measured, it cost more CPU per create than no batching at all
 * (one pipeline in flight per connection, a promise and a callback per command).
 */
class CommandGuard {
  private timer: NodeJS.Timeout | undefined;
  /** The socket whose reads `lastRead` follows (a reconnect brings a new one). */
  private socket: NetStream | undefined;
  private lastRead = 0;
  private corked = false;

  private readonly connection: Redis;
  private readonly timeoutMs: number;

  constructor(connection: Redis, timeoutMs: number) {
    this.connection = connection;
    this.timeoutMs = timeoutMs;
  }

  /** Before ioredis's sendCommand (`stream`: a pipeline's, which writes on its own). */
  sending(command: Sent, stream: unknown): void {
    const now = performance.now();
    // A command sent again (a Cluster following MOVED) keeps its first deadline, as ioredis's timer did.
    command[SENT_AT] ??= now;
    const socket = this.connection.stream as NetStream | undefined;
    if (socket !== this.socket && socket !== undefined) {
      this.socket = socket;
      this.lastRead = now;
      socket.on('data', this.read);
    }
    this.timer ??= setTimeout(this.check, this.timeoutMs).unref();
    if (stream === undefined && !this.corked && socket?.writable) {
      this.corked = true;
      socket.cork();
      setImmediate(this.uncork, socket);
    }
  }

  private readonly read = (): void => {
    this.lastRead = performance.now();
  };

  private readonly uncork = (socket: NetStream): void => {
    this.corked = false;
    socket.uncork();
  };

  private readonly check = (): void => {
    this.timer = undefined;
    const now = performance.now();
    const queue = this.connection.commandQueue;
    let next = Infinity;
    // Every waiting command is looked at: one the Cluster sent again may sit behind younger ones.
    for (let i = 0; i < queue.length; i++) {
      const command = queue.peekAt(i)!.command as Sent;
      const due = (command[SENT_AT] ?? now) + this.timeoutMs;
      if (due > now) next = Math.min(next, due);
      else if (!command.isSettled) command.reject(new Error('Command timed out'));
    }
    if (queue.length > 0) {
      const oldest = (queue.peekFront()!.command as Sent)[SENT_AT] ?? now;
      const silentSince = Math.max(this.lastRead, oldest);
      if (silentSince + this.timeoutMs <= now) {
        // ioredis then fails the commands still waiting ('Connection is closed.') and reconnects.
        this.connection.stream?.destroy(new Error(`Socket timeout. Expecting data, but didn't receive any in ${this.timeoutMs}ms.`));
        return;
      }
      next = Math.min(next, silentSince + this.timeoutMs);
    }
    if (next !== Infinity) this.timer = setTimeout(this.check, next - now).unref();
  };
}

export class FailFastRedis extends Redis {
  private readonly guard: CommandGuard;

  constructor(url: string, options: Omit<RedisOptions, 'replyMapping'>, commandTimeoutMs: number) {
    super(url, options);
    this.guard = new CommandGuard(this, commandTimeoutMs);
  }

  override sendCommand(command: Command, stream?: Parameters<Redis['sendCommand']>[1]): unknown {
    mapRejections(command);
    this.guard.sending(command, stream);
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

// No commandTimeout / socketTimeout: each connection's CommandGuard keeps those deadlines.
const failFastOptions: Pick<RedisOptions, 'enableOfflineQueue' | 'autoResendUnfulfilledCommands' | 'maxRetriesPerRequest'> = {
  enableOfflineQueue: false,
  autoResendUnfulfilledCommands: false,
  maxRetriesPerRequest: 0,
};

export function failFastRedis(url: string, commandTimeoutMs: number): FailFastRedis {
  return new FailFastRedis(url, { lazyConnect: true, retryStrategy: reconnectDelay, ...failFastOptions }, commandTimeoutMs);
}

export function failFastCluster(nodes: readonly string[], commandTimeoutMs: number): FailFastCluster {
  const { startupNodes, redisOptions } = clusterNodes(nodes);
  const cluster = new FailFastCluster(startupNodes, {
    lazyConnect: true,
    enableOfflineQueue: false,
    // A command whose connection closed may have run: it is failed, not sent again elsewhere.
    retryDelayOnFailover: 0,
    retryDelayOnClusterDown: 0,
    clusterRetryStrategy: reconnectDelay,
    slotsRefreshTimeout: commandTimeoutMs,
    redisOptions: { ...redisOptions, ...failFastOptions },
  });
  // The cluster makes its node connections itself (plain Redis clients): each gets a guard like a
  // single node's, as it is created (the errors are mapped by the cluster's sendCommand above).
  cluster.on('+node', (node: Redis) => {
    const guard = new CommandGuard(node, commandTimeoutMs);
    const send = node.sendCommand.bind(node);
    node.sendCommand = (command, stream) => {
      guard.sending(command, stream);
      return send(command, stream);
    };
  });
  return cluster;
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

/** How long a write probe's key lives: it only has to be written, never read. */
const PROBE_TTL_MS = 10_000;

/**
 * Readiness, the write half: resolves once a short-lived key under `prefix` is written on every
 * master, rejects while any refuses writes (OOM, READONLY, MISCONF, ...). A PING is answered by a
 * Redis that refuses every write, so it alone would keep /readyz at 200 through such a fault.
 * On a cluster, one key per master, in a slot that master serves.
 */
export async function probeWrites(client: RedisClient, prefix: string): Promise<void> {
  const value = String(process.pid);
  if (!(client instanceof Cluster)) {
    await client.set(new Keys(prefix).readyProbe(), value, 'PX', PROBE_TTL_MS);
    return;
  }
  await Promise.all(probeKeys(client, prefix).map((key) => client.set(key, value, 'PX', PROBE_TTL_MS)));
}

/** A key for each master of the cluster's current slot layout (ioredis keeps it in `slots`). */
function probeKeys(client: Cluster, prefix: string): string[] {
  const masters = new Set<string>(); // "host:port" of each slot's master
  for (const nodes of client.slots) if (nodes?.[0] !== undefined) masters.add(nodes[0]);
  // Tags are tried in order until every master has one: a handful on a balanced cluster.
  const keys: string[] = [];
  const covered = new Set<string>();
  const names = new Keys(prefix);
  for (let i = 0; covered.size < masters.size && i < 100_000; i++) {
    const key = names.readyProbe(i);
    const master = client.slots[calculateSlot(key)]?.[0];
    if (master !== undefined && !covered.has(master)) {
      covered.add(master);
      keys.push(key);
    }
  }
  return keys.length ? keys : [names.readyProbe(0)];
}
