// The proxy's small parts: the SSE usage tap (events split anywhere across chunks), exact
// token pricing, inline media sizing, body rewriting, and descriptor problems found at start-up.
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { LoadError } from '../../engine/config/yaml-source.ts';
import { inlineBytes, rewriteBody } from '../../engine/proxy/body.ts';
import { compileItemsWalker, compileGetter } from '../../engine/descriptors/json-path.ts';
import { SseTap } from '../../engine/proxy/sse-tap.ts';
import { compileTokenPrices } from '../../engine/descriptors/token-prices.ts';
import { ROOT, startTestGateway } from '../helpers/gateway.ts';

describe('chat units: SSE usage tap', () => {
  const usage = { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 };
  const stream = [
    `data: ${JSON.stringify({ id: 'c', choices: [{ delta: { content: 'say "usage": {} in text' } }], usage: null })}\n\n`,
    `data: ${JSON.stringify({ id: 'c', choices: [{ delta: { content: 'é€😀' } }], usage: null })}\r\n\r\n`,
    ': a comment line\n\n',
    `data: ${JSON.stringify({ id: 'c', choices: [], usage })}\n\n`,
    'data: [DONE]\n\n',
  ].join('');

  it('finds the usage event and counts data events, however the stream is cut into chunks', () => {
    const bytes = Buffer.from(stream);
    for (const size of [1, 2, 3, 7, 16, 64, bytes.length]) {
      const tap = new SseTap('usage');
      for (let i = 0; i < bytes.length; i += size) tap.feed(bytes.subarray(i, i + size));
      expect(tap.events, `chunk size ${size}`).to.equal(3);
      expect(tap.usageEvent?.usage, `chunk size ${size}`).to.deep.equal(usage);
    }
  });

  it('ignores `"usage":` inside content and usage: null', () => {
    const tap = new SseTap('usage');
    tap.feed(Buffer.from(stream.split('\n\n').slice(0, 2).join('\n\n') + '\n\n'));
    expect(tap.usageEvent).to.equal(undefined);
  });
});

describe('chat units: token prices', () => {
  const pricer = compileTokenPrices({ models: { 'gpt-4o': { input: '2.50', output: '10.00', cached_input: '1.25' }, 'ft:*': { input: '0.000000000001', output: '3' } }, default: { input: '1', output: '1' } }, 100);

  it('prices input, cached input and output exactly, rounding once, half up, to the milli-credit', () => {
    const p = pricer.priceOf('gpt-4o')!;
    expect(pricer.cost(p, { input: 1000, output: 500, cachedInput: 200, estimated: false })).to.equal(725);
    expect(pricer.cost(p, { input: 1, output: 0, cachedInput: 0, estimated: false })).to.equal(0); // 0.25 milli
    expect(pricer.cost(p, { input: 2, output: 0, cachedInput: 0, estimated: false })).to.equal(1); // 0.5 milli → 1
    expect(pricer.cost(p, { input: 0, output: 1_000_000_000, cachedInput: 0, estimated: false })).to.equal(1_000_000_000); // 10 000 USD
    expect(pricer.cost(p, { input: 10, output: 0, cachedInput: 50, estimated: false })).to.equal(1); // cached capped at input: 10 x 1.25 = 1.25 milli
  });

  it('matches prefixes, then the default; lists only models with their own price', () => {
    expect(pricer.priceOf('ft:gpt-4o:acme')!.output).to.equal('3');
    expect(pricer.priceOf('other')!.input).to.equal('1');
    expect(pricer.lists('other')).to.equal(false);
    expect(pricer.lists('ft:x')).to.equal(true);
  });
});

describe('chat units: request bodies', () => {
  it('sizes data URIs and bare Base64, not URLs', () => {
    expect(inlineBytes(`data:image/png;base64,${Buffer.alloc(300).toString('base64')}`)).to.equal(300);
    expect(inlineBytes(Buffer.alloc(301).toString('base64'))).to.equal(301);
    expect(inlineBytes('https://example.com/a.png')).to.equal(0);
    expect(inlineBytes('data:text/plain,hello')).to.equal(0);
  });

  it('rewrites only when needed and keeps big integers', () => {
    const raw = Buffer.from('{"seed":12345678901234567890,"stream":true}');
    const parsed = JSON.parse(raw.toString()) as Record<string, unknown>;
    expect(rewriteBody(raw, parsed, {}).body).to.equal(raw);
    expect(rewriteBody(raw, parsed, { setTrue: 'stream_options.include_usage' }).body.toString()).to.equal('{"seed":12345678901234567890,"stream":true,"stream_options":{"include_usage":true}}');
    const withOpts = Buffer.from('{"seed":12345678901234567890,"stream_options":{"x":1}}');
    expect(rewriteBody(withOpts, JSON.parse(withOpts.toString()), { setTrue: 'stream_options.include_usage' }).body.toString()).to.equal('{"seed":12345678901234567890,"stream_options":{"x":1,"include_usage":true}}');
    const empty = Buffer.from('{}');
    expect(rewriteBody(empty, {}, { setTrue: 'a.b' }).body.toString()).to.equal('{"a":{"b":true}}');
  });

  it('walks nested arrays for media items', () => {
    const walk = compileItemsWalker('messages[*].content[*]');
    const body = { messages: [{ content: 'text' }, { content: [{ n: 1 }, { n: 2 }] }, { content: [{ n: 3 }] }] };
    const seen: number[] = [];
    walk(body, (a, i) => seen.push((a[i] as { n: number }).n));
    expect(seen.sort()).to.deep.equal([1, 2, 3]);
    expect(compileGetter('a.b.c')({ a: { b: { c: 4 } } })).to.equal(4);
    expect(compileGetter('a.b')({ a: 'x' })).to.equal(undefined);
  });
});

describe('chat units: descriptor problems stop start-up, positioned', () => {
  const variants: [string, (yaml: string) => string, RegExp][] = [
    ['a stream route without proxy.stream', (y) => y.replace(/      stream:\n        flag: stream\n        usage_option: stream_options.include_usage\n/, ''), /a stream route needs proxy\.stream/],
    ['a list priced by a route that does not exist', (y) => y.replace('priced_by: chat_completions', 'priced_by: nope'), /no route "nope" with proxy\.token_prices/],
    ['a token price that is not a decimal string', (y) => y.replace('gpt-4o: { input: "2.50"', 'gpt-4o: { input: 2.5'), /token_prices\/models\/gpt-4o\/input/],
    ['a usage path that is an expression', (y) => y.replace('output: usage.completion_tokens', 'output: $sum(usage.*)'), /usage\/output/],
  ];
  for (const [name, edit, message] of variants) {
    it(name, async () => {
      const dir = mkdtempSync(join(tmpdir(), 'chat-bad-'));
      try {
        cpSync(join(ROOT, 'vendors', 'provider_c'), join(dir, 'provider_c'), { recursive: true });
        const yaml = readFileSync(join(ROOT, 'vendors', 'provider_c.yaml'), 'utf8');
        const edited = edit(yaml);
        expect(edited).to.not.equal(yaml);
        writeFileSync(join(dir, 'provider_c.yaml'), edited);
        const err = await startTestGateway({ sandbox: false, vendorsDir: dir, upstreams: { provider_c: { base_url: 'http://127.0.0.1:9', credentials: { api_key: 'k' } } } }).catch((e: unknown) => e);
        expect(err).to.be.instanceOf(LoadError);
        const text = (err as LoadError).problems.map((p) => `${p.file}:${p.line}:${p.col} ${p.pointer} ${p.message}`).join('\n');
        expect(text).to.match(message);
        expect((err as LoadError).problems[0]!.line).to.be.greaterThan(0);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  }
});
