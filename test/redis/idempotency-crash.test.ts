// Idempotency that survives its process (docs/decisions.md): 300 creates with Idempotency-Keys
// are in flight on gateway process A when it is killed (SIGKILL, as its first answers arrive);
// each is retried with the same key and body on process B until it has an answer. Every key is
// resolved within 30 s (a dead owner's lease runs out after 10 s), each key has one task — the
// one its answers name — and no task or open hold exists that the client does not hold.
import { expect } from 'chai';
import { BillingService } from '../../engine/billing/service.ts';
import { RedisWalletStore } from '../../engine/store/redis/index.ts';
import { startRedis } from '../helpers/redis.ts';
import { countingImageToolUpstream, type CountingUpstream } from './image-tool-upstream.ts';
import { ledger, spawnGateway, tenantWithKey, writeConfig } from './support.ts';

const IMAGES = '/vendors/provider_b/v1/tob/diffusion';
const N = 300;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function create(base: string, key: string, i: number): Promise<{ status: number; id?: string; retryAfter?: number; code?: number }> {
  const res = await fetch(`${base}${IMAGES}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': `crash-key-${i}` },
    body: JSON.stringify({ prompt: `keyed create ${i}` }),
  });
  const body = (await res.json()) as { task_info?: { id: string }; error_code?: number; code?: number };
  return { status: res.status, id: body.task_info?.id, retryAfter: Number(res.headers.get('retry-after') ?? 0), code: body.error_code ?? body.code };
}

describe('redis mode: an Idempotency-Key survives the process that held it', function () {
  this.timeout(240_000);
  let up: CountingUpstream;
  before(async () => {
    up = await countingImageToolUpstream().start();
  });
  after(async () => up.close());

  it(`kill -9 with ${N} keyed creates in flight, retried on the other process: every key resolved within 30 s, one task each, none the client does not hold`, async () => {
    const redis = await startRedis();
    // The orphan sweep's grace (30 s) outlasts the lease (10 s), as in production (60 s); time
    // scaled to a tenth, so the tasks' deadline (60 s) outlasts that grace too and a task A
    // created but never submitted is re-driven by the sweep.
    const config = writeConfig({ redisUrl: redis.url, prefix: 'ic', upstreamUrl: up.url, scale: 0.1, timing: 'sweep_grace_ms: 300000' });
    const a = await spawnGateway(config, 'all');
    const b = await spawnGateway(config, 'all');
    try {
      const { tenantId, key } = await tenantWithKey(b.url);
      const firstIds = new Map<number, string>();
      const inflight = Array.from({ length: N }, (_, i) =>
        create(a.url, key, i).then(
          (r) => void (r.status === 202 && firstIds.set(i, r.id!)),
          () => undefined, // cut by the kill
        ),
      );
      // Killed mid-way: as A's first answers arrive (the rest are claimed, held, stored,
      // submitted or not yet read), or after 5 s.
      for (const t0 = Date.now(); firstIds.size === 0 && Date.now() - t0 < 5_000; ) await sleep(2);
      await a.kill9();
      const killedAt = Date.now();
      await Promise.all(inflight);

      // Each key retried on B until it has an answer (409 in progress and 503: after Retry-After).
      const ids = new Map<number, string>();
      const resolvedAfter: number[] = [];
      const refused: string[] = [];
      await Promise.all(Array.from({ length: N }, async (_, i) => {
        for (let tries = 0; tries < 60; tries++) {
          const r = await create(b.url, key, i).catch(() => ({ status: 0, retryAfter: 1 }) as Awaited<ReturnType<typeof create>>);
          if (r.status === 202) {
            ids.set(i, r.id!);
            resolvedAfter.push(Date.now() - killedAt);
            return;
          }
          if (r.status !== 409 && r.status !== 503 && r.status !== 0) {
            refused.push(`${i}: ${r.status} ${r.code}`);
            return;
          }
          await sleep(Math.max(1, r.retryAfter ?? 1) * 1000);
        }
        refused.push(`${i}: unresolved`);
      }));
      const slowest = Math.max(...resolvedAfter);
      console.log(`      ${firstIds.size} of ${N} answered 202 by A before the kill; every key answered by B within ${(slowest / 1000).toFixed(1)} s of the kill`);
      expect(refused).to.deep.equal([]);
      expect(ids.size).to.equal(N);
      expect(slowest).to.be.below(30_000);
      for (const [i, id] of firstIds) expect(ids.get(i), `key ${i}`).to.equal(id); // a replay, not a second task
      expect(new Set(ids.values()).size).to.equal(N);

      // Every hold released or settled in time; the ledger names no task the client does not hold.
      const held = new Set(ids.values());
      const billing = new BillingService({ store: new RedisWalletStore({ client: redis.client(), prefix: 'ic:' }) });
      for (const deadline = Date.now() + 120_000; ; await sleep(500)) {
        const lines = await ledger(b.url, tenantId);
        const open = lines.filter((e) => e.kind === 'hold' && !lines.some((x) => x.ref === e.ref && x.kind !== 'hold'));
        if (open.length === 0) break;
        if (Date.now() > deadline) throw new Error(`${open.length} holds still open`);
      }
      const lines = await ledger(b.url, tenantId);
      const refs = new Map<string, string[]>();
      for (const e of lines.filter((x) => x.kind !== 'topup').reverse()) refs.set(e.ref, [...(refs.get(e.ref) ?? []), e.kind]);
      const foreign = [...refs].filter(([ref, kinds]) => !held.has(ref) && kinds.join() !== 'hold,release');
      const heldTwice = [...refs.keys()].filter((ref) => !held.has(ref)).length;
      console.log(`      ledger: ${refs.size} holds for ${N} keys (${heldTwice} released holds of attempts the client holds no task of); submissions at the provider: ${[...up.submits.values()].reduce((s, n) => s + n, 0)} for ${up.submits.size} prompts`);
      const ends = new Map<string, number>();
      for (const id of held) {
        const t = (await (await fetch(`${b.url}${IMAGES}/${id}`, { headers: { authorization: `Bearer ${key}` } })).json()) as { task_info: { status: string; error?: { code: number } } };
        const end = t.task_info.error ? `failed ${t.task_info.error.code}` : t.task_info.status;
        ends.set(end, (ends.get(end) ?? 0) + 1);
      }
      console.log(`      the ${N} tasks ended: ${JSON.stringify(Object.fromEntries(ends))}`);
      expect(foreign, 'money moved for a task the client does not hold').to.deep.equal([]);
      for (const id of held) expect(['hold,settle', 'hold,release'], id).to.include(refs.get(id)?.join());
      expect([...up.submits.values()].every((n) => n === 1), 'a prompt reached the provider twice').to.equal(true);
      expect((await billing.checkInvariant(tenantId)).ok).to.equal(true);
    } finally {
      await Promise.allSettled([a.stop(), b.stop()]);
      await redis.stop();
    }
  });
});
