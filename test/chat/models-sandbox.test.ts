// /v1/models: the upstream's list, filtered by the descriptor (priced models only), cached
// briefly, served stale rather than failing when a refresh fails. And the sandbox: the same
// routes served by the built-in OpenAI-compatible simulator, no provider account needed.
import { expect } from 'chai';
import OpenAI from 'openai';
import { DEMO_KEY, startTestGateway } from '../helpers/gateway.ts';
import type { Gateway } from '../../engine/gateway.ts';
import { chatRig, type ChatRig } from './rig.ts';

describe('chat: /v1/models', () => {
  let r: ChatRig;
  beforeEach(async () => {
    r = await chatRig({ scale: 0.0005 }); // cache_ms 60000 x 0.0005 = 30 ms
  });
  afterEach(async () => {
    await r.close();
  });

  it('reuses the upstream\'s answer while it is fresh, refreshes it after', async () => {
    const a = await r.client.models.list();
    const b = await r.client.models.list();
    expect(a.data).to.deep.equal(b.data);
    expect(r.up.modelsCalls).to.equal(1);
    await new Promise((res) => setTimeout(res, 40));
    r.up.models = ['gpt-4o', 'brand-new-unpriced'];
    const c = await r.client.models.list();
    expect(r.up.modelsCalls).to.equal(2);
    expect(c.data.map((m) => m.id)).to.deep.equal(['gpt-4o']);
  });

  it('shares one upstream call between concurrent misses', async () => {
    await Promise.all(Array.from({ length: 8 }, () => r.client.models.list()));
    expect(r.up.modelsCalls).to.equal(1);
  });

  it('serves the last good list when a refresh fails (a first failure is 3001: see abort-errors)', async () => {
    await r.client.models.list();
    await new Promise((res) => setTimeout(res, 40));
    await r.up.close();
    const stale = await r.client.models.list();
    expect(stale.data.map((m) => m.id)).to.deep.equal(['gpt-4o-mini', 'gpt-4o', 'o4-mini']);
  });
});

describe('chat: sandbox', () => {
  let gw: Gateway;
  let client: OpenAI;
  before(async () => {
    gw = await startTestGateway({ sandbox: true });
    // The sandbox's demo key, as the README's first steps use it.
    client = new OpenAI({ apiKey: DEMO_KEY, baseURL: `${gw.url}/v1`, maxRetries: 0 });
  });
  after(async () => {
    await gw.close();
  });

  it('answers a completion from the fixture, echoing the prompt, with usage', async () => {
    const c = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Say hi' }] });
    expect(c.choices[0]!.message.content).to.equal('This is the sandbox answering: Say hi');
    expect(c.usage!.completion_tokens).to.be.greaterThan(0);
  });

  it('streams it word by word, with the usage chunk', async () => {
    const s = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Say hi' }], stream: true });
    let text = '';
    let usage = false;
    for await (const c of s) {
      text += c.choices[0]?.delta?.content ?? '';
      if (c.usage) usage = true;
    }
    expect(text).to.equal('This is the sandbox answering: Say hi');
    expect(usage).to.equal(true);
  });

  it('calls the first tool when tools are offered', async () => {
    const c = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Weather?' }], tools: [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } }] });
    expect(c.choices[0]!.finish_reason).to.equal('tool_calls');
    expect((c.choices[0]!.message.tool_calls![0] as { function: { name: string } }).function.name).to.equal('get_weather');
  });

  it('is steered by magic text: [sandbox:reject] → 400 / 3002, [sandbox:unavailable] → 500 / 3001', async () => {
    const rej = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: '[sandbox:reject]' }] }).catch((e: unknown) => e);
    expect(rej).to.be.instanceOf(OpenAI.BadRequestError);
    expect((rej as InstanceType<typeof OpenAI.BadRequestError>).code).to.equal('sandbox_rejected');
    const un = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: '[sandbox:unavailable]' }] }).catch((e: unknown) => e);
    expect(un).to.be.instanceOf(OpenAI.InternalServerError);
  });

  it('lists the fixture\'s models that have a price', async () => {
    const m = await client.models.list();
    expect(m.data.map((x) => x.id)).to.deep.equal(['gpt-4o-mini', 'gpt-4o', 'gpt-4.1', 'gpt-4.1-mini', 'gpt-4.1-nano', 'o4-mini']);
  });
});
