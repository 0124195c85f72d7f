// A tenant's run-time limit overrides: a change made through any LimitsService sharing the store
// reaches the others within overridesCheckMs (the shared version, not a 5 s cache), and a store
// that cannot be read is the request's outage (4003), never the defaults in place of the
// tenant's own limits: at the first read or at any later one.
import { expect } from 'chai';
import { dependencyUnavailable } from '../../engine/errors/gateway-error.ts';
import type { TenantLimitsInput } from '../../engine/limits/config.ts';
import { LimitsService } from '../../engine/limits/service.ts';
import { memoryRateCounters } from '../../engine/store/memory/rate-counters.ts';
import { MemoryLimitsStore } from '../../engine/store/memory/limits.ts';

const T = 'tenant-1';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('limits: run-time overrides', () => {
  const store = new MemoryLimitsStore();
  let saved: TenantLimitsInput | undefined = { concurrent_tasks: 7 };
  let storeDown = false;
  let reads = 0;
  const read = async () => {
    reads++;
    if (storeDown) throw dependencyUnavailable('store');
    return saved;
  };
  const services: LimitsService[] = [];
  const make = () => {
    const s = new LimitsService({ store, rateCounters: memoryRateCounters, config: { concurrent_tasks: 3 }, tenantOverrides: read, overridesCheckMs: 50 });
    services.push(s);
    return s;
  };
  afterEach(() => {
    for (const s of services.splice(0)) s.close();
    storeDown = false;
    saved = { concurrent_tasks: 7 };
  });

  it('a change through one service is seen by another within its check interval, not after the 5 s cache', async () => {
    const [a, b] = [make(), make()];
    await sleep(60);
    expect((await b.effective(T, undefined)).concurrentTasks).to.equal(7);
    saved = { concurrent_tasks: 9 };
    await a.invalidate(T);
    const t0 = Date.now();
    while ((await b.effective(T, undefined)).concurrentTasks !== 9) {
      expect(Date.now() - t0, 'seen within 1 s').to.be.below(1000);
      await sleep(10);
    }
    expect(Date.now() - t0).to.be.below(200);
  });

  it('cached overrides are read again at most once per tenant between changes', async () => {
    const a = make();
    await sleep(60);
    await a.effective(T, undefined);
    const before = reads;
    for (let i = 0; i < 50; i++) await a.effective(T, 'm');
    expect(reads - before).to.equal(0);
  });

  it('the store unreadable at the first read: the request fails 503 / 4003, not the defaults', async () => {
    const a = make();
    storeDown = true;
    const err = await a.effective(T, undefined).then(() => undefined, (e: unknown) => e);
    expect(err).to.include({ code: 4003, status: 503 });
  });

  it('the store unreadable at a refresh after a change: 503 / 4003, never the defaults', async () => {
    const [a, b] = [make(), make()];
    await sleep(60);
    expect((await b.effective(T, undefined)).concurrentTasks).to.equal(7);
    storeDown = true;
    await a.invalidate(T); // the version store still answers; the tenant's record does not
    await sleep(120);
    const err = await b.effective(T, undefined).then(() => undefined, (e: unknown) => e);
    expect(err).to.include({ code: 4003, status: 503 });
    storeDown = false;
    expect((await b.effective(T, undefined)).concurrentTasks).to.equal(7);
  });

  it('the version unreadable for over a second: cached overrides are not trusted, and read again', async () => {
    const flaky = new MemoryLimitsStore();
    let versionDown = false;
    flaky.overridesVersion = async () => {
      if (versionDown) throw dependencyUnavailable('store');
      return 0;
    };
    const a = new LimitsService({ store: flaky, rateCounters: memoryRateCounters, config: {}, tenantOverrides: read, overridesCheckMs: 50 });
    services.push(a);
    await sleep(60);
    await a.effective(T, undefined);
    versionDown = true;
    storeDown = true;
    await sleep(1100);
    const err = await a.effective(T, undefined).then(() => undefined, (e: unknown) => e);
    expect(err).to.include({ code: 4003 });
  });

  it('with a change feed: no version reads; cached overrides answer only while the feed is live and unmoved', async () => {
    const feed = { live: true, generation: 0 };
    const versioned = new MemoryLimitsStore();
    let versionReads = 0;
    versioned.overridesVersion = async () => ++versionReads;
    const a = new LimitsService({ store: versioned, rateCounters: memoryRateCounters, config: {}, tenantOverrides: read, changes: feed, overridesCheckMs: 10 });
    services.push(a);
    await a.effective(T, undefined);
    const before = reads;
    await a.effective(T, undefined);
    expect(reads - before, 'cached').to.equal(0);
    feed.generation++; // a directory change announced
    await a.effective(T, undefined);
    expect(reads - before, 'read again after the feed moved').to.equal(1);
    feed.live = false; // the feed silent: every request reads
    await a.effective(T, undefined);
    await a.effective(T, undefined);
    expect(reads - before).to.equal(3);
    feed.live = true; // back with no message missed (a lost subscription moves the generation too)
    await a.effective(T, undefined);
    expect(reads - before, 'the entry cached before answers again').to.equal(3);
    await sleep(50);
    expect(versionReads, 'the version is never polled').to.equal(0);
  });
});
