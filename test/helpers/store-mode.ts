// Mocha root hooks: with GATEWAY_TEST_STORE=redis, one real redis-server is started for the
// run (on a free loopback port) and every test gateway uses it under its own key prefix.
import { startRedis, type RedisServer } from './redis.ts';

let server: RedisServer | undefined;

export const mochaHooks = {
  async beforeAll(this: Mocha.Context) {
    if (process.env.GATEWAY_TEST_STORE !== 'redis' || server) return;
    this.timeout(20_000);
    server = await startRedis();
    process.env.GATEWAY_TEST_REDIS_URL = server.url;
  },
  async afterAll() {
    await server?.stop();
    server = undefined;
  },
};
