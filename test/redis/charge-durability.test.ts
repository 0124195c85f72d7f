// No answer without its charge (docs/decisions.md): a real gateway process on a real
// redis-server under chat load, while Redis refuses writes — out of memory (maxmemory just above
// what it uses, noeviction) and read-only (a replica of a master that does not exist). Every chat
// answered 200 is charged exactly once (its hold settled, once the store takes writes again),
// every refusal is a 503 with Retry-After, and the ledger balances with nothing left held.
import { expect } from 'chai';
import type { Redis } from 'ioredis';
import { BillingService } from '../../engine/billing/service.ts';
import { RedisWalletStore } from '../../engine/store/redis/index.ts';
import { FakeOpenAI } from '../chat/fake-openai.ts';
import { metricValue } from '../helpers/metrics.ts';
import { freePort } from '../helpers/net.ts';
import { startRedis, type RedisServer } from '../helpers/redis.ts';
import { spawnGateway, tenantWithKey, writeConfig, ledger, type GatewayProcess } from './support.ts';

const CHAT = '/v1/chat/completions';
const ROUTE = 'provider_c/chat_completions';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface ChatOutcome {
  status: number;
  ref: string;
  retryAfter: string | null;
  code?: number;
  text?: string;
}

/**
 * `total` chats, `concurrency` at a time; `during` runs once a third of them were answered (it
 * is handed a count of the refusals so far).
 */
async function chatLoad(base: string, key: string, total: number, concurrency: number, during: (refused: () => number) => Promise<void>): Promise<ChatOutcome[]> {
  const out: ChatOutcome[] = [];
  let next = 0;
  let fired: Promise<void> | undefined;
  const one = async (i: number) => {
    const stream = i % 2 === 1;
    const res = await fetch(`${base}${CHAT}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o-mini', max_completion_tokens: 600, stream, messages: [{ role: 'user', content: `chat ${i}` }] }),
    });
    const text = await res.text();
    const tp = res.headers.get('traceparent') ?? '';
    out.push({ status: res.status, ref: `${ROUTE}:${tp.slice(3, 52)}`, retryAfter: res.headers.get('retry-after'), code: res.status === 200 ? undefined : JSON.parse(text).error_code, text: res.status === 200 ? undefined : text });
    if (!fired && out.length >= total / 3) fired = during(() => out.filter((o) => o.status !== 200).length);
  };
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < total) await one(next++);
  }));
  await fired;
  return out;
}

/** The fault lasts 1.5 s, and until some chats were refused (at most 5 s). */
async function refusing(refused: () => number): Promise<void> {
  const start = Date.now();
  while (Date.now() - start < 1500 || (refused() < 5 && Date.now() - start < 5000)) await sleep(50);
}

async function usedMemory(client: Redis): Promise<number> {
  return Number(/used_memory:(\d+)/.exec(await client.info('memory'))![1]);
}

describe('redis mode: no chat answered without its charge while Redis refuses writes', function () {
  this.timeout(180_000);
  let upstream: FakeOpenAI;
  let redis: RedisServer;
  let gw: GatewayProcess;
  let admin: Redis;
  before(async () => {
    upstream = await new FakeOpenAI().start();
    upstream.chunkDelayMs = 2;
    redis = await startRedis();
    admin = redis.client();
    gw = await spawnGateway(writeConfig({ redisUrl: redis.url, prefix: 'cd', upstreamUrl: upstream.url, chatUrl: upstream.url, chatKey: 'sk-upstream-test' }), 'all');
  });
  after(async () => {
    await gw?.stop();
    await redis?.stop();
    await upstream?.close();
  });

  /** The gateway's count of charge writes the store refused, by step. */
  async function refusedWrites(step: string): Promise<number> {
    const url = /"metrics_url":"([^"]+)"/.exec(gw.output())![1]!;
    return metricValue(await (await fetch(url)).text(), 'gateway_charge_write_failures_total', { step });
  }

  async function check(tenantId: string, outcomes: ChatOutcome[], label: string): Promise<Record<string, number>> {
    const billing = new BillingService({ store: new RedisWalletStore({ client: redis.client(), prefix: 'cd:' }) });
    // The settlements the store refused are made again once it takes writes: wait for them.
    for (const deadline = Date.now() + 30_000; (await billing.getWallet(tenantId)).held !== 0; ) {
      if (Date.now() > deadline) throw new Error(`${label}: holds still open after 30 s`);
      await sleep(100);
    }
    const lines = await ledger(gw.url, tenantId);
    const figures = { answered: 0, charged: 0, refused: 0, refusedCharged: 0 };
    for (const o of outcomes) {
      const mine = lines.filter((e) => e.ref === o.ref || e.ref === `${o.ref}+`);
      const settled = mine.filter((e) => e.kind === 'settle');
      if (o.status === 200) {
        figures.answered++;
        // Once: one hold settled (its rest released), plus at most one charge beyond it.
        expect(mine.filter((e) => e.kind === 'hold' && e.ref === o.ref), `${label} ${o.ref}`).to.have.length(1);
        expect(settled.filter((e) => e.ref === o.ref), `${label} ${o.ref}`).to.have.length(1);
        if (settled.reduce((s, e) => s + e.amount_milli, 0) > 0) figures.charged++;
      } else {
        figures.refused++;
        expect(o.status, `${label}: ${JSON.stringify(o)}`).to.equal(503);
        expect(o.code).to.equal(4003);
        expect(Number(o.retryAfter)).to.be.greaterThan(0);
        if (settled.length) figures.refusedCharged++;
      }
    }
    const report = await billing.checkInvariant(tenantId);
    expect(report.ok, JSON.stringify(report)).to.equal(true);
    expect(figures.charged, label).to.equal(figures.answered);
    expect(figures.refusedCharged, label).to.equal(0);
    return figures;
  }

  it('out of memory (maxmemory just above use, noeviction): 200s charged once, refusals 503 + Retry-After', async () => {
    const { tenantId, key } = await tenantWithKey(gw.url);
    const outcomes = await chatLoad(gw.url, key, 150, 6, async (refused) => {
      await admin.config('SET', 'maxmemory-policy', 'noeviction');
      await admin.config('SET', 'maxmemory', String((await usedMemory(admin)) + 2048));
      await refusing(refused);
      await admin.config('SET', 'maxmemory', '0');
    });
    const settles = await refusedWrites('settle');
    const f = await check(tenantId, outcomes, 'OOM');
    console.log(`      OOM: ${outcomes.length} chats, ${f.answered} answered 200 and charged once, ${f.refused} refused 503; store refusals counted: ${await refusedWrites('hold')} holds, ${settles} settlements (made again later)`);
    expect(f.refused, 'the store never refused a write').to.be.greaterThan(0);
    expect(f.answered).to.be.greaterThan(0);
  });

  it('read-only (REPLICAOF a dead master): 200s charged once, refusals 503 + Retry-After', async () => {
    const { tenantId, key } = await tenantWithKey(gw.url);
    const dead = await freePort();
    const outcomes = await chatLoad(gw.url, key, 150, 6, async (refused) => {
      await admin.call('REPLICAOF', '127.0.0.1', String(dead));
      await refusing(refused);
      await admin.call('REPLICAOF', 'NO', 'ONE');
    });
    const [holds, settles] = [await refusedWrites('hold'), await refusedWrites('settle')];
    const f = await check(tenantId, outcomes, 'READONLY');
    console.log(`      READONLY: ${outcomes.length} chats, ${f.answered} answered 200 and charged once, ${f.refused} refused 503; store refusals counted (both phases): ${holds} holds, ${settles} settlements (made again later)`);
    expect(f.refused, 'the store never refused a write').to.be.greaterThan(0);
    expect(f.answered).to.be.greaterThan(0);
  });
});
