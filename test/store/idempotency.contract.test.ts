import { expect } from 'chai';
import { IdempotencyService } from '../../engine/idempotency/service.ts';
import type { IdempotencyStore, StoredResponse } from '../../engine/idempotency/store.ts';
import { MemoryIdempotencyStore } from '../../engine/store/memory/idempotency.ts';
import { RedisIdempotencyStore } from '../../engine/store/redis/idempotency.ts';
import { ManualClock } from '../../engine/util/clock.ts';
import { forEachBackend, keysUnder } from './support.ts';

const T = 'tenant-1';
const HOUR = 3_600_000;
const PATH = '/vendors/provider_b/v1/tob/diffusion';
const res = (body: unknown): StoredResponse => ({ status: 202, headers: { 'Content-Type': 'application/json' }, body });

forEachBackend('IdempotencyStore contract', (env) => {
  let a: IdempotencyStore;
  let b: IdempotencyStore;
  let prefix: string;
  beforeEach(() => {
    ({ a, b, prefix } = env.pair<IdempotencyStore>(() => new MemoryIdempotencyStore(), (client, p) => new RedisIdempotencyStore({ client, prefix: p })));
  });

  describe('the port', () => {
    /** A claim at `now` with a lease of `leaseMs` (task id `task-<token>`), kept 24 h. */
    const c = (fingerprint: string, token: string, now: number, leaseMs: number) => ({ fingerprint, token, taskId: `task-${token}`, now, leaseMs, ttlMs: 24 * HOUR });
    const fresh = (token: string) => ({ kind: 'proceed', taskId: `task-${token}`, recovered: false });

    it('claims, blocks duplicates while in progress, refuses another fingerprint, then replays the answer', async () => {
      expect(await a.begin(T, 'k', c('fp', 'tok-1', 0, 1_000))).to.deep.equal(fresh('tok-1'));
      expect(await b.begin(T, 'k', c('fp', 'tok-2', 1, 1_000))).to.deep.equal({ kind: 'in_progress' });
      expect(await b.begin(T, 'k', c('other', 'tok-2', 1, 1_000))).to.deep.equal({ kind: 'conflict' });
      const body = { task_info: { id: 'task-1', status: 'pending' }, list: [], obj: {}, text: 'ünï "q" \n 🦊' };
      expect(await a.complete(T, 'k', 'tok-1', res(body), 100_000)).to.equal(true);
      expect(await b.begin(T, 'k', c('fp', 'tok-3', 2, 1_000))).to.deep.equal({ kind: 'replay', response: res(body) });
      expect(await b.begin(T, 'k', c('other', 'tok-3', 2, 1_000))).to.deep.equal({ kind: 'conflict' });
      expect(await a.complete(T, 'k', 'tok-1', res('again'), 100_000)).to.equal(false); // done already
      expect(await a.abandon(T, 'k', 'tok-1')).to.equal(false); // a done record is not abandoned
      expect(await a.renew(T, 'k', 'tok-1', 3, 1_000)).to.equal(false);
    });

    it('keeps keys per tenant', async () => {
      expect((await a.begin(T, 'k', c('fp', 't1', 0, 1_000))).kind).to.equal('proceed');
      expect((await b.begin('tenant-2', 'k', c('fp2', 't2', 0, 1_000))).kind).to.equal('proceed');
    });

    it('an answer expires at expiresAt (on the caller clock); then the key is free, even for another body', async () => {
      await a.begin(T, 'k', c('fp', 'tok-1', 0, 1_000));
      await a.complete(T, 'k', 'tok-1', res(1), 24 * HOUR);
      expect((await b.begin(T, 'k', c('fp', 'x', 24 * HOUR - 1, 1_000))).kind).to.equal('replay');
      expect(await b.begin(T, 'k', c('new-fp', 'tok-2', 24 * HOUR, 1_000))).to.deep.equal(fresh('tok-2'));
      expect((await a.begin(T, 'k', c('new-fp', 'tok-3', 24 * HOUR + 1, 1_000))).kind).to.equal('in_progress');
    });

    it('a claim whose lease ran out is taken over with its task id (recovered); its late owner can neither renew, complete nor abandon it', async () => {
      expect(await a.begin(T, 'k', c('fp', 'tok-1', 0, 10))).to.deep.equal(fresh('tok-1'));
      expect((await b.begin(T, 'k', c('fp', 'tok-x', 9, 10))).kind).to.equal('in_progress');
      expect(await b.begin(T, 'k', c('other', 'tok-y', 10, 10))).to.deep.equal({ kind: 'conflict' }); // still bound to its request
      expect(await b.begin(T, 'k', c('fp', 'tok-2', 10, 10))).to.deep.equal({ kind: 'proceed', taskId: 'task-tok-1', recovered: true });
      expect(await a.renew(T, 'k', 'tok-1', 11, 10)).to.equal(false);
      expect(await a.complete(T, 'k', 'tok-1', res('late'), 1_000)).to.equal(false);
      expect(await a.abandon(T, 'k', 'tok-1')).to.equal(false);
      expect(await b.complete(T, 'k', 'tok-2', res('mine'), 1_000)).to.equal(true);
      expect(await a.begin(T, 'k', c('fp', 'tok-3', 11, 10))).to.deep.equal({ kind: 'replay', response: res('mine') });
    });

    it('renewals keep the claim; a relink changes the task id a takeover finds', async () => {
      await a.begin(T, 'k', c('fp', 'tok-1', 0, 10));
      expect(await a.renew(T, 'k', 'tok-1', 8, 10)).to.equal(true); // now until 18
      expect((await b.begin(T, 'k', c('fp', 'tok-2', 17, 10))).kind).to.equal('in_progress');
      expect(await b.renew(T, 'k', 'tok-2', 17, 10)).to.equal(false);
      expect(await b.relink(T, 'k', 'tok-2', 'task-other')).to.equal(false);
      expect(await a.relink(T, 'k', 'tok-1', 'task-relinked')).to.equal(true);
      expect(await b.begin(T, 'k', c('fp', 'tok-2', 18, 10))).to.deep.equal({ kind: 'proceed', taskId: 'task-relinked', recovered: true });
    });

    it('a slow owner whose lease ran out may still complete while nobody took over', async () => {
      await a.begin(T, 'k', c('fp', 'tok-1', 0, 10));
      expect(await a.complete(T, 'k', 'tok-1', res('slow'), 1_000)).to.equal(true);
      expect((await b.begin(T, 'k', c('fp', 'tok-2', 500, 10))).kind).to.equal('replay');
    });

    it('abandon drops only its own in-progress claim; the key is free again', async () => {
      await a.begin(T, 'k', c('fp', 'tok-1', 0, 1_000));
      expect(await b.abandon(T, 'k', 'tok-other')).to.equal(false);
      expect(await b.abandon(T, 'k', 'tok-1')).to.equal(true);
      expect(await a.abandon(T, 'k', 'tok-1')).to.equal(false);
      expect(await a.complete(T, 'k', 'tok-1', res(1), 1_000)).to.equal(false);
      expect(await a.begin(T, 'k', c('other-fp', 'tok-2', 1, 1_000))).to.deep.equal(fresh('tok-2'));
      expect(await a.abandon(T, 'nope', 'tok-2')).to.equal(false);
    });

    it('race: 20 claims of one key on two connections, exactly one proceeds; 20 takeovers of a dead claim, exactly one', async () => {
      const rs = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? a : b).begin(T, 'k', c('fp', `tok-${i}`, 5, 1_000))));
      expect(rs.filter((r) => r.kind === 'proceed')).to.have.length(1);
      expect(rs.filter((r) => r.kind === 'in_progress')).to.have.length(19);
      const later = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? a : b).begin(T, 'k', c('fp', `late-${i}`, 2_000, 1_000))));
      expect(later.filter((r) => r.kind === 'proceed' && r.recovered)).to.have.length(1);
      expect(later.filter((r) => r.kind === 'in_progress')).to.have.length(19);
    });
  });

  describe('IdempotencyService over the adapter (two processes)', () => {
    const req = (key: string | undefined, body: unknown = { prompt: 'a cat' }) => ({ tenantId: T, key, method: 'POST', path: PATH, body });

    it('concurrent duplicates through two services: exactly one runs, the others replay its answer', async () => {
      const clock = new ManualClock();
      const s1 = new IdempotencyService({ store: a, clock, pollMs: 1, waitMs: 5_000 });
      const s2 = new IdempotencyService({ store: b, clock, pollMs: 1, waitMs: 5_000 });
      let runs = 0;
      const handler = async (): Promise<StoredResponse> => {
        runs++;
        await new Promise((r) => setTimeout(r, 20));
        return res({ task_info: { id: `task-${runs}` } });
      };
      const results = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 ? s1 : s2).run(req('k1'), handler)));
      expect(runs).to.equal(1);
      expect(results.filter((r) => !r.replayed)).to.have.length(1);
      expect(new Set(results.map((r) => JSON.stringify(r.response.body)))).to.deep.equal(new Set([JSON.stringify({ task_info: { id: 'task-1' } })]));
    });

    it('replays for 24 h after the answer, then runs again; failures are not stored', async () => {
      const clock = new ManualClock();
      const svc = new IdempotencyService({ store: a, clock, pollMs: 1, waitMs: 100 });
      let runs = 0;
      const ok = async () => res({ n: ++runs });
      const declined = await svc.run(req('k1'), async () => ({ status: 402, headers: {}, body: { n: ++runs } }));
      expect(declined.replayed).to.equal(false);
      expect((await svc.run(req('k1'), ok)).replayed).to.equal(false);
      clock.advance(24 * HOUR - 1);
      expect((await svc.run(req('k1'), ok)).response.body).to.deep.equal({ n: 2 });
      clock.advance(1);
      expect((await svc.run(req('k1'), ok)).replayed).to.equal(false);
      expect(runs).to.equal(3);
    });
  });

  if (env.isRedis) {
    describe('redis specifics', () => {
      it('one hash per (tenant, key) under the tenant tag; Redis TTLs follow the record (24 h) and the answer expiry', async () => {
        await a.begin(T, 'Key-1', { fingerprint: 'fp', token: 'tok', taskId: 't', now: 1_000, leaseMs: 10_000, ttlMs: 24 * HOUR });
        const key = `${prefix}{t:${T}}:idem:Key-1`;
        expect(await keysUnder(env.a, prefix)).to.deep.equal([key]);
        expect(await env.a.pttl(key)).to.be.within(24 * HOUR - 1_000, 24 * HOUR); // in progress: bound to its request
        await a.complete(T, 'Key-1', 'tok', res(1), 1_000 + HOUR);
        expect(await env.a.pttl(key)).to.be.within(HOUR - 1_000, HOUR);
      });

      it('expired records leave Redis by themselves', async () => {
        await a.begin(T, 'short', { fingerprint: 'fp', token: 'tok', taskId: 't', now: 0, leaseMs: 10, ttlMs: HOUR });
        await a.complete(T, 'short', 'tok', res(1), 30); // expires 30 ms after the claim
        await a.begin(T, 'kept', { fingerprint: 'fp', token: 'tok', taskId: 't', now: 0, leaseMs: 10, ttlMs: HOUR });
        await a.complete(T, 'kept', 'tok', res(1), HOUR);
        await new Promise((r) => setTimeout(r, 80));
        expect(await keysUnder(env.a, prefix)).to.deep.equal([`${prefix}{t:${T}}:idem:kept`]);
      });
    });
  }
});
