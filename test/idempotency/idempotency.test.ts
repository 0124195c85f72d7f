import { expect } from 'chai';
import { GatewayError } from '../../engine/errors/gateway-error.ts';
import { canonical, fingerprint, IdempotencyService, REPLAYED_HEADER } from '../../engine/idempotency/service.ts';
import type { StoredResponse } from '../../engine/idempotency/store.ts';
import { MemoryIdempotencyStore } from '../../engine/store/memory/idempotency.ts';
import { ManualClock } from '../../engine/util/clock.ts';
import { BillingService } from '../../engine/billing/service.ts';
import { MemoryWalletStore } from '../../engine/store/memory/wallets.ts';

const T = 'tenant-1';
const PATH = '/vendors/provider_b/v1/tob/diffusion';
const HOUR = 3_600_000;

/** A create handler that counts its runs and answers 202 with a new task id each time. */
function creator(status = 202) {
  let runs = 0;
  const handler = async (): Promise<StoredResponse> => {
    runs++;
    await new Promise((r) => setImmediate(r));
    return { status, headers: { 'Content-Type': 'application/json' }, body: { task_info: { id: `task-${runs}`, status: 'pending' } } };
  };
  return { handler, runs: () => runs };
}

async function failure(p: Promise<unknown>): Promise<GatewayError> {
  const e = await p.then(
    () => null,
    (err: unknown) => err,
  );
  expect(e, 'expected a GatewayError').to.be.instanceOf(GatewayError);
  return e as GatewayError;
}

describe('idempotency', () => {
  let clock: ManualClock;
  let store: MemoryIdempotencyStore;
  let svc: IdempotencyService;
  const req = (key: string | undefined, body: unknown = { prompt: 'a cat' }, tenantId = T) => ({ tenantId, key, method: 'POST', path: PATH, body });

  beforeEach(() => {
    clock = new ManualClock();
    store = new MemoryIdempotencyStore();
    svc = new IdempotencyService({ store, clock, pollMs: 1, waitMs: 2_000 });
  });

  it('replays the first answer to a sequential duplicate instead of running again', async () => {
    const c = creator();
    const first = await svc.run(req('k1'), c.handler);
    const second = await svc.run(req('k1'), c.handler);
    expect(c.runs()).to.equal(1);
    expect(first.replayed).to.equal(false);
    expect(second.replayed).to.equal(true);
    expect(second.response.status).to.equal(202);
    expect(second.response.body).to.deep.equal(first.response.body);
    expect(second.response.headers).to.deep.equal({ 'Content-Type': 'application/json', [REPLAYED_HEADER]: 'true' });
    expect(first.response.headers).to.not.have.property(REPLAYED_HEADER);
  });

  it('treats a body with the same content in another key order as the same request', async () => {
    const c = creator();
    await svc.run(req('k1', { a: 1, b: { c: [1, { e: 2, d: 3 }] } }), c.handler);
    const again = await svc.run(req('k1', { b: { c: [1, { d: 3, e: 2 }] }, a: 1 }), c.handler);
    expect(again.replayed).to.equal(true);
    expect(c.runs()).to.equal(1);
  });

  it('answers 409 when the key is reused with a different body, method or path', async () => {
    const c = creator();
    await svc.run(req('k1'), c.handler);
    for (const other of [req('k1', { prompt: 'a dog' }), { ...req('k1'), path: '/vendors/provider_b/v1/tob/video-diffusion' }, { ...req('k1'), method: 'PUT' }]) {
      const e = await failure(svc.run(other, c.handler));
      expect([e.code, e.status, e.title]).to.deep.equal([2000, 409, 'Conflict']);
      expect(e.detail).to.match(/different request/);
    }
    expect(c.runs()).to.equal(1);
  });

  it('keeps keys per tenant', async () => {
    const c = creator();
    await svc.run(req('k1'), c.handler);
    const other = await svc.run(req('k1', { prompt: 'a cat' }, 'tenant-2'), c.handler);
    expect(other.replayed).to.equal(false);
    expect(c.runs()).to.equal(2);
  });

  it('concurrent duplicates: exactly one runs, the others wait and replay its answer', async () => {
    const c = creator();
    const results = await Promise.all(Array.from({ length: 10 }, () => svc.run(req('k1'), c.handler)));
    expect(c.runs()).to.equal(1);
    expect(results.filter((r) => !r.replayed)).to.have.length(1);
    const ids = new Set(results.map((r) => (r.response.body as { task_info: { id: string } }).task_info.id));
    expect([...ids]).to.deep.equal(['task-1']);
  });

  it('a concurrent duplicate with a different body gets 409 at once', async () => {
    let finish!: () => void;
    const slow = () =>
      new Promise<StoredResponse>((resolve) => {
        finish = () => resolve({ status: 202, headers: {}, body: { ok: 1 } });
      });
    const first = svc.run(req('k1'), slow);
    await new Promise((r) => setImmediate(r));
    const e = await failure(svc.run(req('k1', { prompt: 'other' }), creator().handler));
    expect([e.code, e.status]).to.deep.equal([2000, 409]);
    finish();
    expect((await first).replayed).to.equal(false);
  });

  it('a duplicate still running after the wait gets 409 "in progress" with Retry-After', async () => {
    const sleeps: number[] = [];
    svc = new IdempotencyService({ store, clock, pollMs: 100, waitMs: 300, sleep: async (ms) => void sleeps.push(ms) });
    let finish!: () => void;
    const first = svc.run(req('k1'), () => new Promise<StoredResponse>((resolve) => (finish = () => resolve({ status: 202, headers: {}, body: {} }))));
    await new Promise((r) => setImmediate(r));
    const e = await failure(svc.run(req('k1'), creator().handler));
    expect([e.code, e.status]).to.deep.equal([2000, 409]);
    expect(e.detail).to.match(/still being processed/);
    expect(e.headers['Retry-After']).to.equal('1');
    expect(sleeps).to.deep.equal([100, 100, 100]);
    finish();
    await first;
    expect((await svc.run(req('k1'), creator().handler)).replayed).to.equal(true);
  });

  it('replays for 24 h after the answer, then runs again', async () => {
    const c = creator();
    await svc.run(req('k1'), c.handler);
    clock.advance(24 * HOUR - 1);
    expect((await svc.run(req('k1'), c.handler)).replayed).to.equal(true);
    clock.advance(1);
    const after = await svc.run(req('k1'), c.handler);
    expect(after.replayed).to.equal(false);
    expect(c.runs()).to.equal(2);
    // after expiry the key is free, even for another body
    clock.advance(24 * HOUR);
    expect((await svc.run(req('k1', { prompt: 'new' }), c.handler)).replayed).to.equal(false);
  });

  it('does not store failures: a thrown error or a non-2xx answer leaves the key retryable', async () => {
    let runs = 0;
    const e = await failure(
      svc.run(req('k1'), async () => {
        runs++;
        throw new GatewayError('insufficientBalance', 'Insufficient balance.');
      }),
    );
    expect(e.code).to.equal(1003);
    const declined = await svc.run(req('k1'), async () => {
      runs++;
      return { status: 402, headers: {}, body: { error_code: 1003 } };
    });
    expect(declined.replayed).to.equal(false);
    const c = creator();
    const ok = await svc.run(req('k1'), c.handler); // after a top-up, the same key works
    expect([ok.replayed, ok.response.status, runs, c.runs()]).to.deep.equal([false, 202, 2, 1]);
    expect((await svc.run(req('k1'), c.handler)).replayed).to.equal(true);
  });

  it('store away: the claim of a refused request is released once the store answers, and an unrecorded success is undone', async () => {
    // A store that is away until `down` is cleared: every call fails as the Redis adapters do.
    let down = false;
    const away = () => new GatewayError('dependencyUnavailable', 'Unavailable now: the store.');
    const flaky = new Proxy(store, {
      get: (target, name, receiver) => {
        const v = Reflect.get(target, name, receiver);
        return typeof v === 'function' ? (...args: unknown[]) => (down ? Promise.reject(away()) : v.apply(target, args)) : v;
      },
    });
    svc = new IdempotencyService({ store: flaky, clock, pollMs: 1, waitMs: 0 });
    const e = await failure(
      svc.run(req('k1'), async () => {
        down = true; // the store goes away while the request runs
        throw away();
      }),
    );
    expect(e.code).to.equal(4003);
    // The answer to `complete` is lost the same way: the request fails, and is undone.
    const undone: string[] = [];
    const c = creator();
    down = false;
    const handler = async () => {
      const r = await c.handler();
      down = true;
      return r;
    };
    expect((await failure(svc.run(req('k2'), handler, () => undone.push('k2')))).code).to.equal(4003);
    expect(undone).to.deep.equal([]);
    down = false; // back: the retries release both claims and undo the unrecorded create
    for (let i = 0; undone.length === 0 && i < 100; i++) await new Promise((r) => setTimeout(r, 20));
    expect(undone).to.deep.equal(['k2']);
    const retried = await svc.run(req('k1'), creator().handler);
    expect([retried.replayed, retried.response.status]).to.deep.equal([false, 202]);
    expect((await svc.run(req('k2'), creator().handler)).replayed).to.equal(false);
  });

  it('takes over a claim whose owner never answered once its lease runs out, with the claim\'s task id (recovered)', async () => {
    svc = new IdempotencyService({ store, clock, leaseMs: 10_000, pollMs: 1, waitMs: 0 });
    const first: string[] = [];
    // The owner hangs forever (and its renewals stop with it: a dead process).
    void svc.run(req('k1'), (claim) => {
      first.push(claim.taskId);
      return new Promise<StoredResponse>(() => {});
    });
    await new Promise((r) => setImmediate(r));
    expect((await failure(svc.run(req('k1'), creator().handler))).status).to.equal(409);
    store.renew = async () => false; // the dead owner renews nothing
    clock.advance(10_000);
    const seen: { taskId: string; recovered: boolean }[] = [];
    const r = await svc.run(req('k1'), async (claim) => {
      seen.push({ taskId: claim.taskId, recovered: claim.recovered });
      return { status: 202, headers: {}, body: { task_info: { id: claim.taskId } } };
    });
    expect(r.replayed).to.equal(false);
    expect(seen).to.deep.equal([{ taskId: first[0], recovered: true }]);
  });

  it('an owner stops before an effect once its lease may have run out', async () => {
    svc = new IdempotencyService({ store, clock, leaseMs: 10_000, pollMs: 1, waitMs: 0 });
    const err = await failure(svc.run(req('k1'), async (claim) => {
      claim.check(); // fine at first
      clock.advance(8_000); // within the last fifth of the lease, no renewal received
      claim.check();
      return { status: 202, headers: {}, body: {} };
    }));
    expect([err.status, err.headers['Retry-After']]).to.deep.equal([409, '1']);
  });

  it('a late owner cannot overwrite the answer of the claim that took over', async () => {
    const c = (token: string, now: number) => ({ fingerprint: 'fp', token, taskId: `t-${token}`, now, leaseMs: 10, ttlMs: HOUR });
    expect(await store.begin(T, 'k', c('tok-1', 0))).to.deep.equal({ kind: 'proceed', taskId: 't-tok-1', recovered: false });
    expect(await store.begin(T, 'k', c('tok-2', 10))).to.deep.equal({ kind: 'proceed', taskId: 't-tok-1', recovered: true }); // lease ran out
    expect(await store.complete(T, 'k', 'tok-1', { status: 202, headers: {}, body: 'late' }, 1_000)).to.equal(false);
    expect(await store.abandon(T, 'k', 'tok-1')).to.equal(false);
    expect(await store.complete(T, 'k', 'tok-2', { status: 202, headers: {}, body: 'mine' }, 1_000)).to.equal(true);
    expect(await store.begin(T, 'k', c('tok-3', 11))).to.deep.equal({ kind: 'replay', response: { status: 202, headers: {}, body: 'mine' } });
  });

  it('bills a create once however often it is sent', async () => {
    const wallets = new MemoryWalletStore();
    const billing = new BillingService({ store: wallets, clock });
    await billing.topUp(T, 100_000, 'pay_1');
    let n = 0;
    const create = async (): Promise<StoredResponse> => {
      const id = `task-${++n}`;
      await billing.hold(T, id, 34_000);
      return { status: 202, headers: {}, body: { task_info: { id, status: 'pending' } } };
    };
    await Promise.all(Array.from({ length: 5 }, () => svc.run(req('k1'), create)));
    await svc.run(req('k1'), create);
    expect(await billing.getWallet(T)).to.include({ held: 34_000, available: 66_000 });
    expect((await billing.checkInvariant(T)).ok).to.equal(true);
  });

  it('runs without a key, every time', async () => {
    const c = creator();
    await svc.run(req(undefined), c.handler);
    await svc.run(req(undefined), c.handler);
    expect(c.runs()).to.equal(2);
  });

  it('validates the key: 1 to 255 visible ASCII characters', async () => {
    const c = creator();
    await svc.run(req('x'.repeat(255)), c.handler);
    for (const bad of ['', 'x'.repeat(256), 'tab\there', 'clé']) {
      const e = await failure(svc.run(req(bad), c.handler));
      expect([e.code, e.status]).to.deep.equal([2003, 400]);
      expect(e.errors[0]!.pointer).to.equal('/headers/Idempotency-Key');
    }
    expect(c.runs()).to.equal(1);
  });

  it('sweeps expired records from memory', async () => {
    const c = creator();
    for (let i = 0; i < 10; i++) await svc.run(req(`k${i}`), c.handler);
    expect(store.size()).to.equal(10);
    clock.advance(24 * HOUR);
    store.sweep(clock.now());
    expect(store.size()).to.equal(0);
  });

  it('fingerprints tenant, method, path and canonical body', () => {
    const base = { tenantId: T, method: 'post', path: PATH, body: { b: 1, a: [1, 2] } };
    expect(fingerprint(base)).to.match(/^[0-9a-f]{64}$/);
    expect(fingerprint(base)).to.equal(fingerprint({ ...base, method: 'POST', body: { a: [1, 2], b: 1 } }));
    expect(fingerprint(base)).to.not.equal(fingerprint({ ...base, tenantId: 'other' }));
    expect(fingerprint(base)).to.not.equal(fingerprint({ ...base, body: { b: 1, a: [2, 1] } }));
    expect(canonical({ z: undefined, y: [undefined] })).to.deep.equal({ y: [null] });
  });
});
