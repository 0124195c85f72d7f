// Billing by tokens: the usage the upstream reports (JSON answer, or the stream's last chunk)
// times the descriptor's prices, charged exactly once per completion; no credits → 402 / 1003
// before any upstream call; rate and daily-spend limits apply.
import { expect } from 'chai';
import OpenAI from 'openai';
import { newTenant } from '../helpers/gateway.ts';
import { useChatRig, type ChatRig } from './rig.ts';

// FAKE_USAGE: 1000 prompt tokens (200 cached), 500 completion tokens. gpt-4o: input 2.50,
// cached 1.25, output 10.00 USD per 1M → 800 x 2.5 + 200 x 1.25 + 500 x 10 = 7250 µUSD
// = 0.00725 USD = 0.725 credits = 725 milli-credits (1 USD = 100 credits).
const GPT4O_MILLI = 725;
// gpt-4o-mini: 800 x 0.15 + 200 x 0.075 + 500 x 0.60 = 435 µUSD = 43.5 milli → 44 (half up).
const MINI_MILLI = 44;

async function charges(r: ChatRig, tenantId = r.tenantId) {
  const { entries } = await r.gw.billing.listLedger(tenantId, { limit: 200 });
  return entries.filter((e) => e.kind === 'settle');
}

/** The charge lands just after the answer ends: wait for `n` settle entries, then make sure no more come. */
async function settled(r: ChatRig, n: number, tenantId = r.tenantId) {
  const deadline = Date.now() + 3000;
  while ((await charges(r, tenantId)).length < n && Date.now() < deadline) await new Promise((res) => setTimeout(res, 5));
  await new Promise((res) => setTimeout(res, 50));
  return charges(r, tenantId);
}

describe('chat: billing by tokens', () => {
  const r = useChatRig({ credits: 1000, each: true });

  it('charges a sync completion its reported usage at the model\'s prices, once', async () => {
    await r.client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] });
    const c = await settled(r, 1);
    expect(c).to.have.length(1);
    expect(c[0]!.amount).to.equal(GPT4O_MILLI);
    expect(c[0]!.note).to.equal('gpt-4o 1000 in (200 cached) 500 out chatcmpl-1');
    expect((await r.gw.billing.getWallet(r.tenantId)).balance).to.equal(1_000_000 - GPT4O_MILLI);
  });

  it('charges a stream from the usage chunk read as it passed, once', async () => {
    const stream = await r.client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], stream: true });
    for await (const _ of stream) void _;
    const c = await settled(r, 1);
    expect(c).to.have.length(1);
    expect(c[0]!.amount).to.equal(MINI_MILLI);
    expect(c[0]!.note).to.match(/^gpt-4o-mini 1000 in \(200 cached\) 500 out chatcmpl-/);
  });

  it('charges each of many concurrent completions exactly once', async () => {
    await Promise.all(Array.from({ length: 12 }, (_, i) =>
      i % 2
        ? r.client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: `q${i}` }] })
        : r.client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: `q${i}` }], stream: true }).then(async (s) => {
            for await (const _ of s) void _;
          }),
    ));
    const c = await settled(r, 12);
    expect(c).to.have.length(12);
    expect(new Set(c.map((e) => e.ref)).size).to.equal(12);
    expect((await r.gw.billing.getWallet(r.tenantId)).balance).to.equal(1_000_000 - 12 * GPT4O_MILLI);
  });

  it('charges an estimate, marked as such, when the upstream reports no usage', async () => {
    await r.client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'no usage please [nousage]' }] });
    const stream = await r.client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'no usage please [nousage]' }], stream: true });
    for await (const _ of stream) void _;
    const c = await settled(r, 2);
    expect(c).to.have.length(2);
    for (const e of c) expect(e.note).to.contain('(estimated)');
    // The stream relayed 10 events (role, 8 words, finish): 10 output tokens.
    expect(c.some((e) => / 10 out \(estimated\)/.test(e.note))).to.equal(true);
    expect(c.every((e) => e.amount > 0)).to.equal(true);
  });

  it('does not charge an upstream failure', async () => {
    const err = await r.client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: '[error503]' }] }).catch((e: unknown) => e);
    expect(err).to.be.instanceOf(OpenAI.InternalServerError);
    await new Promise((res) => setTimeout(res, 50));
    expect(await charges(r)).to.have.length(0);
  });

  it('refuses a tenant with no available credits with 402 / 1003 before any upstream call', async () => {
    const broke = await newTenant(r.gw, { credits: 0 });
    const calls = r.up.seen.length;
    for (const stream of [false, true]) {
      const err = await r.clientFor(broke.key).chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }], stream }).catch((e: unknown) => e);
      expect(err).to.be.instanceOf(OpenAI.APIError);
      const e = err as InstanceType<typeof OpenAI.APIError>;
      expect(e.status).to.equal(402);
      expect(e.code).to.equal('1003');
      expect(e.type).to.equal('insufficient_quota');
    }
    expect(r.up.seen.length).to.equal(calls);
  });

  it('serves a completion that takes the balance below zero, then refuses the next (post-paid)', async () => {
    const poor = await newTenant(r.gw, { credits: 0.5 });
    const client = r.clientFor(poor.key);
    await client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] });
    await settled(r, 1, poor.tenant.id);
    expect((await r.gw.billing.getWallet(poor.tenant.id)).balance).to.equal(500 - GPT4O_MILLI);
    const err = await client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e);
    expect((err as InstanceType<typeof OpenAI.APIError>).status).to.equal(402);
  });
});

describe('chat: rate and spend limits', () => {
  const r = useChatRig({ credits: 1000, yaml: 'limits: { rate: { key: { per_second: null, per_minute: 3, per_day: null }, model: { per_second: null, per_minute: 1000, per_day: null } }, daily_spend_credits: "0.5" }' });

  it('applies the daily spend limit to post-paid chat (429 / 1005 once reached)', async () => {
    await r.client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] });
    await settled(r, 1);
    const err = await r.client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e);
    expect(err).to.be.instanceOf(OpenAI.RateLimitError);
    expect((err as InstanceType<typeof OpenAI.RateLimitError>).code).to.equal('1005');
  });

  it('applies the per-key rate limit (429 / 1004 with Retry-After), models.list included', async () => {
    const { key } = await r.gw.tenants.issueKey(r.tenantId, {});
    const client = r.clientFor(key);
    await client.models.list();
    await client.models.list();
    await client.models.list();
    const err = await client.models.list().catch((e: unknown) => e);
    expect(err).to.be.instanceOf(OpenAI.RateLimitError);
    const e = err as InstanceType<typeof OpenAI.RateLimitError>;
    expect(e.code).to.equal('1004');
    expect(Number(e.headers?.get('retry-after'))).to.be.greaterThan(0);
  });
});
