// Redis outage under load. While its store is away the gateway answers every request that needs
// it within store.command_timeout_ms with 503 / 4003 and Retry-After, and nothing of a refused
// create is done later: once Redis is back, the only tasks, holds and charges are those of the
// creates that got a 202 (each of which ends terminal), and the ledger balances.
import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Redis } from 'ioredis';
import { BillingService } from '../../engine/billing/service.ts';
import type { Gateway } from '../../engine/gateway.ts';
import { BullJobScheduler } from '../../engine/store/redis/job-scheduler.ts';
import { failFastRedis } from '../../engine/store/redis/client.ts';
import { RedisWalletStore } from '../../engine/store/redis/index.ts';
import { newTenant, startTestGateway } from '../helpers/gateway.ts';
import { startRedis, type RedisServer } from '../helpers/redis.ts';

const IMAGES = '/vendors/provider_b/v1/tob/diffusion';
const PREFIX = 'outage';
/** store.command_timeout_ms of the gateway under test. */
const BOUND_MS = 1000;
/** What an answer may take beyond the bound: the load generator shares this process's event loop. */
const SLACK_MS = 750;
const CLIENTS = 30;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Answer {
  status: number; // 0: no answer in time (the client gave up), or the connection failed
  ms: number;
  code?: number;
  retryAfter: string | null;
  contentType: string | null;
  traceparent: string | null;
  taskId?: string;
}

async function timedCall(url: string, key: string, init: RequestInit = {}): Promise<Answer> {
  const t0 = performance.now();
  try {
    // The client gives up after the bound (plus slack), as clients do: a create still queued in
    // the gateway by then must never become a task.
    const res = await fetch(url, { ...init, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, signal: AbortSignal.timeout(BOUND_MS + SLACK_MS) });
    const body = (await res.json().catch(() => undefined)) as { error_code?: number; task_info?: { id: string } } | undefined;
    return {
      status: res.status,
      ms: performance.now() - t0,
      code: body?.error_code,
      retryAfter: res.headers.get('retry-after'),
      contentType: res.headers.get('content-type'),
      traceparent: res.headers.get('traceparent'),
      taskId: body?.task_info?.id,
    };
  } catch {
    return { status: 0, ms: performance.now() - t0, retryAfter: null, contentType: null, traceparent: null };
  }
}

function expectRefusal(a: Answer, what: string): void {
  expect(a.status, `${what}: ${JSON.stringify(a)}`).to.equal(503);
  expect(a.code, what).to.equal(4003);
  expect(a.retryAfter, what).to.match(/^\d+$/);
  expect(a.contentType, what).to.match(/^application\/problem\+json/);
  expect(a.traceparent, what).to.match(/^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$/);
  expect(a.ms, what).to.be.below(BOUND_MS + SLACK_MS);
}

/** Every task id stored under the prefix (the test's tenant is the only one with tasks). */
async function storedTaskIds(client: Redis): Promise<Set<string>> {
  const ids = new Set<string>();
  let cursor = '0';
  do {
    const [next, keys] = await client.scan(cursor, 'MATCH', `${PREFIX}:{task:*}`, 'COUNT', 1000);
    cursor = next;
    for (const k of keys) ids.add(k.slice(`${PREFIX}:{task:`.length, -1));
  } while (cursor !== '0');
  return ids;
}

async function until(what: string, timeoutMs: number, check: () => Promise<boolean>): Promise<void> {
  for (const deadline = Date.now() + timeoutMs; !(await check()); await sleep(100)) {
    if (Date.now() > deadline) throw new Error(`still not true after ${timeoutMs} ms: ${what}`);
  }
}

describe('redis mode: Redis killed under a create load', function () {
  this.timeout(60_000);
  let redis: RedisServer;
  let gw: Gateway;
  let dir: string;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'gw-outage-'));
    redis = await startRedis({ aof: true, dir }); // appendfsync always: a restart keeps every reply given
    gw = await startTestGateway({
      only: ['provider_b', 'provider_c'],
      scale: 0.02,
      store: `{ kind: redis, redis_url: "${redis.url}", key_prefix: ${PREFIX}, command_timeout_ms: ${BOUND_MS} }`,
    });
  });
  afterEach(async () => {
    await gw?.close();
    await redis?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Restart redis-server on the same port and data directory (the gateway reconnects by itself). */
  const restart = async () => {
    redis = await startRedis({ aof: true, dir, port: redis.port });
  };

  it('answers 503 / 4003 within the bound while Redis is down, and leaves nothing of a refused create', async () => {
    const { tenant, key } = await newTenant(gw);
    const answers: Answer[] = [];
    let stop = false;
    const load = Array.from({ length: CLIENTS }, async (_, c) => {
      for (let i = 0; !stop; i++) {
        answers.push(await timedCall(`${gw.url}${IMAGES}`, key, { method: 'POST', body: JSON.stringify({ prompt: `outage ${c}/${i}` }) }));
      }
    });

    await sleep(800);
    const beforeKill = answers.length;
    redis.process.kill('SIGKILL');
    await sleep(300);
    // Reads that need the store are refused as quickly, on every path (express, the chat
    // proxy); readiness says so too.
    expectRefusal(await timedCall(`${gw.url}/v1/balance`, key), 'GET /v1/balance during the outage');
    const chat = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] };
    expectRefusal(await timedCall(`${gw.url}/v1/chat/completions`, key, { method: 'POST', body: JSON.stringify(chat) }), 'a chat completion during the outage');
    const ready = await timedCall(`${gw.url}/readyz`, key);
    expect([ready.status, ready.code]).to.deep.equal([503, 4003]);
    await sleep(2200);
    const duringOutage = answers.slice(beforeKill);
    await restart();
    await sleep(1500);
    stop = true;
    await Promise.all(load);

    // Every create was answered, in time: a 202, or a refusal with everything a client needs.
    expect(answers.filter((a) => a.status !== 202 && a.status !== 503), 'neither 202 nor 503').to.deep.equal([]);
    for (const a of answers.filter((x) => x.status === 503)) expectRefusal(a, 'refused create');
    const slowest = Math.max(...answers.map((a) => a.ms));
    expect(slowest, 'slowest answer (ms)').to.be.below(BOUND_MS + SLACK_MS);
    expect(answers.slice(0, beforeKill).filter((a) => a.status === 202).length, 'accepted before the kill').to.be.greaterThan(20);
    expect(duringOutage.filter((a) => a.status === 503).length, 'refused during the outage').to.be.greaterThan(20);
    expect(answers.slice(-CLIENTS * 2).filter((a) => a.status === 202).length, 'accepted again after the restart').to.be.greaterThan(0);

    // Every accepted task ends; readiness is back.
    const accepted = new Set(answers.filter((a) => a.status === 202).map((a) => a.taskId!));
    for (const id of accepted) {
      await until(`task ${id} terminal`, 20_000, async () => ['completed', 'failed'].includes((await gw.tasks.get(id))?.status ?? ''));
    }
    expect((await timedCall(`${gw.url}/readyz`, key)).status).to.equal(200);

    // Nothing of a refused create remains once the withdrawals ran: no task, no open hold, no
    // charge; a hold it may have left is released (net zero).
    const client = redis.client();
    const billing = new BillingService({ store: new RedisWalletStore({ client, prefix: `${PREFIX}:` }) });
    await until('only the accepted tasks are stored, and no hold is open', 15_000, async () => {
      const stored = await storedTaskIds(client);
      return stored.size === accepted.size && [...stored].every((id) => accepted.has(id)) && (await billing.openHolds(tenant.id)).length === 0;
    });
    await sleep(1000); // and nothing arrives later
    expect([...(await storedTaskIds(client))].sort()).to.deep.equal([...accepted].sort());
    const { entries } = await new RedisWalletStore({ client, prefix: `${PREFIX}:` }).snapshot(tenant.id);
    const byRef = new Map<string, string[]>();
    for (const e of entries) if (e.kind !== 'topup') byRef.set(e.ref, [...(byRef.get(e.ref) ?? []), e.kind]);
    for (const [ref, kinds] of byRef) {
      if (accepted.has(ref)) expect([['hold', 'settle'], ['hold', 'release']], ref).to.deep.include(kinds);
      else expect(kinds, `ledger of refused create ${ref}`).to.deep.equal(['hold', 'release']);
    }
    for (const id of accepted) expect(byRef.has(id), `accepted task ${id} was held`).to.equal(true);
    const report = await billing.checkInvariant(tenant.id);
    expect(report.ok, JSON.stringify(report.violations)).to.equal(true);
  });

  it('a job scheduled while Redis is away is refused at once, and never added later', async () => {
    const producer = failFastRedis(redis.url, BOUND_MS);
    producer.on('error', () => {});
    await producer.connect();
    const jobs = new BullJobScheduler({ url: redis.url, producer, prefix: 'outage-jobs', runWorkers: false });
    try {
      await jobs.schedule('probe.q', 'before', {}, 60_000); // the queue is set up
      redis.process.kill('SIGKILL');
      await sleep(200);
      for (const [queue, id] of [['probe.q', 'during'], ['probe.other', 'first-use']]) {
        const t0 = Date.now();
        const err = await jobs.schedule(queue!, id!, {}, 0).then(() => undefined, (e: unknown) => e);
        expect(err, `${queue} ${id}`).to.include({ code: 4003, status: 503 });
        expect(Date.now() - t0).to.be.below(BOUND_MS + SLACK_MS);
      }
      expect(await jobs.connected()).to.equal(false);
      await restart();
      for (let i = 0; producer.status !== 'ready'; i++) {
        if (i > 100) throw new Error('the producer did not reconnect');
        await sleep(50);
      }
      await sleep(500);
      const keys = await redis.client().keys('*');
      expect(keys.some((k) => k.includes(':before')), 'the job added before the outage survived').to.equal(true);
      expect(keys.filter((k) => k.includes('during') || k.includes('first-use') || k.includes('probe.other')), 'jobs refused during the outage').to.deep.equal([]);
      await jobs.schedule('probe.other', 'after', {}, 60_000);
      expect(await jobs.connected()).to.equal(true);
    } finally {
      await jobs.close(0);
      producer.disconnect();
    }
  });

  it('a Redis that stops answering (SIGSTOP) is treated as gone within the bound', async () => {
    const { tenant, key } = await newTenant(gw);
    redis.process.kill('SIGSTOP');
    try {
      const refused = await Promise.all(Array.from({ length: 10 }, (_, i) => timedCall(`${gw.url}${IMAGES}`, key, { method: 'POST', body: JSON.stringify({ prompt: `hung ${i}` }) })));
      for (const a of refused) expectRefusal(a, 'create on a hung Redis');
      expectRefusal(await timedCall(`${gw.url}/v1/balance`, key), 'GET /v1/balance on a hung Redis');
    } finally {
      redis.process.kill('SIGCONT');
    }
    // Back: the gateway serves again, and the refused creates left nothing.
    await until('a create is accepted again', 10_000, async () => (await timedCall(`${gw.url}${IMAGES}`, key, { method: 'POST', body: '{"prompt":"after"}' })).status === 202);
    const client = redis.client();
    const billing = new BillingService({ store: new RedisWalletStore({ client, prefix: `${PREFIX}:` }) });
    await until('only the accepted task is stored, and no hold is open', 15_000, async () => (await storedTaskIds(client)).size === 1 && (await billing.openHolds(tenant.id)).length === 0);
    expect((await billing.checkInvariant(tenant.id)).ok).to.equal(true);
  });
});
