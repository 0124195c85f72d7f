// Billing of asynchronous tasks through the real HTTP surface: holds at creation, exact
// settlement on success, full release on failure and on the 4008 safety net, 402 with no task
// and no hold, Idempotency-Key, concurrency, and the ledger invariant after every test.
import { expect } from 'chai';
import type { Gateway } from '../../engine/gateway.ts';
import { call, newTenant, startTestGateway, waitForFinalized, waitForTask } from '../helpers/gateway.ts';
import { checkedTenants } from '../helpers/tenants.ts';

const IMAGES = '/vendors/provider_b/v1/tob/diffusion';
const VIDEOS = '/vendors/provider_b/v1/tob/video-diffusion';

describe('task billing through the gateway', () => {
  let gw: Gateway;
  const tenant = checkedTenants(() => gw);
  before(async () => {
    gw = await startTestGateway({ only: ['provider_b'] });
  });
  after(() => gw.close());
  const wallet = (id: string) => gw.billing.getWallet(id);

  // request → credits settled, from the spec's USD prices at 100 credits per USD.
  const table: Array<[string, string, Record<string, unknown>, number, number]> = [
    ['image fast: 4 images x 0.085', IMAGES, { prompt: 'a fox' }, 34_000, 34_000],
    ['image turbo: 4 x 0.17', IMAGES, { prompt: 'a fox --turbo' }, 68_000, 68_000],
    ['image draft fast: 4 x 0.0425', IMAGES, { prompt: 'a fox --draft' }, 17_000, 17_000],
    ['image draft turbo: 4 x 0.085', IMAGES, { prompt: 'a fox --draft --turbo' }, 34_000, 34_000],
    ['video 480p fast: 0.51', VIDEOS, { prompt: 'https://x.example/a.png go', video_type: 0 }, 51_000, 51_000],
    ['video 480p turbo: 1.02', VIDEOS, { prompt: 'https://x.example/a.png go --turbo', video_type: 0 }, 102_000, 102_000],
    ['video 720p fast: 1.632', VIDEOS, { prompt: 'https://x.example/a.png go', video_type: 1 }, 163_200, 163_200],
    ['video 720p turbo: 3.264', VIDEOS, { prompt: 'https://x.example/a.png go --turbo', video_type: 1 }, 326_400, 326_400],
  ];
  for (const [name, path, body, hold, settle] of table) {
    it(`holds then settles the exact price: ${name}`, async () => {
      const { tenant: t, key } = await tenant({ credits: 1000 });
      const created = await call(gw.url, 'POST', path, { key, body });
      expect(created.status).to.equal(202);
      expect((await wallet(t.id)).held).to.equal(hold);
      const done = await waitForTask(gw.url, `${path}/${created.body.task_info.id}`, key);
      expect(done.body.task_info.status).to.equal('completed');
      await waitForFinalized(gw, created.body.task_info.id);
      const w = await wallet(t.id);
      expect(w.held).to.equal(0);
      expect(w.balance).to.equal(1_000_000 - settle);
      const { entries } = await gw.billing.listLedger(t.id);
      expect(entries.map((e) => [e.kind, e.amount, e.ref])).to.deep.include.members([
        ['hold', hold, created.body.task_info.id],
        ['settle', settle, created.body.task_info.id],
      ]);
    });
  }

  it('a failed task and a task cut by the safety net are never billed', async () => {
    const { tenant: t, key } = await tenant({ credits: 1000 });
    for (const prompt of ['x [sandbox:fail]', 'x [sandbox:hang]', 'x [sandbox:reject]']) {
      const created = await call(gw.url, 'POST', IMAGES, { key, body: { prompt } });
      const done = await waitForTask(gw.url, `${IMAGES}/${created.body.task_info.id}`, key);
      expect(done.body.task_info.status).to.equal('failed');
    }
    const w = await wallet(t.id);
    expect([w.balance, w.held]).to.deep.equal([1_000_000, 0]);
    const kinds = (await gw.billing.listLedger(t.id)).entries.map((e) => e.kind);
    expect(kinds.filter((k) => k === 'release')).to.have.length(3);
    expect(kinds).not.to.include('settle');
  });

  it('insufficient balance → 402 / 1003, no task, no hold', async () => {
    const { tenant: t, key } = await tenant({ credits: 33 }); // an image task holds 34 credits
    const before = (await gw.billing.listLedger(t.id)).entries.length;
    const r = await call(gw.url, 'POST', IMAGES, { key, body: { prompt: 'a fox' } });
    expect(r.status).to.equal(402);
    expect(r.body.error_code).to.equal(1003);
    expect(r.body.title).to.equal('Insufficient Balance');
    expect(r.body.detail).to.match(/34\.00 credits.*33\.00 are available/);
    expect((await gw.billing.listLedger(t.id)).entries.length).to.equal(before);
    expect((await wallet(t.id)).held).to.equal(0);
    expect(await gw.limits.activeTasks(t.id)).to.equal(0);
  });

  it('a hold whose task was never stored (a process died in between) is released by the sweep', async () => {
    const { tenant: t } = await tenant({ credits: 100 });
    const orphan = '9b2f0c1e-4a57-4c43-9d5e-000000000001';
    // The product's path up to the task's write: the slot with the hold's spend, then the hold.
    await gw.limits.acquireTask(t.id, orphan, 34_000);
    await gw.billing.hold(t.id, orphan, 34_000, '', { spendReserved: true });
    expect((await wallet(t.id)).held).to.equal(34_000);
    // The sweep releases the hold, then the task slot (two store calls): wait for both.
    for (const deadline = Date.now() + 5000; (await wallet(t.id)).held !== 0 || (await gw.limits.activeTasks(t.id)) !== 0; ) {
      if (Date.now() > deadline) throw new Error('the orphaned hold and its task slot were not released');
      await new Promise((r) => setTimeout(r, 20));
    }
    const mine = (await gw.billing.listLedger(t.id)).entries.filter((e) => e.ref === orphan);
    expect(mine.map((e) => [e.kind, e.amount, e.note])).to.deep.equal([['release', 34_000, 'orphaned: the task was never stored'], ['hold', 34_000, '']]);
    // A hold of a task that exists is left alone, however old.
    const { tenant: t2, key } = await tenant({ credits: 100 });
    const created = await call(gw.url, 'POST', IMAGES, { key, body: { prompt: 'x [sandbox:hang]' } });
    await new Promise((r) => setTimeout(r, 300)); // several sweeps, each past the grace period
    expect((await gw.tasks.get(created.body.task_info.id))!.status).to.equal('processing');
    expect((await wallet(t2.id)).held).to.equal(34_000);
  });

  it('the tenant reads its own balance and ledger with its key', async () => {
    const { key } = await tenant({ credits: 500 });
    const created = await call(gw.url, 'POST', IMAGES, { key, body: { prompt: 'a fox' } });
    await waitForTask(gw.url, `${IMAGES}/${created.body.task_info.id}`, key);
    const balance = await call(gw.url, 'GET', '/v1/balance', { key });
    expect(balance.status).to.equal(200);
    expect(balance.body).to.include({ currency: 'credits', available: '466.00', held: '0.00', state: 'NORMAL', available_milli: 466_000 });
    const ledger = await call(gw.url, 'GET', '/v1/ledger?limit=2', { key });
    expect(ledger.body.data.map((e: { kind: string; amount: string }) => [e.kind, e.amount])).to.deep.equal([['settle', '34.000'], ['hold', '34.000']]);
    expect(ledger.body.next_cursor).to.be.a('string');
    const page2 = await call(gw.url, 'GET', `/v1/ledger?limit=2&cursor=${ledger.body.next_cursor}`, { key });
    expect(page2.body.data.map((e: { kind: string }) => e.kind)).to.deep.equal(['topup']);
  });

  // A client that sees its task terminal (GET, the webhook) and submits another at once must get
  // the slot back: the slot is free before the terminal state is written. Checked at the write
  // itself (the store's compare-and-set, wrapped: the lifecycle waits on the check before its
  // next step), so the order is tested, not the timing.
  it('a task\'s concurrent-task slot is free when its terminal state is written: completed, failed, cancelled', async () => {
    const { tenant: t, key } = await tenant({ credits: 1000 });
    const seen: Array<[string, number]> = [];
    const store = gw.tasks;
    const { update, transition } = store;
    const own = Object.hasOwn(store, 'update');
    // Only this tenant's tasks (the safety net may end an earlier test's task meanwhile).
    const check = async (id: string, patch: { status?: string }, applied: unknown) => {
      if (!applied || (patch.status !== 'completed' && patch.status !== 'failed')) return;
      if ((await store.get(id))?.tenant_id === t.id) seen.push([patch.status, await gw.limits.activeTasks(t.id)]);
    };
    store.update = async (id, from, patch) => {
      const applied = await update.call(store, id, from, patch);
      await check(id, patch, applied);
      return applied;
    };
    store.transition = async (id, from, patch) => {
      const applied = await transition.call(store, id, from, patch);
      await check(id, patch, applied);
      return applied;
    };
    try {
      for (const prompt of ['a fox', 'a fox [sandbox:fail]']) {
        const created = await call(gw.url, 'POST', IMAGES, { key, body: { prompt } });
        await waitForTask(gw.url, `${IMAGES}/${created.body.task_info.id}`, key);
      }
      const hung = await call(gw.url, 'POST', IMAGES, { key, body: { prompt: 'x [sandbox:hang]' } });
      expect((await call(gw.url, 'POST', `${IMAGES}/${hung.body.task_info.id}/cancel`, { key })).status).to.equal(200);
    } finally {
      if (own) Object.assign(store, { update, transition });
      else for (const m of ['update', 'transition'] as const) delete (store as Partial<typeof store>)[m];
    }
    expect(seen).to.deep.equal([['completed', 0], ['failed', 0], ['failed', 0]]);
  });

  describe('Idempotency-Key', () => {
    it('a sequential retry replays the first answer: one task, one hold', async () => {
      const { tenant: t, key } = await tenant({ credits: 1000 });
      const headers = { 'idempotency-key': 'order-42' };
      const first = await call(gw.url, 'POST', IMAGES, { key, body: { prompt: 'a fox' }, headers });
      const second = await call(gw.url, 'POST', IMAGES, { key, body: { prompt: 'a fox' }, headers });
      expect(second.status).to.equal(202);
      expect(second.body).to.deep.equal(first.body);
      expect(second.headers.get('idempotent-replayed')).to.equal('true');
      const holds = (await gw.billing.listLedger(t.id)).entries.filter((e) => e.kind === 'hold');
      expect(holds).to.have.length(1);
    });

    it('concurrent duplicates create one task and one hold', async () => {
      const { tenant: t, key } = await tenant({ credits: 1000 });
      const headers = { 'idempotency-key': 'burst-1' };
      const answers = await Promise.all(Array.from({ length: 10 }, () => call(gw.url, 'POST', IMAGES, { key, body: { prompt: 'a fox' }, headers })));
      expect(new Set(answers.map((a) => a.status))).to.deep.equal(new Set([202]));
      expect(new Set(answers.map((a) => a.body.task_info.id)).size).to.equal(1);
      expect((await gw.billing.listLedger(t.id)).entries.filter((e) => e.kind === 'hold')).to.have.length(1);
    });

    it('the same key with another body → 409; another tenant may use the same key', async () => {
      const { key } = await tenant({ credits: 1000 });
      const headers = { 'idempotency-key': 'k-1' };
      expect((await call(gw.url, 'POST', IMAGES, { key, body: { prompt: 'a fox' }, headers })).status).to.equal(202);
      const changed = await call(gw.url, 'POST', IMAGES, { key, body: { prompt: 'a wolf' }, headers });
      expect(changed.status).to.equal(409);
      expect(changed.body.error_code).to.equal(2000);
      expect(changed.body.title).to.equal('Conflict');
      const { key: other } = await tenant({ credits: 1000 });
      expect((await call(gw.url, 'POST', IMAGES, { key: other, body: { prompt: 'a wolf' }, headers })).status).to.equal(202);
    });

    it('a refused create (402) does not burn the key: after a top-up the retry creates the task', async () => {
      const { tenant: t, key } = await tenant({ credits: 10 });
      const headers = { 'idempotency-key': 'after-topup' };
      expect((await call(gw.url, 'POST', IMAGES, { key, body: { prompt: 'a fox' }, headers })).status).to.equal(402);
      await gw.billing.topUp(t.id, 100_000, 'pay-2');
      const r = await call(gw.url, 'POST', IMAGES, { key, body: { prompt: 'a fox' }, headers });
      expect(r.status).to.equal(202);
      expect(r.headers.get('idempotent-replayed')).to.equal(null);
    });
  });

  it('many tasks completing and failing in parallel, with duplicate completion signals: each settled or released once', async () => {
    const { tenant: t, key } = await tenant({ credits: 100_000 });
    const prompts = Array.from({ length: 40 }, (_, i) => (i % 3 === 0 ? `p${i} [sandbox:fail]` : `p${i}`));
    const created = await Promise.all(prompts.map((prompt) => call(gw.url, 'POST', IMAGES, { key, body: { prompt } })));
    const ids: string[] = created.map((c) => c.body.task_info.id);
    // Duplicate signals: polls, deadlines and submits replayed at every task while they run.
    await Promise.all(ids.flatMap((id, i) => [gw.lifecycle.poll(id, 1000 + i), gw.lifecycle.poll(id, 2000 + i), gw.lifecycle.submit(id)]));
    const done = await Promise.all(ids.map((id) => waitForTask(gw.url, `${IMAGES}/${id}`, key)));
    await Promise.all(ids.flatMap((id, i) => [gw.lifecycle.poll(id, 3000 + i), gw.lifecycle.deadline(id)]));
    await Promise.all(ids.map((id) => waitForFinalized(gw, id)));
    const entries = (await gw.billing.listLedger(t.id, { limit: 200 })).entries;
    for (const [i, id] of ids.entries()) {
      const mine = entries.filter((e) => e.ref === id).map((e) => e.kind).sort();
      expect(mine, id).to.deep.equal(done[i]!.body.task_info.status === 'completed' ? ['hold', 'settle'] : ['hold', 'release']);
    }
    // The 14 `[sandbox:fail]` tasks fail; the others complete, unless a loaded machine holds one past
    // its 600 ms safety net (max_execution_ms at this timing scale), which fails it with 4008:
    // released, never billed, so the balance follows the outcomes the client saw.
    const failed = done.map((d, i) => ({ status: d.body.task_info.status, code: d.body.task_info.error?.code, willFail: prompts[i]!.includes('[sandbox:fail]') }));
    expect(failed.filter((f) => f.willFail && f.status === 'failed')).to.have.length(14);
    const cut = failed.filter((f) => !f.willFail && f.status === 'failed');
    expect(cut.filter((f) => f.code !== 4008), 'only the safety net fails a task that would succeed').to.deep.equal([]);
    const w = await wallet(t.id);
    expect(w.held).to.equal(0);
    expect(w.balance).to.equal(100_000_000 - (40 - 14 - cut.length) * 34_000);
    expect(await gw.limits.activeTasks(t.id)).to.equal(0);
  });
});

describe('limits through the gateway', () => {
  let gw: Gateway;
  after(() => gw?.close());

  it('a burst above the per-key rate gets 429 / 1004 with Retry-After; requests under it are never refused', async () => {
    gw = await startTestGateway({
      only: ['provider_b'],
      yaml: `limits:
  rate:
    key: { per_second: 5, per_minute: null, per_day: null }
    tenant: { per_second: null, per_minute: null, per_day: null }
    model: { per_second: null, per_minute: null, per_day: null }
  concurrent_tasks: 3
  daily_spend_credits: null`,
    });
    const { key } = await newTenant(gw);
    // Rate windows are aligned to the clock's seconds: start the burst early in one.
    await new Promise((r) => setTimeout(r, 1000 - (Date.now() % 1000) + 5));
    const burst = await Promise.all(Array.from({ length: 12 }, () => call(gw.url, 'GET', `${IMAGES}/9b2f0c1e-4a57-4c43-9d5e-6f1f4b1c2a3d`, { key })));
    const statuses = burst.map((r) => r.status);
    expect(statuses.filter((s) => s === 404)).to.have.length(5);
    const limited = burst.filter((r) => r.status === 429);
    expect(limited).to.have.length(7);
    for (const r of limited) {
      expect(r.body.error_code).to.equal(1004);
      expect(Number(r.headers.get('retry-after'))).to.be.within(1, 1);
    }
  });

  it("a tenant's own limits, set at run time through the admin API, apply at once", async () => {
    const { tenant: t, key } = await newTenant(gw);
    const put = await call(gw.url, 'PUT', `/admin/v1/tenants/${t.id}/limits`, { key: 'test-admin-token', body: { concurrent_tasks: 1 } });
    expect(put.status).to.equal(200);
    expect(put.body.concurrent_tasks).to.equal(1);
    await new Promise((r) => setTimeout(r, 1000 - (Date.now() % 1000) + 5)); // a fresh rate window
    expect((await call(gw.url, 'POST', IMAGES, { key, body: { prompt: 'one [sandbox:hang]' } })).status).to.equal(202);
    const second = await call(gw.url, 'POST', IMAGES, { key, body: { prompt: 'two' } });
    expect(second.status).to.equal(429);
    expect(second.body.error_code).to.equal(1005);
    expect(second.body.detail).to.match(/at most 1 asynchronous task/);
    const bad = await call(gw.url, 'PUT', `/admin/v1/tenants/${t.id}/limits`, { key: 'test-admin-token', body: { concurrent_tasks: -1 } });
    expect([bad.status, bad.body.error_code]).to.deep.equal([400, 2003]);
  });

  it('concurrent active tasks above the quota → 429 / 1005; a finished task frees its slot', async () => {
    const { key } = await newTenant(gw);
    await new Promise((r) => setTimeout(r, 1000 - (Date.now() % 1000) + 5)); // a fresh rate window
    const held = await Promise.all([0, 1, 2].map((i) => call(gw.url, 'POST', IMAGES, { key, body: { prompt: `slot ${i} [sandbox:hang]` } })));
    expect(held.map((r) => r.status)).to.deep.equal([202, 202, 202]);
    const fourth = await call(gw.url, 'POST', IMAGES, { key, body: { prompt: 'one too many' } });
    expect(fourth.status).to.equal(429);
    expect(fourth.body.error_code).to.equal(1005);
    expect(fourth.headers.get('retry-after')).to.match(/^\d+$/);
    // The safety net ends the first one (read from the store: the key's rate is only 5/s).
    for (let t = await gw.tasks.get(held[0]!.body.task_info.id); t!.status !== 'failed'; t = await gw.tasks.get(t!.id)) await new Promise((r) => setTimeout(r, 20));
    await new Promise((r) => setTimeout(r, 1100));
    expect((await call(gw.url, 'POST', IMAGES, { key, body: { prompt: 'now it fits' } })).status).to.equal(202);
  });
});
