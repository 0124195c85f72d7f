// The Redis RateLimiterFactory for engine/limits/rate.ts: rate-limiter-flexible's
// RateLimiterRedis over ioredis. Each counter is one key (`<prefix>rl:<name>:<id>:<window n>`)
// changed by the library's own atomic script, so it behaves like RateLimiterMemory: rate.ts
// aligns windows by putting the window number in the key and gives refused requests back with
// reward(). rejectIfRedisNotReady: a disconnected Redis fails the call at once (rate.ts maps it
// to 4003) instead of queueing requests behind a reconnect.
import type { Redis } from 'ioredis';
import { RateLimiterRedis } from 'rate-limiter-flexible';
import type { RateLimiterFactory } from '../../limits/rate.ts';
import { Keys } from './keys.ts';

export function redisRateLimiterFactory(client: Redis, prefix: string): RateLimiterFactory {
  const keys = new Keys(prefix);
  return (opts) =>
    new RateLimiterRedis({
      storeClient: client,
      useRedisPackage: false,
      rejectIfRedisNotReady: true,
      keyPrefix: keys.rate(opts.keyPrefix),
      points: opts.points,
      duration: opts.duration,
    });
}
