// The request table of "Chat completion", one row per constraint: status, service code and
// the pointer of the offending field — and no upstream call for a refused request.
import { expect } from 'chai';
import { connect } from 'node:net';
import { rawPost, useChatRig } from './rig.ts';

const base = () => ({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] as unknown[] });
const metadata = (n: number, key = (i: number) => `k${i}`, value = (i: number): unknown => `v${i}`) => Object.fromEntries(Array.from({ length: n }, (_, i) => [key(i), value(i)]));
const fn = (i: number) => ({ name: `f_${i}`, parameters: { type: 'object' } });
const without = (k: string) => {
  const b: Record<string, unknown> = base();
  delete b[k];
  return b;
};

type Row = [name: string, body: unknown, code: number, pointer: string];

const REFUSED: Row[] = [
  ['model missing', without('model'), 2002, '/model'],
  ['model empty', { ...base(), model: '' }, 2003, '/model'],
  ['model not a string', { ...base(), model: 5 }, 2001, '/model'],
  ['model without a price here', { ...base(), model: 'unpriced-model' }, 2003, '/model'],
  ['messages missing', without('messages'), 2002, '/messages'],
  ['messages empty', { ...base(), messages: [] }, 2003, '/messages'],
  ['messages not an array', { ...base(), messages: 'hi' }, 2001, '/messages'],
  ['message role unknown', { ...base(), messages: [{ role: 'robot', content: 'x' }] }, 2001, '/messages/0/role'],
  ['message role missing', { ...base(), messages: [{ content: 'x' }] }, 2002, '/messages/0/role'],
  ['user message without content', { ...base(), messages: [{ role: 'user' }] }, 2002, '/messages/0/content'],
  ['developer message without content', { ...base(), messages: [{ role: 'developer' }] }, 2002, '/messages/0/content'],
  ['tool message without tool_call_id', { ...base(), messages: [{ role: 'tool', content: '{}' }] }, 2002, '/messages/0/tool_call_id'],
  ['function message without name', { ...base(), messages: [{ role: 'function', content: '{}' }] }, 2002, '/messages/0/name'],
  ['assistant message with neither content nor tool calls', { ...base(), messages: [{ role: 'user', content: 'x' }, { role: 'assistant' }] }, 2002, '/messages/1'],
  ['content of a wrong type', { ...base(), messages: [{ role: 'user', content: 5 }] }, 2001, '/messages/0/content'],
  ['temperature above 2', { ...base(), temperature: 2.01 }, 2003, '/temperature'],
  ['temperature below 0', { ...base(), temperature: -0.1 }, 2003, '/temperature'],
  ['temperature not a number', { ...base(), temperature: 'hot' }, 2001, '/temperature'],
  ['top_p above 1', { ...base(), top_p: 1.1 }, 2003, '/top_p'],
  ['top_p below 0', { ...base(), top_p: -0.5 }, 2003, '/top_p'],
  ['n of 0', { ...base(), n: 0 }, 2003, '/n'],
  ['n above 128', { ...base(), n: 129 }, 2003, '/n'],
  ['n not an integer', { ...base(), n: 1.5 }, 2001, '/n'],
  ['service_tier unknown', { ...base(), service_tier: 'turbo' }, 2001, '/service_tier'],
  ['modalities with an unknown value', { ...base(), modalities: ['video'] }, 2001, '/modalities/0'],
  ['tool_choice unknown string', { ...base(), tool_choice: 'sometimes' }, 2001, '/tool_choice'],
  ['tool_choice function object without a function', { ...base(), tool_choice: { type: 'function' } }, 2001, '/tool_choice'],
  ['tool_choice object of an unknown type', { ...base(), tool_choice: { type: 'magic', magic: {} } }, 2001, '/tool_choice'],
  ['seed above the int64 range', { ...base(), seed: 1e19 }, 2003, '/seed'],
  ['seed below the int64 range', { ...base(), seed: -1e19 }, 2003, '/seed'],
  ['seed not an integer', { ...base(), seed: 1.5 }, 2001, '/seed'],
  ['metadata with 17 pairs', { ...base(), metadata: metadata(17) }, 2003, '/metadata'],
  ['metadata key over 64 characters', { ...base(), metadata: metadata(1, () => 'k'.repeat(65)) }, 2003, '/metadata'],
  ['metadata value over 512 characters', { ...base(), metadata: metadata(1, undefined, () => 'v'.repeat(513)) }, 2003, '/metadata/k0'],
  ['metadata value not a string', { ...base(), metadata: metadata(1, undefined, () => 5) }, 2001, '/metadata/k0'],
  ['top_logprobs above 20', { ...base(), logprobs: true, top_logprobs: 21 }, 2003, '/top_logprobs'],
  ['top_logprobs below 0', { ...base(), logprobs: true, top_logprobs: -1 }, 2003, '/top_logprobs'],
  ['top_logprobs without logprobs', { ...base(), top_logprobs: 5 }, 2002, '/logprobs'],
  ['top_logprobs with logprobs false', { ...base(), logprobs: false, top_logprobs: 5 }, 2004, '/logprobs'],
  ['frequency_penalty above 2', { ...base(), frequency_penalty: 2.5 }, 2003, '/frequency_penalty'],
  ['frequency_penalty below -2', { ...base(), frequency_penalty: -2.5 }, 2003, '/frequency_penalty'],
  ['presence_penalty above 2', { ...base(), presence_penalty: 3 }, 2003, '/presence_penalty'],
  ['presence_penalty below -2', { ...base(), presence_penalty: -2.1 }, 2003, '/presence_penalty'],
  ['verbosity unknown', { ...base(), verbosity: 'loud' }, 2001, '/verbosity'],
  ['reasoning_effort unknown', { ...base(), reasoning_effort: 'max' }, 2001, '/reasoning_effort'],
  ['stop with 5 sequences', { ...base(), stop: ['a', 'b', 'c', 'd', 'e'] }, 2003, '/stop'],
  ['stop of a wrong type', { ...base(), stop: 5 }, 2001, '/stop'],
  ['logit_bias above 100', { ...base(), logit_bias: { '50256': 101 } }, 2003, '/logit_bias/50256'],
  ['logit_bias below -100', { ...base(), logit_bias: { '50256': -101 } }, 2003, '/logit_bias/50256'],
  ['stream_options without stream', { ...base(), stream_options: { include_usage: true } }, 2004, '/stream'],
  ['stream_options with stream false', { ...base(), stream: false, stream_options: { include_usage: true } }, 2004, '/stream'],
  ['audio modality without audio parameters', { ...base(), modalities: ['text', 'audio'] }, 2002, '/audio'],
  ['audio parameters without a format', { ...base(), modalities: ['text', 'audio'], audio: { voice: 'alloy' } }, 2002, '/audio/format'],
  ['functions empty', { ...base(), functions: [] }, 2003, '/functions'],
  ['functions over 128', { ...base(), functions: Array.from({ length: 129 }, (_, i) => fn(i)) }, 2003, '/functions'],
  ['function_call unknown', { ...base(), function_call: 'maybe' }, 2001, '/function_call'],
  ['response_format unknown type', { ...base(), response_format: { type: 'xml' } }, 2001, '/response_format/type'],
  ['response_format json_schema without its schema', { ...base(), response_format: { type: 'json_schema' } }, 2002, '/response_format/json_schema'],
  ['body an array', [base()], 2001, ''],
];

const ACCEPTED: [string, Record<string, unknown>][] = [
  ['unknown fields (passed on for the upstream to judge)', { ...base(), some_future_param: { x: 1 } }],
  ['optional fields as null', { ...base(), temperature: null, top_p: null, n: null, seed: null, stop: null, metadata: null, service_tier: null, user: null }],
  ['the bounds of every range', { ...base(), temperature: 2, top_p: 0, n: 128, frequency_penalty: -2, presence_penalty: 2, seed: 9223372036854775807, logit_bias: { '1': 100, '2': -100 } }],
  ['top_logprobs 20 with logprobs', { ...base(), logprobs: true, top_logprobs: 20 }],
  ['metadata with 16 pairs of the longest keys and values', { ...base(), metadata: metadata(16, (i) => `${i}`.padEnd(64, 'k'), () => 'v'.repeat(512)) }],
  ['stop with 4 sequences, and as a string', { ...base(), stop: ['a', 'b', 'c', 'd'] }],
  ['stream_options with streaming', { ...base(), stream: true, stream_options: { include_usage: true } }],
  ['audio modality with audio parameters', { ...base(), modalities: ['text', 'audio'], audio: { voice: 'alloy', format: 'wav' } }],
  ['128 deprecated functions and function_call', { ...base(), functions: Array.from({ length: 128 }, (_, i) => fn(i)), function_call: 'auto' }],
  ['every tool_choice shape', { ...base(), tools: [{ type: 'function', function: fn(0) }], tool_choice: { type: 'function', function: { name: 'f_0' } } }],
  ['tool_choice required, and allowed_tools', { ...base(), tools: [{ type: 'function', function: fn(0) }], tool_choice: { type: 'allowed_tools', allowed_tools: { mode: 'auto', tools: [{ type: 'function', function: { name: 'f_0' } }] } } }],
  ['all message kinds', {
    ...base(),
    messages: [
      { role: 'developer', content: 'd' }, { role: 'system', content: [{ type: 'text', text: 's' }] },
      { role: 'user', content: [{ type: 'text', text: 'look' }, { type: 'image_url', image_url: { url: 'https://example.com/cat.png', detail: 'low' } }] },
      { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: 'c1', content: 'ok' }, { role: 'function', name: 'f', content: 'ok' },
    ],
  }],
  ['verbosity, reasoning effort, service tier, response format, web search, prediction, store', {
    ...base(), verbosity: 'low', reasoning_effort: 'minimal', service_tier: 'flex', store: true, parallel_tool_calls: false,
    response_format: { type: 'json_schema', json_schema: { name: 'answer', schema: { type: 'object' }, strict: true } },
    web_search_options: { search_context_size: 'low' }, prediction: { type: 'content', content: 'draft' },
    prompt_cache_key: 'k', safety_identifier: 'u-1', max_completion_tokens: 10, max_tokens: 10,
  }],
];

describe('chat: request validation', () => {
  const r = useChatRig();

  for (const [name, body, code, pointer] of REFUSED) {
    it(`refuses ${name}: ${code === 2005 ? 404 : 400} / ${code} at ${pointer || '(body)'}`, async () => {
      const calls = r.up.seen.length;
      const res = await rawPost(r, JSON.stringify(body));
      expect(res.status, res.body).to.equal(400);
      expect(res.headers['content-type']).to.equal('application/problem+json');
      const problem = JSON.parse(res.body);
      expect(problem.error_code, res.body).to.equal(code);
      expect(problem.type).to.match(new RegExp(`#${code}$`));
      expect(problem.error.code).to.equal(String(code));
      expect(problem.error.type).to.equal('invalid_request_error');
      if (pointer) expect(problem.errors.map((e: { pointer: string }) => e.pointer), res.body).to.include(pointer);
      expect(r.up.seen.length, 'no upstream call').to.equal(calls);
    });
  }

  it('refuses malformed JSON with 400 / 2001, and a body not declared JSON with 415', async () => {
    const bad = await rawPost(r, '{"model": "gpt-4o-mini", ');
    expect(bad.status).to.equal(400);
    expect(JSON.parse(bad.body).error_code).to.equal(2001);
    const text = await rawPost(r, JSON.stringify(base()), { 'content-type': 'text/plain' });
    expect(text.status).to.equal(415);
    expect(JSON.parse(text.body).error_code).to.equal(2001);
  });

  it('refuses a body declared over the route\'s limit with 413 / 2101 without reading it', async () => {
    const u = new URL(r.gw.url);
    const answer = await new Promise<string>((resolve, reject) => {
      const s = connect(Number(u.port), u.hostname, () => {
        s.write(`POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${r.key}\r\nContent-Type: application/json\r\nContent-Length: ${70 * 1024 * 1024}\r\n\r\n{`);
      });
      let text = '';
      s.on('data', (c) => (text += c.toString()));
      s.on('close', () => resolve(text));
      s.on('error', reject);
    });
    expect(answer).to.match(/^HTTP\/1\.1 413 /);
    expect(answer).to.match(/connection: close/i);
    expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)).error_code).to.equal(2101);
  });

  for (const [name, body] of ACCEPTED) {
    it(`accepts ${name}`, async () => {
      const res = await rawPost(r, JSON.stringify(body));
      expect(res.status, res.body).to.equal(200);
      expect(r.up.seen.at(-1)!.body.model).to.equal('gpt-4o-mini');
    });
  }

  it('passes unknown fields to the upstream untouched', async () => {
    await rawPost(r, JSON.stringify({ ...base(), some_future_param: { x: 1 } }));
    expect(r.up.seen.at(-1)!.body.some_future_param).to.deep.equal({ x: 1 });
  });

  it('drops inline images over 8 MB (and only those), and says so in a header', async () => {
    const small = `data:image/png;base64,${Buffer.alloc(1024, 1).toString('base64')}`;
    const big = `data:image/png;base64,${Buffer.alloc(8 * 1024 * 1024 + 3, 2).toString('base64')}`;
    const body = {
      ...base(),
      messages: [{ role: 'user', content: [{ type: 'text', text: 'two pictures' }, { type: 'image_url', image_url: { url: big } }, { type: 'image_url', image_url: { url: small } }, { type: 'image_url', image_url: { url: 'https://example.com/remote.png' } }] }],
    };
    const res = await rawPost(r, JSON.stringify(body));
    expect(res.status, res.body.slice(0, 300)).to.equal(200);
    expect(res.headers['x-gateway-dropped-media']).to.equal('1');
    const sent = r.up.seen.at(-1)!.body.messages[0].content;
    expect(sent.map((p: { type: string }) => p.type)).to.deep.equal(['text', 'image_url', 'image_url']);
    expect(sent[1].image_url.url).to.equal(small);
    expect(sent[2].image_url.url).to.equal('https://example.com/remote.png');
    // Exactly 8 MB is kept.
    const edge = `data:image/png;base64,${Buffer.alloc(8 * 1024 * 1024, 3).toString('base64')}`;
    const kept = await rawPost(r, JSON.stringify({ ...base(), messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: edge } }] }] }));
    expect(kept.status).to.equal(200);
    expect(kept.headers['x-gateway-dropped-media']).to.equal(undefined);
    expect(r.up.seen.at(-1)!.body.messages[0].content[0].image_url.url.length).to.equal(edge.length);
  });
});
