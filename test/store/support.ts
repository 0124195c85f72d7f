// Runs one contract suite against every adapter of a port: `memory`, `redis` (a real
// redis-server) and `redis cluster` (a one-node cluster owning every slot, where any command or
// script whose keys span hash slots fails — the check of the key layout). Each Redis run uses
// its own server for the file and a fresh key prefix per test; race tests use two stores over
// two separate connections (for memory: the same store twice).
import { expect } from 'chai';
import type { Redis } from 'ioredis';
import { startRedis, type RedisServer } from '../helpers/redis.ts';

export type Backend = 'memory' | 'redis' | 'redis cluster';

export interface StoreEnv {
  readonly backend: Backend;
  readonly isRedis: boolean;
  /** Redis: connection A (throws for memory). */
  readonly a: Redis;
  /** Redis: connection B, separate from A. */
  readonly b: Redis;
  /** A new key prefix, e.g. `c12:`. */
  prefix(): string;
  /** Two stores over the same data: the same object for memory, two connections for Redis. */
  pair<S>(memory: () => S, redis: (client: Redis, prefix: string) => S): { a: S; b: S; prefix: string };
}

let prefixes = 0;

class Env implements StoreEnv {
  readonly backend: Backend;
  server: RedisServer | undefined;
  private conns: [Redis, Redis] | undefined;

  constructor(backend: Backend) {
    this.backend = backend;
  }

  get isRedis(): boolean {
    return this.backend !== 'memory';
  }

  get a(): Redis {
    return this.connections()[0];
  }

  get b(): Redis {
    return this.connections()[1];
  }

  prefix(): string {
    return `c${++prefixes}:`;
  }

  pair<S>(memory: () => S, redis: (client: Redis, prefix: string) => S): { a: S; b: S; prefix: string } {
    const prefix = this.prefix();
    if (!this.isRedis) {
      const s = memory();
      return { a: s, b: s, prefix };
    }
    return { a: redis(this.a, prefix), b: redis(this.b, prefix), prefix };
  }

  async start(): Promise<void> {
    if (!this.isRedis) return;
    this.server = await startRedis({ cluster: this.backend === 'redis cluster' });
    this.conns = [this.server.client(), this.server.client()];
    await Promise.all(this.conns.map((c) => c.ping()));
  }

  async stop(): Promise<void> {
    await this.server?.stop();
  }

  private connections(): [Redis, Redis] {
    if (!this.conns) throw new Error(`no Redis connection for the ${this.backend} backend`);
    return this.conns;
  }
}

/** `describe(title)` with one nested describe per backend, each running `suite(env)`. */
export function forEachBackend(title: string, suite: (env: StoreEnv) => void, backends: Backend[] = ['memory', 'redis', 'redis cluster']): void {
  describe(title, () => {
    for (const backend of backends) {
      describe(backend, () => {
        const env = new Env(backend);
        before(async function () {
          this.timeout(20_000);
          await env.start();
        });
        after(async () => env.stop());
        suite(env);
      });
    }
  });
}

/** All keys under `prefix` (SCAN). */
export async function keysUnder(client: Redis, prefix: string): Promise<string[]> {
  const out: string[] = [];
  let cursor = '0';
  do {
    const [next, keys] = await client.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    out.push(...keys);
    cursor = next;
  } while (cursor !== '0');
  return out.sort();
}

/** The rejection of `p` (fails the test when it resolves). */
export async function rejectionOf(p: Promise<unknown>): Promise<unknown> {
  const r = await p.then(
    () => ({ ok: true as const }),
    (err: unknown) => ({ ok: false as const, err }),
  );
  expect(r.ok, 'expected a rejection').to.equal(false);
  return (r as { err: unknown }).err;
}
