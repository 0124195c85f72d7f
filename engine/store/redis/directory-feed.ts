// The directory's change feed: what lets every process cache API keys and tenants (slot {dir},
// another slot than the tenant's, so a chat would otherwise read them on every request) and
// still see a revocation, a suspension or a limit change within a second, without a TTL.
//   - Every directory write (./tenants.ts: INSERT, CREATE_KEY, DIR_PATCH) PUBLISHes on
//     `<p>dir:changes` inside its own script: written and announced together.
//   - Each process listens on a connection of its own (a subscribed connection can send nothing
//     else); every message moves `generation`, which empties every cache built on the feed.
//   - The feed is `live` only while its subscription is confirmed and the connection answered
//     a PING within TRUST_MS. A message cannot be missed unseen: a dropped connection, a
//     resubscription (messages sent meanwhile are lost) and a silent socket each stop trusting
//     the caches (they read through) until the subscription is confirmed again, and that too
//     moves the generation. So a cache never serves a grant older than about TRUST_MS.
// On a Redis Cluster a PUBLISH reaches every node, so one subscription to one node hears all;
// that node away means the caches read through until it is back.
import { Redis, type RedisOptions } from 'ioredis';
import type { ChangeFeed } from '../../tenants/store.ts';
import { clusterNodes } from './client.ts';

/** A confirmed subscription is trusted this long after the last PING answered (ms). */
const TRUST_MS = 1000;
const PING_MS = 250;

export class RedisDirectoryFeed implements ChangeFeed {
  generation = 0;
  private subscribed = false;
  private answeredAt = 0;
  private readonly sub: Redis;
  private readonly channel: string;
  private readonly pinger: NodeJS.Timeout;

  constructor(store: { redis_url: string; redis_cluster_nodes?: readonly string[] | undefined }, channel: string) {
    this.channel = channel;
    const options: RedisOptions = { lazyConnect: true, autoResubscribe: false, enableOfflineQueue: false, maxRetriesPerRequest: 0, retryStrategy: (n) => Math.min(50 * 2 ** n, 1000) };
    const nodes = store.redis_cluster_nodes;
    if (nodes?.length) {
      const { startupNodes, redisOptions } = clusterNodes(nodes);
      this.sub = new Redis({ ...startupNodes[0]!, ...redisOptions, ...options });
    } else {
      this.sub = new Redis(store.redis_url, options);
    }
    this.sub.on('message', () => this.generation++);
    this.sub.on('ready', () => void this.subscribe());
    this.sub.on('close', () => this.lost());
    // A cut connection is untrusted from its end (EOF) on: ioredis's 'close' follows only in the
    // event loop's close phase, after the bytes of a request already in on a kept-alive socket
    // may have been served from the cache (seen at load 15: a key revoked during the cut served).
    this.sub.on('connect', () => this.sub.stream.once('end', () => this.lost()));
    this.sub.on('error', () => this.lost()); // reconnects by itself; the caches read through meanwhile
    this.pinger = setInterval(() => this.ping(), PING_MS).unref();
  }

  get live(): boolean {
    return this.subscribed && Date.now() - this.answeredAt < TRUST_MS;
  }

  /** Resolves once subscribed (or after `timeoutMs`: the caches read through until then). */
  async start(timeoutMs = 2000): Promise<void> {
    this.sub.connect().catch(() => {});
    const until = Date.now() + timeoutMs;
    while (!this.live && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
  }

  close(): void {
    clearInterval(this.pinger);
    this.lost();
    this.sub.disconnect();
  }

  private async subscribe(): Promise<void> {
    try {
      await this.sub.subscribe(this.channel);
      this.generation++; // whatever was cached before may have missed a message
      this.answeredAt = Date.now();
      this.subscribed = true;
    } catch {
      this.lost();
    }
  }

  private ping(): void {
    if (!this.subscribed) return;
    this.sub.ping().then(() => (this.answeredAt = Date.now()), () => this.lost());
  }

  private lost(): void {
    if (this.subscribed) this.generation++;
    this.subscribed = false;
  }
}
