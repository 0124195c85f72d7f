// The Redis adapters of every store port (redis mode: many gateway processes, one Redis).
// Key layout and scripts: docs/redis-layout.md.
export type { RedisClient, RedisStoreOptions } from './keys.ts';
export { RedisTenantStore } from './tenants.ts';
export { RedisTaskStore, type RedisTaskStoreOptions } from './tasks.ts';
export { RedisWalletStore } from './wallets.ts';
export { RedisLimitsStore } from './limits.ts';
export { RedisIdempotencyStore } from './idempotency.ts';
export { RedisWebhookStore } from './webhooks.ts';
export { redisRateCounters } from './rate.ts';
export { RedisMediaStore } from './media.ts';
export { RedisSessionStore } from './sessions.ts';
