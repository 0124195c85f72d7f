// The Redis RateCountersFactory for engine/limits/rate.ts: rate-limiter-flexible's
// RateLimiterRedis over ioredis, used as an atomic counter. Each counter is one key
// (`<prefix>rl:<name>:<id>:<window n>`) changed by the library's own script: penalty() adds one
// and answers the count, reward() gives one back; rate.ts compares the count with the limit.
// The key lives a little longer than its window (the key changes when the window turns).
// rejectIfRedisNotReady: a disconnected Redis fails the call at once (rate.ts maps it to 4003)
// instead of queueing requests behind a reconnect.
import { RateLimiterRedis } from 'rate-limiter-flexible';
import type { RateCountersFactory } from '../../limits/store.ts';
import { Keys, type RedisClient } from './keys.ts';

export function redisRateCounters(client: RedisClient, prefix: string): RateCountersFactory {
  const keys = new Keys(prefix);
  return (name, windowMs) => {
    const sec = windowMs / 1000;
    const limiter = new RateLimiterRedis({
      storeClient: client,
      useRedisPackage: false,
      rejectIfRedisNotReady: true,
      keyPrefix: keys.rate(name),
      points: 1, // unused: the limit is compared in rate.ts
      duration: sec + Math.min(sec, 60),
    });
    return {
      add: async (id, n) => (await limiter.penalty(`${id}:${n}`, 1)).consumedPoints,
      remove: (id, n) => limiter.reward(`${id}:${n}`, 1),
    };
  };
}
