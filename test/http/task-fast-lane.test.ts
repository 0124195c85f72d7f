// Async creates are answered ahead of express on their exact paths (engine/http/task-fast-lane.ts).
// The express route is the reference: the same request sent both ways (the fast lane on the exact
// path, express through a trailing-slash spelling it leaves alone) gets the same status, headers
// of note and body, apart from ids, times and trace ids.
import { expect } from 'chai';
import type { Gateway } from '../../engine/gateway.ts';
import { call, newTenant, startTestGateway, type CallResult } from '../helpers/gateway.ts';

const D = '/vendors/provider_d/v1/model_d/generation';
const A = '/vendors/provider_a/v1/model_a/generation';

/** The answer without what differs per request. */
function comparable(r: CallResult): unknown {
  const scrub = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(scrub);
    if (v && typeof v === 'object') {
      return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, ['id', 'created_at', 'updated_at', 'trace_id', 'instance'].includes(k) ? typeof x : scrub(x)]));
    }
    return v;
  };
  return { status: r.status, type: r.headers.get('content-type'), auth: r.headers.get('www-authenticate'), retry: r.headers.get('retry-after'), body: scrub(r.body), traceparent: /^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/.test(r.headers.get('traceparent') ?? '') };
}

describe('task fast lane: async creates ahead of express', function () {
  this.timeout(30_000);
  let gw: Gateway;
  let key: string;
  let readOnlyKey: string;
  let taken = 0;

  before(async () => {
    gw = await startTestGateway();
    ({ key } = await newTenant(gw, { credits: 1_000_000 }));
    ({ key: readOnlyKey } = await newTenant(gw, { scopes: ['*:read'], credits: 1_000_000 }));
    const original = gw.fastLane.tryHandle.bind(gw.fastLane);
    gw.fastLane.tryHandle = (req, res) => {
      const took = original(req, res);
      if (took) taken++;
      return took;
    };
  });
  after(() => gw?.close());

  const cases: { name: string; path: string; key?: () => string; raw: string; headers?: Record<string, string> }[] = [
    { name: 'a valid create (202, task_info)', path: D, raw: JSON.stringify({ prompt: 'a fox', n: 2 }) },
    { name: 'a validation failure (400 problem with pointers)', path: D, raw: JSON.stringify({ prompt: 'a fox', n: 9, size: '10*10' }) },
    { name: 'an unknown field', path: D, raw: JSON.stringify({ prompt: 'a fox', colour: 'red' }) },
    { name: 'malformed JSON (2001)', path: D, raw: '{"prompt": "a fox",' },
    { name: 'a JSON string instead of an object (2001, body-parser strict mode)', path: D, raw: '"a fox"' },
    { name: 'a JSON array', path: D, raw: '[1, 2]' },
    { name: 'no API key (401)', path: D, key: () => '', raw: JSON.stringify({ prompt: 'a fox' }) },
    { name: 'an unknown API key (401)', path: D, key: () => 'gw_live_nope', raw: JSON.stringify({ prompt: 'a fox' }) },
    { name: 'a key without the create scope (403)', path: D, key: () => readOnlyKey, raw: JSON.stringify({ prompt: 'a fox' }) },
    { name: 'a body with a charset parameter', path: D, raw: JSON.stringify({ prompt: 'a fox' }), headers: { 'content-type': 'application/json; charset=utf-8' } },
    { name: 'a +json media type', path: D, raw: JSON.stringify({ prompt: 'a fox' }), headers: { 'content-type': 'application/vnd.api+json' } },
    { name: 'text/plain (415)', path: D, raw: JSON.stringify({ prompt: 'a fox' }), headers: { 'content-type': 'text/plain' } },
    { name: 'another charset (415)', path: D, raw: JSON.stringify({ prompt: 'a fox' }), headers: { 'content-type': 'application/json; charset=utf-16' } },
    { name: 'a compressed body (415)', path: D, raw: JSON.stringify({ prompt: 'a fox' }), headers: { 'content-encoding': 'gzip' } },
    { name: 'a body over the route limit (413)', path: D, raw: JSON.stringify({ prompt: 'x'.repeat(2_000_000) }) },
    { name: 'an empty body (validation: body required)', path: D, raw: '' },
  ];
  for (const c of cases) {
    it(`${c.name}: the same answer as the express route`, async () => {
      const opts = (path: string) => ({ key: c.key ? c.key() : key, raw: c.raw, headers: { 'content-type': 'application/json', ...c.headers }, path });
      const before = taken;
      const fast = await call(gw.url, 'POST', c.path, opts(c.path));
      expect(taken, 'served by the fast lane').to.equal(before + 1);
      const viaExpress = await call(gw.url, 'POST', `${c.path}/`, opts(`${c.path}/`));
      expect(taken, 'served by express').to.equal(before + 1);
      expect(comparable(fast)).to.deep.equal(comparable(viaExpress));
      expect(fast.status).to.not.equal(500);
    });
  }

  it('an Idempotency-Key replays the first answer on either path: one task', async () => {
    const headers = { 'content-type': 'application/json', 'idempotency-key': 'fast-lane-1' };
    const raw = JSON.stringify({ prompt: 'a fox' });
    const first = await call(gw.url, 'POST', D, { key, raw, headers });
    const again = await call(gw.url, 'POST', D, { key, raw, headers });
    const viaExpress = await call(gw.url, 'POST', `${D}/`, { key, raw, headers });
    expect(first.status).to.equal(202);
    expect(again.body.task_info.id).to.equal(first.body.task_info.id);
    expect(viaExpress.body.task_info.id).to.equal(first.body.task_info.id);
    const other = await call(gw.url, 'POST', D, { key, raw: JSON.stringify({ prompt: 'another' }), headers });
    expect(other.status).to.equal(409);
  });

  it('a chunked body: the same answer as the express route', async () => {
    const send = (path: string) => fetch(`${gw.url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: new ReadableStream({ start(c) { c.enqueue(new TextEncoder().encode(JSON.stringify({ prompt: 'a fox', n: 7 }))); c.close(); } }),
      duplex: 'half',
    } as RequestInit);
    const before = taken;
    const fast = await send(D);
    const viaExpress = await send(`${D}/`);
    expect(taken).to.equal(before + 1);
    expect([fast.status, (await fast.json()).error_code]).to.deep.equal([viaExpress.status, (await viaExpress.json()).error_code]).and.deep.equal([400, 2003]);
  });

  it('leaves media routes, other path spellings and other methods to express', async () => {
    const before = taken;
    const a = await call(gw.url, 'POST', A, { key, body: { prompt: 'x', resolution: '8k' } });
    expect([a.status, a.body.task_info?.status]).to.deep.equal([400, 'failed']);
    const slash = await call(gw.url, 'POST', `${D}/`, { key, body: { prompt: 'a fox' } });
    expect(slash.status).to.equal(202);
    const put = await call(gw.url, 'PUT', D, { key, body: { prompt: 'a fox' } });
    expect(put.status).to.equal(405);
    expect(taken).to.equal(before);
  });

  it('a created task goes on to completion as any other', async () => {
    const r = await call(gw.url, 'POST', D, { key, body: { prompt: 'a fox', n: 1 } });
    expect(r.status).to.equal(202);
    const deadline = Date.now() + 10_000;
    let status = r.body.task_info.status;
    while (!['completed', 'failed'].includes(status) && Date.now() < deadline) {
      await new Promise((res) => setTimeout(res, 20));
      status = (await call(gw.url, 'GET', `${D}/${r.body.task_info.id}`, { key })).body.task_info.status;
    }
    expect(status).to.equal('completed');
  });
});
