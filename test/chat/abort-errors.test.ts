// Disconnects and upstream failures: a client that leaves aborts the upstream request (the
// upstream sees its response cut off); an upstream that breaks off mid-stream ends the client's
// stream cleanly with one error event; upstream errors keep OpenAI's error shape where the
// upstream gave one and carry the service codes 3001–3004.
import { request } from 'node:http';
import { expect } from 'chai';
import OpenAI from 'openai';
import { chatRig, rawPost, useChatRig, type ChatRig } from './rig.ts';

async function until(cond: () => boolean | Promise<boolean>, ms = 3000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 5));
  }
}

const settles = async (r: ChatRig) => (await r.gw.billing.listLedger(r.tenantId, { limit: 200 })).entries.filter((e) => e.kind === 'settle');

describe('chat: disconnects', () => {
  const r = useChatRig({ each: true });

  it('a client leaving mid-stream aborts the upstream request (and is billed what was relayed)', async () => {
    const controller = new AbortController();
    const stream = await r.client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'long answer [hold]' }], stream: true }, { signal: controller.signal });
    const it = stream[Symbol.asyncIterator]();
    await it.next();
    await it.next();
    await r.up.waitForHold();
    const aborted = r.up.aborted;
    controller.abort();
    // The SDK ends an aborted stream's iteration quietly.
    expect(await it.next()).to.deep.equal({ value: undefined, done: true });
    await until(() => r.up.aborted === aborted + 1);
    // The upstream connection of that request is gone, not parked; the gateway holds no client socket.
    await until(async () => (await new Promise<number>((res) => r.gw.server.getConnections((_e, n) => res(n)))) === 0);
    await until(async () => (await settles(r)).length === 1);
    const [charge] = await settles(r);
    expect(charge!.note).to.match(/^gpt-4o \d+ in \(0 cached\) 2 out \(estimated\)$/);
  });

  it('a client leaving a sync completion aborts the upstream request, and nothing is billed', async () => {
    const controller = new AbortController();
    const aborted = r.up.aborted;
    const p = r.client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'think [slow]' }] }, { signal: controller.signal });
    await until(() => r.up.seen.length > 0);
    controller.abort();
    expect(await p.catch((e: unknown) => e)).to.be.instanceOf(OpenAI.APIUserAbortError);
    await until(() => r.up.aborted === aborted + 1);
    await new Promise((res) => setTimeout(res, 450));
    expect(await settles(r)).to.have.length(0);
  });

  it('an upstream breaking off mid-stream ends the client stream cleanly, with an error event last', async () => {
    const answer = await new Promise<{ body: string; ended: boolean; aborted: boolean }>((resolve, reject) => {
      const u = new URL(r.gw.url);
      const req = request({ host: u.hostname, port: u.port, path: '/v1/chat/completions', method: 'POST', headers: { authorization: `Bearer ${r.key}`, 'content-type': 'application/json' } }, (res) => {
        let body = '';
        let aborted = false;
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('aborted', () => (aborted = true));
        res.on('end', () => resolve({ body, ended: true, aborted }));
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end(JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: 'go [drop]' }], stream: true }));
    });
    expect(answer.ended).to.equal(true);
    expect(answer.aborted).to.equal(false);
    const events = answer.body.split('\n\n').filter(Boolean);
    expect(events).to.have.length(4); // role, two words, then the gateway's error event
    const last = JSON.parse(events.at(-1)!.slice('data: '.length));
    expect(last.error.code).to.equal('3001');
    expect(last.error.type).to.equal('upstream_error');
    expect(last.error.message).to.match(/broke off/);
    await until(async () => (await settles(r)).length === 1);
    expect((await settles(r))[0]!.note).to.match(/ 3 out \(estimated\)$/);
  });

  it('the openai client sees the relayed chunks, then an APIError, when the upstream breaks off', async () => {
    const stream = await r.client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'go [drop]' }], stream: true });
    const got: string[] = [];
    const err = await (async () => {
      for await (const c of stream) if (c.choices[0]?.delta?.content) got.push(c.choices[0].delta.content);
    })().catch((e: unknown) => e);
    expect(got).to.deep.equal(['Hello', ' there']);
    expect(err).to.be.instanceOf(OpenAI.APIError);
    expect((err as Error).message).to.match(/broke off/);
  });
});

describe('chat: upstream errors', () => {
  const r = useChatRig({ upstreamTimeoutMs: 250 });
  type ApiError = InstanceType<typeof OpenAI.APIError>;
  const ask = (content: string, client = r.client): Promise<ApiError> =>
    client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content }] }).then(
      () => { throw new Error('expected an error'); },
      (e: unknown) => e as ApiError,
    );

  it('keeps the upstream\'s OpenAI error and its client status for a refused request (400 / 3002)', async () => {
    const e = await ask('[error400]');
    expect(e).to.be.instanceOf(OpenAI.BadRequestError);
    expect(e.message).to.equal("400 This model's maximum context length is 128000 tokens.");
    expect(e.code).to.equal('context_length_exceeded');
    expect(e.param).to.equal('messages');
    const raw = await rawPost(r, JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: '[error400]' }] }));
    const body = JSON.parse(raw.body);
    expect(raw.status).to.equal(400);
    expect(body.error_code).to.equal(3002);
    expect(body.type).to.match(/#3002$/);
    expect(body.error).to.deep.equal({ message: "This model's maximum context length is 128000 tokens.", type: 'invalid_request_error', param: 'messages', code: 'context_length_exceeded' });
    expect(raw.body).to.not.contain('secret-upstream-detail');
  });

  it('maps an overloaded upstream (503) to 500 / 3001, keeping its message', async () => {
    const e = await ask('[error503]');
    expect(e).to.be.instanceOf(OpenAI.InternalServerError);
    expect(e.status).to.equal(500);
    const raw = JSON.parse((await rawPost(r, JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: '[error503]' }] }))).body);
    expect(raw.error_code).to.equal(3001);
    expect(raw.error.message).to.equal('The engine is currently overloaded');
  });

  it('maps the upstream\'s own rate limit (429) to 500 / 3001: it is not the client\'s limit', async () => {
    const raw = await rawPost(r, JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: '[error429]' }] }));
    expect(raw.status).to.equal(500);
    expect(JSON.parse(raw.body).error_code).to.equal(3001);
  });

  it('maps a non-JSON error page to 500 / 3001 with a gateway-made error object', async () => {
    const raw = await rawPost(r, JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: '[nonjson]' }] }));
    const body = JSON.parse(raw.body);
    expect(raw.status).to.equal(500);
    expect(body.error_code).to.equal(3001);
    expect(body.error).to.deep.equal({ message: 'The provider answered HTTP 502.', type: 'upstream_error', param: null, code: '3001' });
    expect(raw.body).to.not.contain('<html>');
  });

  it('maps an upstream that does not answer in time to 500 / 3004', async () => {
    // undici's header timer fires on a ~0.5 s grid: a 250 ms limit trips at about 1 s.
    r.up.slowMs = 1500;
    const raw = await rawPost(r, JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: '[slow]' }] }));
    expect(raw.status).to.equal(500);
    expect(JSON.parse(raw.body).error_code).to.equal(3004);
  });

  it('maps an upstream refusing the gateway\'s own credentials (401) to 500 / 3002, never a client 401', async () => {
    const wrong = await chatRig({ upstreams: { provider_c: { base_url: r.up.url, credentials: { api_key: 'sk-wrong' } } } });
    try {
      const raw = await rawPost(wrong, JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] }));
      expect(raw.status).to.equal(500);
      expect(JSON.parse(raw.body).error_code).to.equal(3002);
    } finally {
      await wrong.close();
    }
  });

  it('maps an unreachable upstream to 500 / 3001', async () => {
    const down = await chatRig();
    await down.up.close();
    try {
      const raw = await rawPost(down, JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] }));
      expect(raw.status).to.equal(500);
      expect(JSON.parse(raw.body).error_code).to.equal(3001);
      const models = (await down.client.models.list().catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
      expect(models).to.be.instanceOf(OpenAI.InternalServerError);
      expect(models.code).to.equal('3001');
    } finally {
      await down.close();
    }
  });
});
