// Streaming: chunks are relayed as they arrive (not buffered), the SSE answer disables
// intermediary buffering and compression, and the upstream request asks for usage in the last
// chunk — changing the client's bytes only as much as that needs.
import { expect } from 'chai';
import { rawPost, useChatRig } from './rig.ts';
import { BIG_WORDS, WORDS } from './fake-openai.ts';
import { request, type IncomingMessage } from 'node:http';

describe('chat: streaming', () => {
  const r = useChatRig();

  it('delivers chunks to the client while the upstream still holds the stream open', async () => {
    const stream = await r.client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Say hello [hold]' }], stream: true });
    const finishedBefore = r.up.finished;
    const it = stream[Symbol.asyncIterator]();
    const first = await it.next(); // role chunk
    const second = await it.next(); // first content chunk: written before the upstream paused
    expect(first.value.choices[0].delta.role).to.equal('assistant');
    expect(second.value.choices[0].delta.content).to.equal(WORDS[0]);
    // The upstream is parked in the middle of its stream: nothing after chunk 2 exists yet.
    await r.up.waitForHold();
    expect(r.up.finished).to.equal(finishedBefore);
    r.up.release();
    const rest: string[] = [];
    for (let n = await it.next(); !n.done; n = await it.next()) if (n.value.choices[0]?.delta?.content) rest.push(n.value.choices[0].delta.content);
    expect([WORDS[0], ...rest]).to.deep.equal(WORDS);
  });

  it('holds the upstream back while the client reads slowly (back-pressure), then relays every event in order', async () => {
    const finishedBefore = r.up.finished;
    const u = new URL(`${r.gw.url}/v1/chat/completions`);
    const res = await new Promise<IncomingMessage>((resolve, reject) => {
      const req = request({ host: u.hostname, port: u.port, path: u.pathname, method: 'POST', headers: { authorization: `Bearer ${r.key}`, 'content-type': 'application/json' } }, resolve);
      req.on('error', reject);
      req.end(JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'a long one [big]' }], stream: true }));
    });
    expect(res.statusCode).to.equal(200);
    // Not read for a while: the 40 MB cannot all sit in socket buffers, so the upstream must wait.
    res.pause();
    await new Promise((resolve) => setTimeout(resolve, 700));
    expect(r.up.finished).to.equal(finishedBefore);
    let text = '';
    res.setEncoding('utf8');
    for await (const part of res) text += part;
    const words = text.split('\n\n').filter((e) => e.startsWith('data: {')).map((e) => (JSON.parse(e.slice(6)) as { choices: { delta: { content?: string } }[] }).choices[0]?.delta?.content).filter((c) => c);
    expect(words.length).to.equal(BIG_WORDS.length);
    expect(words.every((w, i) => w === BIG_WORDS[i])).to.equal(true);
    expect(text.endsWith('data: [DONE]\n\n')).to.equal(true);
  });

  it('answers SSE with no buffering hints for intermediaries, no compression, chunked, with Server-Timing', async () => {
    const res = await rawPost(r, JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], stream: true }), { 'accept-encoding': 'gzip, br' });
    expect(res.status).to.equal(200);
    expect(res.headers['content-type']).to.equal('text/event-stream; charset=utf-8');
    expect(res.headers['x-accel-buffering']).to.equal('no');
    expect(res.headers['cache-control']).to.equal('no-cache');
    expect(res.headers['content-encoding']).to.equal(undefined);
    expect(res.headers['content-length']).to.equal(undefined);
    expect(res.headers['transfer-encoding']).to.equal('chunked');
    expect(res.headers['server-timing']).to.match(/^gateway;dur=\d+\.\d{3}, upstream;dur=\d+\.\d{3}$/);
    expect(res.headers['x-request-id']).to.equal('req_fake_stream');
    const events = res.body.split('\n\n').filter(Boolean);
    expect(events.at(-1)).to.equal('data: [DONE]');
    expect(events.length).to.equal(1 + WORDS.length + 1 + 1 + 1); // role, words, finish, usage, [DONE]
    // The upstream was asked not to compress.
    expect(r.up.seen.at(-1)!.headers['accept-encoding']).to.equal('identity');
  });

  it('sends the client\'s bytes unchanged when nothing needs changing', async () => {
    const sync = '{ "model" : "gpt-4o-mini",\n  "messages": [{"role":"user","content":"hi"}] }';
    expect((await rawPost(r, sync)).status).to.equal(200);
    expect(r.up.seen.at(-1)!.raw).to.equal(sync);
    const asked = '{"model":"gpt-4o-mini","stream":true,  "stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}';
    expect((await rawPost(r, asked)).status).to.equal(200);
    expect(r.up.seen.at(-1)!.raw).to.equal(asked);
  });

  it('adds the usage option by a splice when the client did not send stream_options', async () => {
    const sent = '{"model":"gpt-4o-mini","stream":true,"seed":9223372036854775807,"messages":[{"role":"user","content":"hi"}]}  ';
    expect((await rawPost(r, sent)).status).to.equal(200);
    expect(r.up.seen.at(-1)!.raw).to.equal('{"model":"gpt-4o-mini","stream":true,"seed":9223372036854775807,"messages":[{"role":"user","content":"hi"}],"stream_options":{"include_usage":true}}  ');
  });

  it('merges it into the client\'s stream_options otherwise, keeping integers beyond 2^53 exact', async () => {
    const sent = '{"model":"gpt-4o-mini","stream":true,"seed":-9223372036854775807,"stream_options":{"include_usage":false,"include_obfuscation":false},"messages":[{"role":"user","content":"hi"}]}';
    const res = await rawPost(r, sent);
    expect(res.status).to.equal(200);
    const raw = r.up.seen.at(-1)!.raw;
    expect(raw).to.contain('"seed":-9223372036854775807');
    expect(JSON.parse(raw).stream_options).to.deep.equal({ include_usage: true, include_obfuscation: false });
    // The client asked for no usage chunk; it is relayed anyway (see docs/decisions-chat.md).
    expect(res.body).to.contain('"usage":{"prompt_tokens"');
  });
});
