// The official `openai` client pointed at the gateway's /v1 base URL, against a real fake
// OpenAI-compatible upstream: sync, streamed, tools, models.list — and what the gateway adds
// or keeps on the way (Traceparent, Server-Timing, the upstream's bytes unchanged).
import { expect } from 'chai';
import OpenAI from 'openai';
import { useChatRig } from './rig.ts';
import { FAKE_USAGE, WORDS } from './fake-openai.ts';

describe('chat: the openai client through the gateway', () => {
  const r = useChatRig();

  it('chat.completions.create (sync) returns the upstream completion, and the upstream got the request as sent', async () => {
    const { data, response } = await r.client.chat.completions
      .create({ model: 'gpt-4o-mini', messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hello?' }], temperature: 0.2, seed: 7 })
      .withResponse();
    expect(data.object).to.equal('chat.completion');
    expect(data.choices[0]!.message.content).to.equal(WORDS.join(''));
    expect(data.usage).to.deep.equal(FAKE_USAGE);
    expect(response.headers.get('traceparent')).to.match(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    expect(response.headers.get('server-timing')).to.match(/^gateway;dur=\d+\.\d{3}, upstream;dur=\d+\.\d{3}$/);
    const seen = r.up.seen.at(-1)!;
    expect(seen.body).to.deep.equal({ model: 'gpt-4o-mini', messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hello?' }], temperature: 0.2, seed: 7 });
    expect(seen.headers.authorization).to.equal('Bearer sk-upstream-test'); // the gateway's credential, never the client's key
    expect(seen.headers.traceparent).to.match(/^00-[0-9a-f]{32}-/);
    expect(seen.headers.traceparent!.slice(3, 35)).to.equal(response.headers.get('traceparent')!.slice(3, 35));
  });

  it('passes the JSON answer through byte for byte, with its status and allowed headers only', async () => {
    const body = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi [pretty]' }] });
    const res = await fetch(`${r.gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${r.key}`, 'content-type': 'application/json' }, body });
    const text = await res.text();
    expect(res.status).to.equal(200);
    // The fake indents its JSON by three spaces: any re-serialisation would have lost that.
    const parsed = JSON.parse(text);
    expect(text).to.equal(JSON.stringify(parsed, null, 3));
    expect(parsed.id).to.match(/^chatcmpl-/);
    expect(res.headers.get('x-request-id')).to.equal('req_fake_1');
    expect(res.headers.get('openai-processing-ms')).to.equal('12');
    expect(res.headers.get('x-ratelimit-remaining-requests')).to.equal(null);
    expect(res.headers.get('set-cookie')).to.equal(null);
    expect(res.headers.get('content-length')).to.equal(String(Buffer.byteLength(text)));
  });

  it('streams: iterating chunks yields the upstream deltas in order, then the usage chunk', async () => {
    const stream = await r.client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Say hello' }], stream: true });
    const deltas: string[] = [];
    let usage: unknown;
    let finish: string | null = null;
    for await (const chunk of stream) {
      expect(chunk.object).to.equal('chat.completion.chunk');
      if (chunk.choices[0]?.delta?.content) deltas.push(chunk.choices[0].delta.content);
      if (chunk.choices[0]?.finish_reason) finish = chunk.choices[0].finish_reason;
      if (chunk.usage) usage = chunk.usage;
    }
    expect(deltas).to.deep.equal(WORDS);
    expect(finish).to.equal('stop');
    expect(usage).to.deep.equal(FAKE_USAGE);
    // The gateway asked the upstream for usage in the last chunk.
    expect(r.up.seen.at(-1)!.body.stream_options).to.deep.equal({ include_usage: true });
  });

  it('tools: a function call comes back (sync and streamed), and the tool result round-trips', async () => {
    const tools: OpenAI.Chat.Completions.ChatCompletionTool[] = [
      { type: 'function', function: { name: 'get_weather', description: 'Weather in a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } },
    ];
    const c = await r.client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Weather in Paris?' }], tools, tool_choice: 'auto' });
    const call = c.choices[0]!.message.tool_calls![0]! as OpenAI.Chat.Completions.ChatCompletionMessageFunctionToolCall;
    expect(c.choices[0]!.finish_reason).to.equal('tool_calls');
    expect(call.function.name).to.equal('get_weather');
    expect(JSON.parse(call.function.arguments)).to.deep.equal({ city: 'Paris' });
    expect(r.up.seen.at(-1)!.body.tools).to.deep.equal(tools);

    const stream = await r.client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Weather in Paris?' }], tools, stream: true });
    let args = '';
    let name = '';
    for await (const chunk of stream) {
      const tc = chunk.choices[0]?.delta?.tool_calls?.[0];
      if (tc?.function?.name) name = tc.function.name;
      if (tc?.function?.arguments) args += tc.function.arguments;
    }
    expect(name).to.equal('get_weather');
    expect(JSON.parse(args)).to.deep.equal({ city: 'Paris' });

    const follow = await r.client.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [
        { role: 'user', content: 'Weather in Paris?' },
        { role: 'assistant', content: null, tool_calls: [{ id: call.id, type: 'function', function: call.function }] },
        { role: 'tool', tool_call_id: call.id, content: '{"temp_c": 18}' },
      ],
      tools,
      tool_choice: 'none',
    });
    expect(follow.choices[0]!.message.content).to.equal(WORDS.join(''));
  });

  it('models.list lists what the upstream offers that has a price here', async () => {
    const page = await r.client.models.list();
    expect(page.data.map((m) => m.id)).to.deep.equal(['gpt-4o-mini', 'gpt-4o', 'o4-mini']);
    expect(page.data[0]).to.deep.equal({ id: 'gpt-4o-mini', object: 'model', created: 1700000000, owned_by: 'fake' });
  });

  it('serves the same route under /vendors/provider_c/v1 (the client pointed there works alike)', async () => {
    const client = new OpenAI({ apiKey: r.key, baseURL: `${r.gw.url}/vendors/provider_c/v1`, maxRetries: 0 });
    const c = await client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] });
    expect(c.model).to.equal('gpt-4o');
    const models = await client.models.list();
    expect(models.data.length).to.equal(3);
  });

  it('answers 401/1001 to a bad key and 403/1002 to a key without the provider_c scope, in a shape the SDK reads', async () => {
    const bad = r.clientFor('gw_live_nope');
    const e1 = await bad.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e);
    expect(e1).to.be.instanceOf(OpenAI.AuthenticationError);
    expect((e1 as InstanceType<typeof OpenAI.AuthenticationError>).code).to.equal('1001');

    const { key } = await r.gw.tenants.issueKey(r.tenantId, { scopes: ['provider_b:*'] });
    const e2 = await r.clientFor(key).chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e);
    expect(e2).to.be.instanceOf(OpenAI.PermissionDeniedError);
    expect((e2 as InstanceType<typeof OpenAI.PermissionDeniedError>).code).to.equal('1002');
    const e3 = await r.clientFor(key).models.list().catch((e: unknown) => e);
    expect(e3).to.be.instanceOf(OpenAI.PermissionDeniedError);

    const { key: reader } = await r.gw.tenants.issueKey(r.tenantId, { scopes: ['provider_c:read'] });
    expect((await r.clientFor(reader).models.list()).data.length).to.equal(3);
    const e4 = await r.clientFor(reader).chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e);
    expect(e4).to.be.instanceOf(OpenAI.PermissionDeniedError);
  });

  it('answers 405 with Allow for another method, and express serves odd spellings of the path the same way', async () => {
    const res = await fetch(`${r.gw.url}/v1/chat/completions`, { headers: { authorization: `Bearer ${r.key}` } });
    expect(res.status).to.equal(405);
    expect(res.headers.get('allow')).to.equal('POST');
    const slash = await fetch(`${r.gw.url}/v1/chat/completions/`, {
      method: 'POST',
      headers: { authorization: `Bearer ${r.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(slash.status).to.equal(200);
    expect(slash.headers.get('traceparent')).to.match(/^00-/);
    expect((await slash.json()).object).to.equal('chat.completion');
  });

  it('continues the caller\'s trace', async () => {
    const incoming = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    const res = await fetch(`${r.gw.url}/v1/models`, { headers: { authorization: `Bearer ${r.key}`, traceparent: incoming } });
    expect(res.status).to.equal(200);
    const tp = res.headers.get('traceparent')!;
    expect(tp.slice(0, 36)).to.equal('00-0af7651916cd43dd8448eb211c80319c-');
    expect(tp.slice(36, 52)).to.not.equal('b7ad6b7169203331');
  });
});
