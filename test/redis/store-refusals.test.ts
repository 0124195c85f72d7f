// Redis's error replies that refuse a command for the server's state (out of memory, a
// read-only replica, busy with a script) are the store being away, like a lost connection:
// the fail-fast client turns them into 503 / 4003 with Retry-After, in its one mapping
// (engine/store/redis/client.ts), for plain commands and for scripts alike. Replies that point
// at a defect (WRONGTYPE) stay what they are. /readyz's write probe sees what PING does not.
import { expect } from 'chai';
import { ReplyError } from 'ioredis';
import { failFastRedis, isStoreAway, probeWrites, type FailFastRedis } from '../../engine/store/redis/client.ts';
import { startRedis, type RedisServer } from '../helpers/redis.ts';

const refusal = (p: Promise<unknown>) => p.then(() => undefined, (e: unknown) => e as { code?: number; status?: number; headers?: Record<string, string>; cause?: unknown });

describe('redis mode: error replies of a refusing store are 503 / 4003', function () {
  this.timeout(20_000);
  let redis: RedisServer;
  let client: FailFastRedis;
  before(async () => {
    redis = await startRedis();
    client = failFastRedis(redis.url, 1000);
    client.on('error', () => {});
    await client.connect();
  });
  after(async () => {
    client?.disconnect();
    await redis?.stop();
  });

  const expect4003 = async (p: Promise<unknown>, reply: RegExp) => {
    const err = await refusal(p);
    expect(err, 'refused').to.include({ code: 4003, status: 503 });
    expect(err!.headers).to.have.property('Retry-After');
    expect(String((err!.cause as Error).message)).to.match(reply);
  };

  it('OOM: a write, a script that writes, and the write probe', async () => {
    const admin = redis.client();
    await admin.config('SET', 'maxmemory', '1');
    try {
      await expect4003(client.set('k', 'v'), /^OOM/);
      await expect4003(client.eval("return redis.call('set', KEYS[1], 'v')", 1, 'k'), /^OOM/);
      await expect4003(probeWrites(client, 'p:'), /^OOM/);
      expect(await client.ping(), 'PING still answers').to.equal('PONG');
    } finally {
      await admin.config('SET', 'maxmemory', '0');
    }
    await probeWrites(client, 'p:');
  });

  it('READONLY: a replica refuses writes', async () => {
    const admin = redis.client();
    await admin.call('REPLICAOF', '127.0.0.1', '1'); // a master that never answers
    try {
      await expect4003(client.set('k', 'v'), /^READONLY/);
      await expect4003(client.eval("return redis.call('set', KEYS[1], 'v')", 1, 'k'), /^READONLY/);
      await expect4003(probeWrites(client, 'p:'), /^READONLY/);
    } finally {
      await admin.call('REPLICAOF', 'NO', 'ONE');
    }
    await probeWrites(client, 'p:');
  });

  it('BUSY: a script running past busy-reply-threshold', async () => {
    const admin = redis.client();
    await admin.config('SET', 'busy-reply-threshold', '50');
    const busy = redis.client();
    // Runs ~700 ms of wall time (TIME is allowed in scripts since Redis 5's effects replication).
    const running = busy.eval("local t = redis.call('TIME'); local s = t[1] * 1e6 + t[2]; repeat t = redis.call('TIME') until t[1] * 1e6 + t[2] - s > 700000; return 1", 0);
    await new Promise((r) => setTimeout(r, 200));
    try {
      await expect4003(client.get('k'), /^BUSY/);
    } finally {
      await running;
      await admin.config('SET', 'busy-reply-threshold', '5000');
    }
  });

  it('classifies every refusal kind as the store away, and defects as defects', () => {
    const away = ['OOM command not allowed', 'READONLY You can\'t write against a read only replica.', 'LOADING Redis is loading the dataset in memory',
      'BUSY Redis is busy running a script.', 'MISCONF Redis is configured to save RDB snapshots', 'NOREPLICAS Not enough good replicas to write.',
      'CLUSTERDOWN The cluster is down', 'MASTERDOWN Link with MASTER is down', 'TRYAGAIN Multiple keys request during rehashing of slot',
      'MOVED 3999 127.0.0.1:6381', 'ASK 3999 127.0.0.1:6381', 'EXECABORT Transaction discarded because of previous errors.', 'UNBLOCKED force unblock'];
    for (const m of away) expect(isStoreAway(new ReplyError(m)), m).to.equal(true);
    // Not a reply at all: a timeout, a dropped connection, a Cluster that gave up following redirections.
    for (const m of ['Command timed out', 'Connection is closed.', 'Too many Cluster redirections. Last error: MOVED 1 x:1']) expect(isStoreAway(new Error(m)), m).to.equal(true);
    for (const m of ['WRONGTYPE Operation against a key holding the wrong kind of value', 'NOSCRIPT No matching script', 'ERR syntax error']) expect(isStoreAway(new ReplyError(m)), m).to.equal(false);
  });

  it('a defect stays a ReplyError (WRONGTYPE), not an outage', async () => {
    await client.del('h');
    await client.hset('h', 'f', '1');
    const err = await refusal(client.get('h'));
    expect(err).to.be.instanceOf(ReplyError);
    expect(String((err as unknown as Error).message)).to.match(/^WRONGTYPE/);
  });
});
