// Issue 33: every process caches API keys and tenants (slot {dir}) instead of reading them per
// request, and a change made through one process reaches the other within 1 s: two real
// `gateway serve` processes on one real redis-server.
//  - a revoked key, a suspended (and re-enabled) tenant, a lowered rate limit: B answers by the
//    change within 1 s of A's answer (each B warmed first, so it had them cached);
//  - B's subscription cut (CLIENT KILL TYPE pubsub) right before a revocation: B still refuses
//    the key at once (a feed that may have missed a message is not trusted).
import { expect } from 'chai';
import { Agent, request } from 'undici';
import { FakeOpenAI } from '../chat/fake-openai.ts';
import { startGatewayPair, type GatewayPair } from '../helpers/gateway-pair.ts';
import { admin, tenantWithKey, type GatewayProcess } from './support.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The answer's status, `refused` for a 401. */
// Each key is sent from an address of its own (127.0.0.<n>): the refusals here would otherwise
// reach the failed-authentication throttle of the one address (10 a minute), which refuses every key.
let nextAddress = 10;
const agents = new Map<string, Agent>();

async function status(base: string, key: string, path = '/v1/balance'): Promise<number | 'refused'> {
  const chat = path === '/v1/chat/completions';
  if (!agents.has(key)) agents.set(key, new Agent({ localAddress: `127.0.0.${nextAddress++}` }));
  const res = await request(`${base}${path}`, {
    method: chat ? 'POST' : 'GET',
    headers: { authorization: `Bearer ${key}`, ...(chat ? { 'content-type': 'application/json' } : {}) },
    body: chat ? JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], max_tokens: 16 }) : undefined,
    dispatcher: agents.get(key),
  });
  await res.body.dump();
  return res.statusCode === 401 ? 'refused' : res.statusCode;
}

/**
 * How long after `change` resolves B first answers `want` (polled every 5 ms): the time the
 * answering probe was sent. Fails when a probe sent 1 s or more after the change still gets
 * the old answer (one sent before may come back later than that on a busy machine).
 */
async function seenAfter(change: () => Promise<unknown>, probe: () => Promise<number | 'refused'>, want: number | 'refused'): Promise<number> {
  await change();
  const t0 = Date.now();
  for (;;) {
    const sent = Date.now() - t0;
    const got = await probe();
    if (got === want) return sent;
    expect(sent, `still ${got}, not ${want}`).to.be.below(1000);
    await sleep(5);
  }
}

describe('redis mode: key and tenant changes reach every process within 1 s (in-process directory cache)', function () {
  this.timeout(120_000);
  let chat: FakeOpenAI;
  let pair: GatewayPair;
  let a: GatewayProcess;
  let b: GatewayProcess;
  before(async () => {
    chat = await new FakeOpenAI().start();
    pair = await startGatewayPair({ prefix: 'dc', upstreamUrl: chat.url, chatUrl: chat.url, chatKey: 'sk-upstream-test' });
    ({ a, b } = pair);
  });
  after(async () => {
    await pair?.stop();
    await chat?.close();
    await Promise.all([...agents.values()].map((x) => x.close()));
  });

  /** A key that B has answered (so has cached) several times. */
  async function warmKey(): Promise<{ tenantId: string; key: string; keyId: string }> {
    const { tenantId, key } = await tenantWithKey(a.url);
    for (let i = 0; i < 5; i++) expect(await status(b.url, key)).to.equal(200);
    const keys = (await admin(a.url, 'GET', `/tenants/${tenantId}/keys`)).data as { id: string }[];
    return { tenantId, key, keyId: keys[0]!.id };
  }

  it('a rate limit lowered on A is enforced by B within 1 s', async () => {
    const { tenantId, key } = await warmKey();
    await admin(a.url, 'PUT', `/tenants/${tenantId}/limits`, { rate: { key: { per_minute: 1000 } } });
    await sleep(300);
    for (let i = 0; i < 3; i++) expect(await status(b.url, key, '/v1/chat/completions')).to.equal(200);
    const ms = await seenAfter(() => admin(a.url, 'PUT', `/tenants/${tenantId}/limits`, { rate: { key: { per_minute: 2 } } }), () => status(b.url, key, '/v1/chat/completions'), 429);
    console.log(`      lowered rate limit enforced on B after ${ms} ms`);
  });

  it('a key revoked on A is refused by B within 1 s (5 rounds)', async () => {
    const seen: number[] = [];
    for (let round = 0; round < 5; round++) {
      const { key, keyId } = await warmKey();
      seen.push(await seenAfter(() => admin(a.url, 'DELETE', `/keys/${keyId}`), () => status(b.url, key), 'refused'));
    }
    console.log(`      revocation seen on B after ${seen.join(', ')} ms`);
  });

  it('a tenant suspended on A is refused by B within 1 s, and served again within 1 s of its re-enabling', async () => {
    const { tenantId, key } = await warmKey();
    const off = await seenAfter(() => admin(a.url, 'PATCH', `/tenants/${tenantId}`, { disabled: true }), () => status(b.url, key), 'refused');
    const on = await seenAfter(() => admin(a.url, 'PATCH', `/tenants/${tenantId}`, { disabled: false }), () => status(b.url, key), 200);
    console.log(`      suspension seen on B after ${off} ms, re-enabling after ${on} ms`);
  });

  it('with its subscription cut, B does not serve a cached key revoked meanwhile', async () => {
    for (let round = 0; round < 5; round++) {
      const { key, keyId } = await warmKey();
      await pair.control.call('CLIENT', 'KILL', 'TYPE', 'pubsub');
      await admin(a.url, 'DELETE', `/keys/${keyId}`);
      expect(await status(b.url, key), `round ${round}: the first request after the revocation`).to.equal('refused');
    }
    // The subscriptions come back, and B caches again: a new key still works on both.
    await sleep(1500);
    const { key } = await warmKey();
    expect(await status(a.url, key)).to.equal(200);
  });
});
