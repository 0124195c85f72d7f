// Two real `gateway serve` processes (role `all`) sharing one fresh redis-server: the set-up of
// the multi-process Redis tests (directory changes, store faults, push races). The test starts
// its upstreams itself and names them in the config; stop() stops both processes, then the
// server.
import type { Redis } from 'ioredis';
import { spawnGateway, writeConfig, type ConfigOptions, type GatewayProcess } from '../redis/support.ts';
import { startRedis, type RedisServer } from './redis.ts';

export interface GatewayPair {
  redis: RedisServer;
  /** A connection of the test's own, e.g. to inject a fault (CONFIG SET, CLIENT KILL). */
  control: Redis;
  a: GatewayProcess;
  b: GatewayProcess;
  stop(): Promise<void>;
}

/** `config`: writeConfig()'s options but the Redis URL, which is the new server's. */
export async function startGatewayPair(config: Omit<ConfigOptions, 'redisUrl'>): Promise<GatewayPair> {
  const redis = await startRedis();
  const file = writeConfig({ ...config, redisUrl: redis.url });
  const started = await Promise.allSettled([spawnGateway(file, 'all'), spawnGateway(file, 'all')]);
  const procs = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  const stop = async () => {
    await Promise.all(procs.map((p) => p.stop()));
    await redis.stop();
  };
  const failed = started.find((s) => s.status === 'rejected');
  if (failed) {
    // The one that did start would outlive the test.
    await stop();
    throw failed.reason;
  }
  return { redis, control: redis.client(), a: procs[0]!, b: procs[1]!, stop };
}
