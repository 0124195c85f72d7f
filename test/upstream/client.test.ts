// The async routes' upstream client (engine/upstream/client.ts) against a real HTTP server: its
// time limit covers the whole exchange exactly, and is gone with the exchange (engine/util/deadline.ts),
// so a steady stream of calls does not leave a 30 s timer and abort signal behind for each.
import { expect } from 'chai';
import { queryObjects } from 'node:v8';
import { createUpstreamAgent, UpstreamClient } from '../../engine/upstream/client.ts';
import { UpstreamTimeout } from '../../engine/upstream/network-error.ts';
import { deadline } from '../../engine/util/deadline.ts';
import { FakeUpstream, json } from '../helpers/upstream.ts';

/** Node's timer class (not exported by name). */
const Timeout = setTimeout(() => undefined, 0).constructor as new () => unknown;

describe('upstream client', () => {
  const up = new FakeUpstream();
  const agent = createUpstreamAgent();
  const client = (timeoutMs: number) => new UpstreamClient({ vendor: 'test', baseUrl: up.url, auth: { headers: () => ({}) }, timeoutMs, dispatcher: agent });

  before(async () => {
    await up.start();
    up.on('POST', '/tasks', (_req, res) => json(res, 200, { id: 't1' }));
    up.on('GET', '/slow', () => undefined); // never answers
  });
  after(async () => {
    await up.close();
    await agent.close();
  });

  it('answers, and leaves no timer behind once the exchange is over', async () => {
    const c = client(30_000);
    await c.call({ method: 'POST', path: '/tasks', body: {}, stage: 'submit' }); // warm: the connection
    const before = queryObjects(Timeout, { format: 'count' });
    for (let i = 0; i < 50; i++) {
      const res = await c.call({ method: 'POST', path: '/tasks', body: { i }, stage: 'submit' });
      expect(res).to.deep.equal({ status: 200, body: { id: 't1' } });
    }
    // AbortSignal.timeout(30 s) would keep 50 timers alive for 30 s.
    expect(queryObjects(Timeout, { format: 'count' }) - before).to.be.at.most(2);
  });

  it('a provider that does not answer within the limit is 3004, at the limit rather than on undici\'s 1 s tick', async () => {
    const t0 = performance.now();
    const err = await client(150).call({ method: 'GET', path: '/slow', stage: 'poll' }).then(() => undefined, (e: unknown) => e);
    const ms = performance.now() - t0;
    expect(err).to.be.instanceOf(UpstreamTimeout);
    expect((err as UpstreamTimeout).code).to.equal(3004);
    expect(ms).to.be.within(140, 900);
  });

  it('deadline(): aborts with a TimeoutError when the time is up, never once cleared', async () => {
    const open = deadline(20);
    const cleared = deadline(20);
    cleared.clear();
    await new Promise((r) => setTimeout(r, 60));
    expect(open.signal.aborted).to.equal(true);
    expect((open.signal.reason as DOMException).name).to.equal('TimeoutError');
    expect(cleared.signal.aborted).to.equal(false);
  });
});
