// A tenant's run-time limit overrides: one change signal on both stores (the directory's change
// feed; a store read by one process alone has none, and invalidate() is the signal), never a 5 s
// cache; and a store that cannot be read is the request's outage (4003), never the defaults in
// place of the tenant's own limits: at the first read or at any later one.
import { expect } from 'chai';
import { dependencyUnavailable } from '../../engine/errors/gateway-error.ts';
import type { TenantLimitsInput } from '../../engine/limits/config.ts';
import { LimitsService } from '../../engine/limits/service.ts';
import { memoryRateCounters } from '../../engine/store/memory/rate-counters.ts';
import { MemoryLimitsStore } from '../../engine/store/memory/limits.ts';

const T = 'tenant-1';
const failure = (p: unknown) => Promise.resolve(p).then(() => undefined, (e: unknown) => e);

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
  /** The feed two processes of one shared store both listen to (Redis: the directory's). */
  let feed = { live: true, generation: 0 };
  const make = (shared = true) => new LimitsService({ store, rateCounters: memoryRateCounters(), config: { concurrent_tasks: 3 }, tenantOverrides: read, ...(shared ? { changes: feed } : {}) });
  afterEach(() => {
    storeDown = false;
    saved = { concurrent_tasks: 7 };
    feed = { live: true, generation: 0 };
  });

  it('a change announced on the feed is seen by another process at its next request, not after the 5 s cache', async () => {
    const [a, b] = [make(), make()];
    expect((await b.effective(T, undefined)).concurrentTasks).to.equal(7);
    saved = { concurrent_tasks: 9 };
    a.invalidate(T); // this process's own cache, at once
    expect((await a.effective(T, undefined)).concurrentTasks).to.equal(9);
    expect((await b.effective(T, undefined)).concurrentTasks, 'cached until the feed moves').to.equal(7);
    feed.generation++; // the write's announcement (on Redis, the directory write's PUBLISH)
    expect((await b.effective(T, undefined)).concurrentTasks).to.equal(9);
  });

  it('with no feed (a store of this process alone), invalidate() is the whole signal, and a cached value answers at once', async () => {
    const a = make(false);
    expect((await a.effective(T, undefined)).concurrentTasks).to.equal(7);
    const hit = a.effective(T, undefined);
    expect(hit, 'no promise once cached').not.to.be.instanceOf(Promise);
    saved = { concurrent_tasks: 9 };
    a.invalidate(T);
    expect((await a.effective(T, undefined)).concurrentTasks).to.equal(9);
  });

  it('cached overrides are read again at most once per tenant between changes', async () => {
    const a = make();
    await a.effective(T, undefined);
    const before = reads;
    for (let i = 0; i < 50; i++) await a.effective(T, 'm');
    expect(reads - before).to.equal(0);
  });

  it('the store unreadable at the first read: the request fails 503 / 4003, not the defaults', async () => {
    const a = make();
    storeDown = true;
    const err = await failure(a.effective(T, undefined));
    expect(err).to.include({ code: 4003, status: 503 });
  });

  it('the store unreadable at a refresh after a change: 503 / 4003, never the defaults', async () => {
    const [a, b] = [make(), make()];
    expect((await b.effective(T, undefined)).concurrentTasks).to.equal(7);
    storeDown = true;
    a.invalidate(T);
    feed.generation++; // the change announced; the tenant's record cannot be read
    const err = await failure(b.effective(T, undefined));
    expect(err).to.include({ code: 4003, status: 503 });
    storeDown = false;
    expect((await b.effective(T, undefined)).concurrentTasks).to.equal(7);
  });

  it('cached overrides answer only while the feed is live and unmoved', async () => {
    const a = make();
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
  });
});
