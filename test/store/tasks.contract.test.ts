import { expect } from 'chai';
import { MemoryTaskStore } from '../../engine/store/memory/tasks.ts';
import { RedisTaskStore } from '../../engine/store/redis/tasks.ts';
import type { TaskStore } from '../../engine/tasks/store.ts';
import type { TaskRecord } from '../../engine/tasks/task.ts';
import { ManualClock } from '../../engine/util/clock.ts';
import { forEachBackend, keysUnder, rejectionOf } from './support.ts';

const T = '7d3f1c2a-0000-4000-8000-000000000001';

function task(id: string, over: Partial<TaskRecord> = {}): TaskRecord {
  return {
    id,
    tenant_id: T,
    vendor: 'provider_b',
    route: 'provider_b/diffusion',
    model_name: 'diffusion-xl',
    status: 'pending',
    created_at: '2026-01-01T00:00:00.000Z',
    updated_at: '2026-01-01T00:00:00.000Z',
    request: { prompt: 'a red fox in the snow, watercolor, soft light — «détaillé» 🦊', size: '1024x1024', n: 1, seed: 9_007_199_254_740_991, tags: [], opts: {}, nested: { a: [1, { b: null }] } },
    deadline_at: Date.parse('2026-01-01T00:10:00.000Z'),
    poll_failures: 0,
    traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
    hold: 34_000,
    ...over,
  };
}

/** A finished task as the lifecycle leaves it (for the memory measurement). */
function finishedTask(id: string): TaskRecord {
  return task(id, {
    status: 'completed',
    upstream_task_id: 'up_9f8e7d6c5b4a39281706f5e4d3c2b1a0',
    request: { prompt: 'A lighthouse on a cliff at dusk, dramatic clouds, cinematic lighting, ultra detailed, 35mm photo', size: '1024x1024', n: 1, style: 'photographic' },
    result: { images: ['https://cdn.provider-b.example.com/outputs/2026/01/01/9f8e7d6c-5b4a-3928-1706-f5e4d3c2b1a0/image_0.png'] },
    updated_at: '2026-01-01T00:00:42.000Z',
    checked_at: Date.parse('2026-01-01T00:00:42.000Z'),
    poll_n: 7,
    charge: 34_000,
    finalized: true,
  });
}

forEachBackend('TaskStore contract', (env) => {
  let a: TaskStore;
  let b: TaskStore;
  let prefix: string;
  beforeEach(() => {
    ({ a, b, prefix } = env.pair<TaskStore>(() => new MemoryTaskStore(), (client, p) => new RedisTaskStore({ client, prefix: p })));
  });

  it('stores a task and reads it back by id alone, JSON-exact (empty arrays/objects, unicode, big ints)', async () => {
    const t = task('t1');
    await a.create(t);
    expect(await b.get('t1')).to.deep.equal(t);
    expect(await a.get('nope')).to.equal(undefined);
  });

  it('refuses a second task with the same id and keeps the first', async () => {
    await a.create(task('t1'));
    const err = await rejectionOf(b.create(task('t1', { model_name: 'other' })));
    expect(String(err)).to.match(/t1 exists/);
    expect((await a.get('t1'))?.model_name).to.equal('diffusion-xl');
  });

  it('transitions only from the given statuses (compare-and-set), patching top-level fields', async () => {
    await a.create(task('t1'));
    expect(await a.transition('t1', ['processing'], { status: 'completed' })).to.equal(undefined);
    expect((await a.get('t1'))?.status).to.equal('pending');
    expect(await a.transition('missing', ['pending'], { status: 'processing' })).to.equal(undefined);
    expect(await a.transition('t1', [], { status: 'processing' })).to.equal(undefined);

    const up = await b.transition('t1', ['pending', 'processing'], { status: 'processing', upstream_task_id: 'u1', poll_failures: 2, request: { prompt: 'replaced' } });
    expect(up).to.deep.equal({ ...task('t1'), status: 'processing', upstream_task_id: 'u1', poll_failures: 2, request: { prompt: 'replaced' } });
    expect(await a.get('t1')).to.deep.equal(up);

    const done = await a.transition('t1', ['processing'], { status: 'failed', error: { code: 4008, message: 'timeout' } as never, finalized: false });
    expect(done).to.include({ status: 'failed', finalized: false, upstream_task_id: 'u1' });
    expect(done?.error).to.deep.equal({ code: 4008, message: 'timeout' });
    // a late answer cannot move a finished task
    expect(await b.transition('t1', ['pending', 'processing'], { status: 'completed' })).to.equal(undefined);
    expect((await a.get('t1'))?.status).to.equal('failed');
  });

  it('update is the same compare-and-set, answering only whether it applied; finalizing by it settles the task', async () => {
    await a.create(task('t1'));
    expect(await a.update('t1', ['processing'], { status: 'completed' })).to.equal(false);
    expect(await a.update('missing', ['pending'], { status: 'processing' })).to.equal(false);
    expect(await a.update('t1', [], { status: 'processing' })).to.equal(false);
    expect(await b.update('t1', ['pending'], { status: 'processing', upstream_task_id: 'u1' })).to.equal(true);
    expect(await a.get('t1')).to.deep.equal({ ...task('t1'), status: 'processing', upstream_task_id: 'u1' });
    expect(await b.transition('t1', ['processing'], { status: 'completed', finalized: false })).to.include({ status: 'completed', upstream_task_id: 'u1' });
    expect((await a.listUnsettled(10)).map((t) => t.id)).to.deep.equal(['t1']);
    expect(await a.update('t1', ['completed'], { finalized: true })).to.equal(true);
    expect(await b.listUnsettled(10)).to.deep.equal([]);
    expect(await b.get('t1')).to.include({ status: 'completed', finalized: true });
  });

  it('a field patched to undefined is gone from the stored record', async () => {
    await a.create(task('t1', { upstream_task_id: 'u1' }));
    await a.transition('t1', ['pending'], { upstream_task_id: undefined });
    const got = await b.get('t1');
    expect(got?.upstream_task_id).to.equal(undefined);
    expect(JSON.parse(JSON.stringify(got))).to.not.have.property('upstream_task_id');
  });

  it('hands out records the caller cannot use to change the store (private copies or frozen)', async () => {
    // An adapter may return fresh copies (redis) or frozen snapshots (memory): either way,
    // writing to what it returned must never reach the stored task.
    const attempt = (write: () => void) => {
      try {
        write();
      } catch (err) {
        expect(err).to.be.instanceOf(TypeError); // a frozen snapshot refuses the write
      }
    };
    const t = task('t1');
    await a.create(t);
    (t.request as { prompt: string }).prompt = 'mutated after create';
    const got = (await a.get('t1'))!;
    attempt(() => ((got.request as { prompt: string }).prompt = 'mutated after get'));
    const moved = (await a.transition('t1', ['pending'], { status: 'processing' }))!;
    attempt(() => (moved.poll_failures = 99));
    const again = (await a.get('t1'))!;
    expect(again.request.prompt).to.equal(task('t1').request.prompt);
    expect(again.poll_failures).to.equal(0);
  });

  it('race: 20 finishers on two connections, exactly one completes the task', async () => {
    await a.create(task('t1', { status: 'processing' }));
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        (i % 2 ? a : b).transition('t1', ['pending', 'processing'], i % 3 === 0 ? { status: 'failed', finalized: false } : { status: 'completed', result: { images: [`img-${i}`] }, finalized: false }),
      ),
    );
    const winners = results.map((r, i) => (r ? i : -1)).filter((i) => i >= 0);
    expect(winners).to.have.length(1);
    const w = winners[0]!;
    const stored = (await a.get('t1'))!;
    expect(stored.status).to.equal(w % 3 === 0 ? 'failed' : 'completed');
    if (w % 3 !== 0) expect(stored.result).to.deep.equal({ images: [`img-${w}`] });
  });

  it('race: concurrent patches of different fields from two connections are all kept', async () => {
    await a.create(task('t1', { status: 'processing' }));
    await Promise.all([
      a.transition('t1', ['processing'], { poll_failures: 1 }),
      b.transition('t1', ['processing'], { upstream_task_id: 'u1' }),
      a.transition('t1', ['processing'], { checked_at: 5 }),
      b.transition('t1', ['processing'], { poll_n: 3 }),
    ]);
    expect(await a.get('t1')).to.include({ poll_failures: 1, upstream_task_id: 'u1', checked_at: 5, poll_n: 3 });
  });

  it('lists unsettled tasks oldest first: active, and terminal until finalized', async () => {
    for (const id of ['t1', 't2', 't3', 't4', 't5']) await a.create(task(id));
    await a.transition('t2', ['pending'], { status: 'completed', finalized: false });
    await b.transition('t3', ['pending'], { status: 'failed', finalized: false });
    await b.transition('t3', ['failed'], { finalized: true });
    await a.transition('t4', ['pending'], { status: 'processing' });
    expect((await b.listUnsettled(10)).map((t) => t.id)).to.deep.equal(['t1', 't2', 't4', 't5']);
    expect((await a.listUnsettled(2)).map((t) => t.id)).to.deep.equal(['t1', 't2']);
    const listed = await a.listUnsettled(10);
    expect(listed.find((t) => t.id === 't2')).to.include({ status: 'completed', finalized: false });
    await a.transition('t2', ['completed'], { finalized: true });
    await b.transition('t1', ['pending'], { status: 'failed', finalized: false });
    expect((await a.listUnsettled(10)).map((t) => t.id)).to.deep.equal(['t1', 't4', 't5']);
    expect(await a.listUnsettled(0)).to.deep.equal([]);
    // Pages: after the id of a page's last task comes the next page; an unknown id starts over.
    expect((await b.listUnsettled(2, 't1')).map((t) => t.id)).to.deep.equal(['t4', 't5']);
    expect((await b.listUnsettled(2, 't5')).map((t) => t.id)).to.deep.equal([]);
    expect((await b.listUnsettled(2, 'gone')).map((t) => t.id)).to.deep.equal(['t1', 't4']);
  });

  it('discards an active task as if never stored (a withdrawn create), never a terminal one', async () => {
    for (const id of ['t1', 't2', 't3']) await a.create(task(id));
    await a.transition('t2', ['pending'], { status: 'processing', upstream_task_id: 'u2' });
    await a.transition('t3', ['pending'], { status: 'completed', finalized: false });
    expect(await b.discard('t1')).to.equal(true);
    expect(await b.discard('t2')).to.equal(true);
    expect(await b.discard('t3')).to.equal(false);
    expect(await b.discard('missing')).to.equal(false);
    expect(await a.get('t1')).to.equal(undefined);
    expect(await a.get('t2')).to.equal(undefined);
    expect((await a.get('t3'))?.status).to.equal('completed');
    expect((await a.listUnsettled(10)).map((t) => t.id)).to.deep.equal(['t3']);
    expect(await a.discard('t1')).to.equal(false);
  });

  it('lists a full page of unsettled tasks even when many settled ones come first', async () => {
    for (let i = 0; i < 40; i++) await a.create(task(`s${String(i).padStart(2, '0')}`));
    for (let i = 0; i < 35; i++) await b.transition(`s${String(i).padStart(2, '0')}`, ['pending'], { status: 'completed', finalized: true });
    expect((await a.listUnsettled(3)).map((t) => t.id)).to.deep.equal(['s35', 's36', 's37']);
    expect(await a.listUnsettled(100)).to.have.length(5);
  });

  it('lists a tenant\'s tasks newest first, step by step from a cursor, within a creation-time range', async () => {
    const at = (i: number) => new Date(Date.parse('2026-01-01T00:00:00.000Z') + i * 1000).toISOString();
    for (let i = 0; i < 6; i++) await a.create(task(`n${i}`, { created_at: at(i) }));
    await a.create(task('other', { tenant_id: 'someone-else', created_at: at(9) }));
    const ids = (batch: { tasks: TaskRecord[] } | undefined) => batch!.tasks.map((t) => t.id);
    const first = await b.listByTenant(T, { count: 4 });
    expect(ids(first)).to.deep.equal(['n5', 'n4', 'n3', 'n2']);
    expect(first).to.include({ last: 'n2', end: false });
    const second = await b.listByTenant(T, { after: 'n2', count: 4 });
    expect(ids(second)).to.deep.equal(['n1', 'n0']);
    expect(second?.end).to.equal(true);
    expect(await b.listByTenant(T, { after: 'other', count: 4 })).to.equal(undefined); // another tenant's cursor
    expect(await b.listByTenant(T, { after: 'nope', count: 4 })).to.equal(undefined);
    const range = await a.listByTenant(T, { from: Date.parse(at(1)), to: Date.parse(at(4)), count: 10 });
    expect(ids(range)).to.deep.equal(['n3', 'n2', 'n1']);
    expect(range?.end).to.equal(true);
    expect(ids(await a.listByTenant(T, { after: 'n3', from: Date.parse(at(2)), count: 10 }))).to.deep.equal(['n2']);
    // Records are the stored ones; a discarded task leaves the listing.
    await a.transition('n4', ['pending'], { status: 'processing' });
    expect((await b.listByTenant(T, { count: 2 }))!.tasks[1]).to.include({ id: 'n4', status: 'processing' });
    expect(await b.discard('n5')).to.equal(true);
    expect(ids(await a.listByTenant(T, { count: 2 }))).to.deep.equal(['n4', 'n3']);
    expect(ids(await a.listByTenant('someone-else', { count: 10 }))).to.deep.equal(['other']);
    expect(await a.listByTenant('nobody', { count: 10 })).to.deep.equal({ tasks: [], last: undefined, end: true });
  });

  if (!env.isRedis) {
    describe('memory specifics', () => {
      it('finishedTtlMs: a finished task is forgotten after the retention period, an active or unfinalized one never', async () => {
        const clock = new ManualClock();
        const s = new MemoryTaskStore({ finishedTtlMs: 60_000, clock });
        await s.create(task('done'));
        await s.create(task('unsettled'));
        await s.create(task('active'));
        await s.transition('done', ['pending'], { status: 'completed', finalized: false });
        await s.transition('done', ['completed'], { finalized: true });
        await s.transition('unsettled', ['pending'], { status: 'failed', finalized: false });
        clock.advance(59_999);
        await s.create(task('later'));
        expect(await s.get('done')).to.have.property('status', 'completed');
        clock.advance(1);
        await s.create(task('later2'));
        expect(await s.get('done')).to.equal(undefined);
        expect((await s.listByTenant(T, { count: 10 }))!.tasks.map((t) => t.id)).not.to.include('done');
        clock.advance(3_600_000);
        await s.create(task('later3'));
        expect(await s.get('unsettled')).to.have.property('status', 'failed');
        expect(await s.get('active')).to.have.property('status', 'pending');
        expect(() => new MemoryTaskStore({ finishedTtlMs: -1 })).to.throw(/finishedTtlMs/);
      });

      it('maxFinished: past it the oldest finished task is forgotten first; active and unfinalized ones never', async () => {
        const s = new MemoryTaskStore({ maxFinished: 2 }); // no retention period: the count alone
        for (const id of ['active', 'unsettled', 'f1', 'f2', 'f3']) await s.create(task(id));
        await s.transition('unsettled', ['pending'], { status: 'failed', finalized: false });
        for (const id of ['f1', 'f2']) await s.transition(id, ['pending'], { status: 'completed', finalized: true });
        expect(await s.get('f1')).to.have.property('status', 'completed');
        await s.transition('f3', ['pending'], { status: 'failed', finalized: true });
        expect(await s.get('f1')).to.equal(undefined);
        expect((await s.listByTenant(T, { count: 10 }))!.tasks.map((t) => t.id)).to.deep.equal(['f3', 'f2', 'unsettled', 'active']);
        for (let i = 0; i < 5; i++) {
          await s.create(task(`more${i}`));
          await s.transition(`more${i}`, ['pending'], { status: 'completed', finalized: true });
        }
        expect(await s.get('f3')).to.equal(undefined);
        expect(await s.get('more4')).to.have.property('status', 'completed');
        expect(await s.get('unsettled')).to.have.property('status', 'failed');
        expect(await s.get('active')).to.have.property('status', 'pending');
        expect((await s.listUnsettled(10)).map((t) => t.id)).to.deep.equal(['active', 'unsettled']);
        expect(() => new MemoryTaskStore({ maxFinished: 0 })).to.throw(/maxKeys/);
      });

      it('maxFinished and finishedTtlMs together: whichever comes first', async () => {
        const clock = new ManualClock();
        const s = new MemoryTaskStore({ finishedTtlMs: 60_000, maxFinished: 3, clock });
        for (const id of ['a', 'b']) {
          await s.create(task(id));
          await s.transition(id, ['pending'], { status: 'completed', finalized: true });
        }
        clock.advance(60_000);
        await s.create(task('c'));
        expect(await s.get('a')).to.equal(undefined);
        expect(await s.get('b')).to.equal(undefined);
        expect(await s.get('c')).to.have.property('status', 'pending');
      });

      it('without a retention period finished tasks are kept', async () => {
        const clock = new ManualClock();
        const s = new MemoryTaskStore({ clock });
        await s.create(task('done'));
        await s.transition('done', ['pending'], { status: 'completed', finalized: true });
        clock.advance(365 * 86_400_000);
        await s.create(task('later'));
        expect(await s.get('done')).to.have.property('status', 'completed');
      });
    });
  }

  if (env.isRedis) {
    describe('redis specifics', () => {
      it('keeps each task in one self-contained key with its own hash tag, plus the unsettled and tenant indexes', async () => {
        await a.create(task('t1'));
        await a.create(task('t2'));
        await a.transition('t2', ['pending'], { status: 'completed', finalized: true });
        expect(await keysUnder(env.a, prefix)).to.deep.equal([`${prefix}tasks:unsettled`, `${prefix}{t:${T}}:tasks`, `${prefix}{task:t1}`, `${prefix}{task:t2}`]);
        expect(await env.a.zrange(`${prefix}{t:${T}}:tasks`, '0', '-1')).to.deep.equal(['t1', 't2']);
        expect(await env.a.zrange(`${prefix}tasks:unsettled`, '0', '-1')).to.deep.equal(['t1']);
        expect(await env.a.pttl(`${prefix}{task:t2}`)).to.equal(-1); // finished tasks are kept by default
      });

      it(`a finished task takes at most 2 KB of Redis memory`, async () => {
        const t = finishedTask('9f8e7d6c-5b4a-4928-9706-f5e4d3c2b1a0');
        await a.create({ ...t, status: 'processing', finalized: undefined, result: undefined });
        await a.transition(t.id, ['processing'], { status: 'completed', result: t.result, finalized: false });
        await a.transition(t.id, ['completed'], { finalized: true });
        expect(await b.get(t.id)).to.deep.equal(t);
        const bytes = Number(await env.a.call('MEMORY', 'USAGE', `${prefix}{task:${t.id}}`, 'SAMPLES', '0'));
        expect(bytes).to.be.within(1, 2048);
        expect(await env.a.zcard(`${prefix}tasks:unsettled`)).to.equal(0); // no index entry left
      });

      it('finishedTtlMs: a finished task expires, an active or unfinalized one does not', async () => {
        const s = new RedisTaskStore({ client: env.a, prefix, finishedTtlMs: 60_000 });
        await s.create(task('t1'));
        await s.transition('t1', ['pending'], { status: 'processing' });
        expect(await env.a.pttl(`${prefix}{task:t1}`)).to.equal(-1);
        await s.transition('t1', ['processing'], { status: 'completed', finalized: false });
        expect(await env.a.pttl(`${prefix}{task:t1}`)).to.equal(-1);
        await s.transition('t1', ['completed'], { finalized: true });
        expect(await env.a.pttl(`${prefix}{task:t1}`)).to.be.within(59_000, 60_000);
        expect(() => new RedisTaskStore({ client: env.a, prefix, finishedTtlMs: -1 })).to.throw(/finishedTtlMs/);
      });

      it('repairs its index: drops old orphan entries and finalized leftovers, keeps in-flight creations', async () => {
        const index = `${prefix}tasks:unsettled`;
        await a.create(task('t1'));
        await a.create(task('done', { status: 'completed', finalized: true })); // finalized but still indexed (as after a crash)
        await env.a.zadd(index, (Date.now() - 120_000) * 1000, 'orphan-old', Date.now() * 1000 + 999, 'in-flight');
        expect((await a.listUnsettled(10)).map((t) => t.id)).to.deep.equal(['t1']);
        expect((await env.a.zrange(index, '0', '-1')).sort()).to.deep.equal(['in-flight', 't1']);
      });

      it('keeps the tenant index bounded: expired tasks leave it when listed, and creates trim it past the retention', async () => {
        const index = `${prefix}{t:${T}}:tasks`;
        const s = new RedisTaskStore({ client: env.a, prefix, finishedTtlMs: 60_000 });
        const old = (Date.now() - 120_000) * 1000;
        // Entries whose task is gone: one old enough to be an expired task, one a create in flight.
        await env.a.zadd(index, old, 'expired', Date.now() * 1000 + 999, 'in-flight');
        await s.create(task('t1', { created_at: new Date().toISOString() }));
        await s.create(task('t0', { created_at: new Date(Date.now() - 180_000).toISOString() }));
        expect((await s.listByTenant(T, { count: 10 }))!.tasks.map((t) => t.id)).to.deep.equal(['t1', 't0']);
        expect((await env.a.zrange(index, '0', '-1')).sort()).to.deep.equal(['in-flight', 't0', 't1']);
        // The last entry read is the next step's cursor: even gone, it stays until a step reads past it.
        await env.a.zadd(index, (Date.now() - 240_000) * 1000, 'expired-last');
        const step = await s.listByTenant(T, { after: 't0', count: 1 });
        expect(step).to.deep.equal({ tasks: [], last: 'expired-last', end: false });
        expect(await s.listByTenant(T, { after: 'expired-last', count: 1 })).to.deep.equal({ tasks: [], last: undefined, end: true });
        // Past the retention plus a week, an entry is trimmed without being listed, by one of the
        // next 64 creates (one create in 64 trims).
        await env.a.zadd(index, (Date.now() - 60_000 - 8 * 86_400_000) * 1000, 'ancient');
        for (let i = 2; i < 66; i++) await s.create(task(`t${i}`, { created_at: new Date().toISOString() }));
        const kept = await env.a.zrange(index, '0', '-1');
        expect(kept).not.to.include('ancient');
        expect(kept).to.include.members(['expired-last', 'in-flight', 't0', 't1', 't2', 't65']);
      });

      it('reloads its scripts after SCRIPT FLUSH (a restarted or flushed Redis)', async () => {
        await a.create(task('t1'));
        expect(await a.transition('t1', ['pending'], { status: 'processing' })).to.include({ status: 'processing' });
        await env.a.script('FLUSH');
        expect(await b.transition('t1', ['processing'], { status: 'completed', finalized: false })).to.include({ status: 'completed' });
      });

      it('refuses a key prefix with hash-tag braces', () => {
        expect(() => new RedisTaskStore({ client: env.a, prefix: 'gw{x}:' })).to.throw(/must not contain/);
      });
    });
  }
});
