// Redis adapter of the console session store. A session is read by its hash alone, so each one is
// a string key with its own hash tag, `<prefix>{sess:<hash>}` (JSON, expiring with the session:
// PXAT its expires_at). Its owner's index, `<prefix>{sess-owner:<owner>}`, is a sorted set of
// hashes by creation time, in another slot: it is written first and kept as a superset (a hash
// whose session is gone costs nothing but a slot in the cap, and leaves it at the lifetime cap).
import type { SessionRecord, SessionStore } from '../../tenants/store.ts';
import { Keys, type RedisClient, type RedisStoreOptions } from './keys.ts';
import { lua } from './script.ts';

// KEYS: owner index. ARGV: drop-before (ms), created (ms), hash, index ttl (ms), max.
// Adds the hash, drops entries past the lifetime cap, and pops (returns) the oldest beyond max.
// The score is the creation time, but always above the newest entry's: sign-ins in the same
// millisecond would otherwise be ordered by their random hashes, and the cap could drop the newest.
const ADD = lua(`
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[1])
local score = tonumber(ARGV[2])
local newest = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
if newest[2] and tonumber(newest[2]) >= score then score = tonumber(newest[2]) + 1 end
redis.call('ZADD', KEYS[1], score, ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
local n = redis.call('ZCARD', KEYS[1]) - tonumber(ARGV[5])
if n <= 0 then return {} end
local old = redis.call('ZRANGE', KEYS[1], 0, n - 1)
redis.call('ZREMRANGEBYRANK', KEYS[1], 0, n - 1)
return old
`);

export interface RedisSessionStoreOptions extends RedisStoreOptions {
  /** No session outlives this from its creation (the owner index keeps entries this long). */
  maxLifetimeMs: number;
}

export class RedisSessionStore implements SessionStore {
  private readonly client: RedisClient;
  private readonly keys: Keys;
  private readonly maxLifetimeMs: number;

  constructor(opts: RedisSessionStoreOptions) {
    this.client = opts.client;
    this.keys = new Keys(opts.prefix);
    this.maxLifetimeMs = opts.maxLifetimeMs;
  }

  async create(s: SessionRecord, maxPerOwner: number): Promise<void> {
    const evicted = (await ADD.run(this.client, [this.ownerKey(s.owner)], [s.created_at - this.maxLifetimeMs, s.created_at, s.hash, this.maxLifetimeMs, maxPerOwner])) as string[];
    await this.client.set(this.key(s.hash), JSON.stringify(s), 'PXAT', s.expires_at);
    // One DEL per key: on a cluster each session is in its own slot.
    await Promise.all(evicted.map((h) => this.client.del(this.key(h))));
  }

  async get(hash: string): Promise<SessionRecord | undefined> {
    const s = await this.client.get(this.key(hash));
    return s === null ? undefined : (JSON.parse(s) as SessionRecord);
  }

  async touch(hash: string, seenAt: number, expiresAt: number): Promise<void> {
    const s = await this.get(hash);
    if (!s) return;
    await this.client.set(this.key(hash), JSON.stringify({ ...s, seen_at: seenAt, expires_at: expiresAt }), 'PXAT', expiresAt, 'XX');
  }

  async delete(s: Pick<SessionRecord, 'hash' | 'owner'>): Promise<void> {
    await Promise.all([this.client.del(this.key(s.hash)), this.client.zrem(this.ownerKey(s.owner), s.hash)]);
  }

  async deleteOwner(owner: string): Promise<number> {
    const hashes = await this.client.zrange(this.ownerKey(owner), '0', '-1');
    const gone = await Promise.all(hashes.map((h) => this.client.del(this.key(h))));
    await this.client.del(this.ownerKey(owner));
    return gone.reduce((a, b) => a + b, 0);
  }

  private key(hash: string): string {
    return this.keys.session(hash);
  }

  private ownerKey(owner: string): string {
    return this.keys.sessionOwner(owner);
  }
}
