// Issue 33: a tenant's webhook endpoints are cached in each process under the directory's change
// feed (engine/store/redis/webhooks.ts), so a task's events do not read the endpoint list. Two
// webhook stores, each with a feed of its own (two processes' worth), on one real redis-server:
//  - B's cached list follows A's create, patch (disable) and delete within 1 s;
//  - B's own writes show in its next list at once;
//  - while B's feed is not live (its subscription cut), B reads through;
//  - a cached list costs no command.
import { expect } from 'chai';
import type { Redis } from 'ioredis';
import { RedisDirectoryFeed } from '../../engine/store/redis/directory-feed.ts';
import { Keys } from '../../engine/store/redis/keys.ts';
import { RedisWebhookStore } from '../../engine/store/redis/webhooks.ts';
import { startRedis, type RedisServer } from '../helpers/redis.ts';
import { endpointRecord } from '../webhooks/support/store-contract.ts';

const T1 = 'tenant-1';
const PREFIX = 'ec:';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** How long until `check` holds (polled every 5 ms); fails past 1 s. */
async function within1s(check: () => Promise<boolean>): Promise<number> {
  const t0 = Date.now();
  while (!(await check())) {
    expect(Date.now() - t0, 'not seen within 1 s').to.be.below(1000);
    await sleep(5);
  }
  return Date.now() - t0;
}

async function commands(r: Redis): Promise<number> {
  return Number(/total_commands_processed:(\d+)/.exec(await r.info('stats'))![1]);
}

describe('redis mode: webhook endpoint lists cached under the directory change feed', function () {
  this.timeout(30_000);
  let server: RedisServer;
  let feeds: RedisDirectoryFeed[];
  let a: RedisWebhookStore;
  let b: RedisWebhookStore;
  let probe: Redis;
  before(async () => {
    server = await startRedis();
    const channel = new Keys(PREFIX).dirChanges();
    feeds = [new RedisDirectoryFeed({ redis_url: server.url }, channel), new RedisDirectoryFeed({ redis_url: server.url }, channel)];
    await Promise.all(feeds.map((f) => f.start()));
    a = new RedisWebhookStore({ client: server.client(), prefix: PREFIX, changes: feeds[0] });
    b = new RedisWebhookStore({ client: server.client(), prefix: PREFIX, changes: feeds[1] });
    probe = server.client();
  });
  after(async () => {
    for (const f of feeds ?? []) f.close();
    await server?.stop();
  });

  const ids = async (s: RedisWebhookStore) => (await s.listEndpoints(T1)).map((e) => `${e.id}:${e.enabled}`);

  it('follows another process\'s create, disable and delete within 1 s; a cached list sends nothing', async () => {
    expect(await ids(b)).to.deep.equal([]);
    const before = await commands(probe);
    for (let i = 0; i < 20; i++) expect(await ids(b)).to.deep.equal([]);
    // The INFO of `commands` itself is the one command counted.
    expect((await commands(probe)) - before).to.equal(1);

    expect(await a.createEndpointIfUnderLimit(endpointRecord('we_1'), 5)).to.equal(true);
    const created = await within1s(async () => (await ids(b)).join() === 'we_1:true');
    expect(await a.updateEndpoint(T1, 'we_1', { enabled: false, updated_at: '2026-01-01T00:00:01.000Z' })).to.not.equal(null);
    const disabled = await within1s(async () => (await ids(b)).join() === 'we_1:false');
    expect(await a.deleteEndpoint(T1, 'we_1')).to.equal(true);
    const deleted = await within1s(async () => (await ids(b)).length === 0);
    console.log(`      seen on B after ${created}, ${disabled}, ${deleted} ms`);
  });

  it('shows a process its own writes at once', async () => {
    expect(await ids(b)).to.deep.equal([]);
    expect(await b.createEndpointIfUnderLimit(endpointRecord('we_2'), 5)).to.equal(true);
    expect(await ids(b)).to.deep.equal(['we_2:true']);
    await b.updateEndpoint(T1, 'we_2', { enabled: false, updated_at: '2026-01-01T00:00:01.000Z' });
    expect(await ids(b)).to.deep.equal(['we_2:false']);
    await b.deleteEndpoint(T1, 'we_2');
    expect(await ids(b)).to.deep.equal([]);
  });

  it('reads through while its feed is not live (subscription cut), and caches again once it is', async () => {
    expect(await ids(b)).to.deep.equal([]);
    // Every subscriber connection is cut: neither feed may vouch for a list until resubscribed.
    await probe.call('CLIENT', 'KILL', 'TYPE', 'pubsub');
    expect(feeds[1]!.live).to.equal(false);
    // A write whose announcement nobody hears: B must read it, not serve its cached [].
    await a.createEndpointIfUnderLimit(endpointRecord('we_3'), 5);
    expect(await ids(b)).to.deep.equal(['we_3:true']);
    await within1s(async () => feeds[1]!.live);
    const before = await commands(probe);
    await ids(b);
    await ids(b);
    expect((await commands(probe)) - before, 'the first list after resubscribing reads, the next is cached').to.be.at.most(3);
  });
});
