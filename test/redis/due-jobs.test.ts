// The task timers' scheduler on a real redis-server (engine/store/redis/due-jobs.ts): a job runs
// once when due, is not added twice under one id, comes back after its lease when the process
// that claimed it is gone (kill -9 is the lease running out: nobody renews it), is retried after a
// handler throws, is never run by an `api` process, and counts in stats(); on a one-node Cluster
// its one key raises no CROSSSLOT. Whole processes killed mid-poll: test/redis/crash.test.ts.
import { expect } from 'chai';
import { RedisDueJobScheduler } from '../../engine/store/redis/due-jobs.ts';
import { startRedis, type RedisServer } from '../helpers/redis.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(check: () => boolean | Promise<boolean>, ms = 5000): Promise<void> {
  for (const end = Date.now() + ms; !(await check()); await sleep(10)) if (Date.now() > end) throw new Error('timed out');
}

for (const cluster of [false, true]) {
  describe(`redis due-time job scheduler${cluster ? ' (one-node Cluster)' : ''}`, function () {
    this.timeout(20_000);
    let redis: RedisServer;
    const open: RedisDueJobScheduler[] = [];
    let n = 0;

    before(async () => {
      redis = await startRedis({ cluster });
    });
    after(async () => {
      await redis.stop();
    });
    afterEach(async () => {
      await Promise.all(open.splice(0).map((s) => s.close(100)));
    });

    /** A scheduler on a connection of its own, once it is up (as the gateway's is before serving). */
    async function scheduler(opts: { runWorkers?: boolean; leaseMs?: number; prefix?: string } = {}): Promise<RedisDueJobScheduler> {
      const client = redis.client();
      await client.ping();
      const s = new RedisDueJobScheduler({ client, prefix: opts.prefix ?? `dj${n}:`, runWorkers: opts.runWorkers ?? true, leaseMs: opts.leaseMs ?? 1000 });
      open.push(s);
      return s;
    }

    beforeEach(() => {
      n++;
    });

    it('runs a job once when due, with its payload, and removes it', async () => {
      const s = await scheduler();
      const runs: unknown[] = [];
      const t0 = Date.now();
      let at = 0;
      s.handle('q', async (p) => {
        runs.push(p);
        at = Date.now() - t0;
      });
      await s.schedule('q', 'j1', { id: 'a', n: 1 }, 300);
      await s.schedule('q', 'j1', { id: 'a', n: 1 }, 0); // the same job: not added twice
      await until(() => runs.length === 1);
      expect(at).to.be.at.least(280).and.below(2800); // its own due time, not the 3 s round
      await sleep(400);
      expect(runs).to.deep.equal([{ id: 'a', n: 1 }]);
      await until(async () => (await redis.client().zcard(`dj${n}:{jobs}:due`)) === 0);
    });

    it('runs a job claimed by a process that died once its lease ran out, in another process', async () => {
      const prefix = `dj${n}:`;
      const dying = await scheduler({ prefix, leaseMs: 600 });
      let started = 0;
      let claimedAt = 0;
      // The handler never returns: the process is as good as killed mid-job (no renewal either).
      dying.handle('q', () => {
        started++;
        claimedAt = Date.now();
        void dying.close(0);
        return new Promise<void>(() => {});
      });
      await dying.schedule('q', 'j', { id: 'x' }, 0);
      await until(() => started === 1);
      const other = await scheduler({ prefix, leaseMs: 600 });
      const runs: string[] = [];
      let ranAt = 0;
      other.handle('q', async (p) => {
        ranAt = Date.now();
        runs.push(String(p.id));
      });
      await until(() => runs.length === 1, 8000);
      // Not before the lease (600 ms from the claim, which came just before the dying handler
      // started) ran out; timed from that start, not from this line, which a busy machine may
      // reach late.
      expect(ranAt - claimedAt).to.be.at.least(300);
      expect(runs).to.deep.equal(['x']);
    });

    it('keeps renewing the lease of a long job, so nobody else runs it meanwhile', async () => {
      const prefix = `dj${n}:`;
      const a = await scheduler({ prefix, leaseMs: 1200 });
      const b = await scheduler({ prefix, leaseMs: 1200 });
      let runs = 0;
      const slow = async () => {
        runs++;
        await sleep(4000); // over three leases
      };
      a.handle('q', slow);
      b.handle('q', slow);
      await a.schedule('q', 'long', {}, 0);
      await sleep(4500);
      expect(runs).to.equal(1);
    });

    it('retries a job whose handler threw, after a back-off', async () => {
      const s = await scheduler();
      let tries = 0;
      s.handle('q', async () => {
        if (++tries < 3) throw new Error('not yet');
      });
      await s.schedule('q', 'flaky', {}, 0);
      await until(() => tries === 3, 8000);
      await until(async () => (await redis.client().zcard(`dj${n}:{jobs}:due`)) === 0);
    });

    it('an api process schedules but never runs; stats count what waits', async () => {
      const prefix = `dj${n}:`;
      const api = await scheduler({ prefix, runWorkers: false });
      let ran = false;
      api.handle('q', async () => void (ran = true));
      await api.schedule('q', 'now', {}, 0);
      await api.schedule('q', 'later', {}, 60_000);
      await sleep(300);
      expect(ran).to.equal(false);
      const [q] = await api.stats();
      expect(q).to.include({ queue: 'q', due: 1, delayed: 1 });
      const worker = await scheduler({ prefix });
      worker.handle('q', async () => void (ran = true));
      await until(() => ran);
    });

    it('refuses to schedule at once while its connection is down (503 / 4003)', async () => {
      const client = redis.client();
      await client.ping();
      const s = new RedisDueJobScheduler({ client, prefix: `dj${n}:`, runWorkers: false, leaseMs: 1000 });
      client.disconnect();
      await until(() => client.status !== 'ready');
      const err = await s.schedule('q', 'x', {}, 0).then(() => undefined, (e: unknown) => e);
      expect(err).to.have.property('code', 4003);
      await s.close(0);
    });
  });
}
