// The OpenAI and OpenRouter catalogue entries, each alone, against the provider played from its
// documentation (fakes/openai-compatible.ts): chat as JSON and as a stream, OpenAI's image
// generation (synchronous, billed by the tokens it reports), the model list, a refusal, and the
// ledger after each: one settle per answer at the token prices (after a hold, where the gateway
// takes one), nothing kept for a refusal.
import { expect } from 'chai';
import { call, catalogueRig, STORE, waitFor, type CatalogueRig } from './harness.ts';
import { OpenAICompatibleFake } from './fakes/openai-compatible.ts';

/** The wallet's entries other than the top-up (an adjustment), oldest first. */
async function entries(rig: CatalogueRig) {
  const { entries } = await rig.gw.billing.listLedger(rig.tenantId, { limit: 200 });
  return entries.filter((e) => e.kind !== 'adjustment').sort((a, b) => a.seq - b.seq);
}

/**
 * Each hold is closed once: one settle (and the rest of the hold released with it), or one
 * release of all of it. Returns the settled amounts.
 */
async function settledAmounts(rig: CatalogueRig, n: number): Promise<number[]> {
  await waitFor(async () => (await entries(rig)).filter((e) => e.kind === 'settle').length >= n, 3000, `${n} settle(s)`);
  await new Promise((r) => setTimeout(r, 30));
  const all = await entries(rig);
  for (const h of all.filter((e) => e.kind === 'hold')) expectClosedOnce(all.filter((e) => e.ref === h.ref));
  return all.filter((e) => e.kind === 'settle').map((e) => e.amount);
}

function expectClosedOnce(ref: { kind: string; amount: number }[]): void {
  const [hold, ...rest] = ref;
  const kinds = rest.map((e) => e.kind);
  if (kinds[0] === 'settle') {
    expect(kinds, JSON.stringify(ref)).to.deep.equal(rest[0]!.amount === hold!.amount ? ['settle'] : ['settle', 'release']);
    if (kinds.length === 2) expect(rest[0]!.amount + rest[1]!.amount).to.equal(hold!.amount);
  } else {
    expect(rest.map((e) => [e.kind, e.amount]), JSON.stringify(ref)).to.deep.equal([['release', hold!.amount]]);
  }
}

const sse = async (r: Response) => (await r.text()).split('\n\n').filter((e) => e.startsWith('data: '));

const cases = [
  { vendor: 'openai', prefix: '/v1', key: 'sk-catalogue-openai', model: 'gpt-4o-mini', usageAlways: false, models: ['gpt-4o-mini', 'gpt-4o', 'dall-e-3', 'whisper-1'] },
  { vendor: 'openrouter', prefix: '/api/v1', key: 'sk-or-v1-catalogue', model: 'openai/gpt-4o-mini', usageAlways: true, models: ['openai/gpt-4o-mini', 'mistralai/mistral-nemo'] },
];

for (const c of cases) {
  const CHAT = `/vendors/${c.vendor}/v1/chat/completions`;
  describe(`catalogue: ${c.vendor} (${STORE} store)`, function () {
    this.timeout(30_000);
    let fake: OpenAICompatibleFake;
    let rig: CatalogueRig;
    beforeEach(async () => {
      fake = await new OpenAICompatibleFake(c).start();
      rig = await catalogueRig(c.vendor, fake, { api_key: c.key });
    });
    afterEach(async () => {
      await rig?.close();
      await fake?.close();
    });

    it(`chat as JSON: forwarded to ${c.prefix}/chat/completions, answered unchanged, settled once at the token prices`, async () => {
      const r = await call(rig.base, 'POST', CHAT, { key: rig.key, body: { model: c.model, messages: [{ role: 'user', content: 'Say hello' }] } });
      expect(r.status, r.text).to.equal(200);
      expect(r.body.choices[0].message.content).to.equal('Hello there!');
      expect(fake.seen('POST', `${c.prefix}/chat/completions`)).to.have.length(1);
      // 800 x 0.15 + 200 x 0.075 + 500 x 0.60 = 435 µUSD = 43.5 milli-credits, half up
      expect(await settledAmounts(rig, 1)).to.deep.equal([44]);
    });

    it('chat as a stream: relayed, and settled from the usage chunk', async () => {
      const r = await fetch(`${rig.base}${CHAT}`, { method: 'POST', headers: { authorization: `Bearer ${rig.key}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: c.model, stream: true, messages: [{ role: 'user', content: 'Count to five' }] }) });
      expect(r.status).to.equal(200);
      const events = await sse(r);
      expect(events.at(-1)).to.equal('data: [DONE]');
      const sent = fake.seen('POST', `${c.prefix}/chat/completions`).at(-1)!.body;
      if (!c.usageAlways) expect(sent.stream_options, 'the gateway asks OpenAI for the usage chunk').to.deep.equal({ include_usage: true });
      expect(await settledAmounts(rig, 1)).to.deep.equal([44]);
    });

    it('a refusal (400): the provider\'s error object comes back, nothing is charged', async () => {
      const r = await call(rig.base, 'POST', CHAT, { key: rig.key, body: { model: c.model, messages: [{ role: 'user', content: '[refuse] this' }] } });
      expect(r.status).to.be.within(400, 599);
      expect(JSON.stringify(r.body)).to.match(/content_policy_violation|rejected/);
      await new Promise((res) => setTimeout(res, 50));
      const all = await entries(rig);
      expect(all.filter((e) => e.kind === 'settle')).to.deep.equal([]);
      for (const h of all.filter((e) => e.kind === 'hold')) expect(all.filter((e) => e.ref === h.ref && e.kind === 'release'), JSON.stringify(all.filter((e) => e.ref === h.ref))).to.have.length(1);
    });

    it('a model without a price is refused (2003) before any call; the model list holds the priced ones', async () => {
      const r = await call(rig.base, 'POST', CHAT, { key: rig.key, body: { model: 'no-such-model', messages: [{ role: 'user', content: 'hi' }] } });
      expect(String(r.body.error?.code ?? r.body.code)).to.equal('2003');
      expect(fake.seen('POST', `${c.prefix}/chat/completions`)).to.have.length(0);
      const list = await call(rig.base, 'GET', `/vendors/${c.vendor}/v1/models`, { key: rig.key });
      expect(list.status, list.text).to.equal(200);
      expect(list.body.data.map((m: { id: string }) => m.id)).to.deep.equal(c.models.filter((m) => m === c.model || m === 'gpt-4o'));
    });

    if (c.vendor === 'openai') {
      it('image generation, synchronous: the images come back in the answer, billed by the tokens it reports', async () => {
        const r = await call(rig.base, 'POST', '/vendors/openai/v1/images/generations', { key: rig.key, body: { model: 'gpt-image-1', prompt: 'A cute baby sea otter' } });
        expect(r.status, r.text).to.equal(200);
        expect(r.body.data[0].b64_json).to.be.a('string');
        expect(fake.seen('POST', '/v1/images/generations').at(-1)!.body).to.deep.equal({ model: 'gpt-image-1', prompt: 'A cute baby sea otter' });
        // 50 x 5.00 + 4160 x 40.00 µUSD = 0.16665 USD = 16665 milli-credits
        expect(await settledAmounts(rig, 1)).to.deep.equal([16_665]);
      });

      it('dall-e-3 reports no tokens, so it is not priced: refused (2003) before any call', async () => {
        const r = await call(rig.base, 'POST', '/vendors/openai/v1/images/generations', { key: rig.key, body: { model: 'dall-e-3', prompt: 'an otter' } });
        expect(String(r.body.error?.code ?? r.body.code)).to.equal('2003');
        expect(fake.seen('POST', '/v1/images/generations')).to.have.length(0);
      });
    }
  });
}
