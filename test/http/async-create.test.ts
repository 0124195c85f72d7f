// POST on an async route (the data plane's create, engine/http/data-plane.ts →
// engine/tasks/requests.ts): the body policy, auth, scope and validation in their order, the
// answers of each refusal, idempotent replays, and the path spellings served by the same route.
import { expect } from 'chai';
import type { Gateway } from '../../engine/gateway.ts';
import { call, newTenant, startTestGateway } from '../helpers/gateway.ts';

const D = '/vendors/provider_d/v1/model_d/generation';
const A = '/vendors/provider_a/v1/model_a/generation';
const TRACEPARENT = /^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/;

describe('async create: one route, every answer', function () {
  this.timeout(30_000);
  let gw: Gateway;
  /** A key with every scope, and one that may only read. */
  let key: string, readOnlyKey: string;
  before(async () => {
    gw = await startTestGateway();
    ({ key } = await newTenant(gw, { credits: 1_000_000 }));
    ({ key: readOnlyKey } = await newTenant(gw, { scopes: ['*:read'], credits: 1_000_000 }));
  });
  after(() => gw?.close());

  /** [status, error_code] expected; error_code undefined for a created task. */
  const cases: { name: string; key?: () => string; raw: string; headers?: Record<string, string>; expect: [number, number?] }[] = [
    { name: 'a valid create (202, task_info)', raw: JSON.stringify({ prompt: 'a fox', n: 2 }), expect: [202] },
    { name: 'a validation failure (400 problem with pointers)', raw: JSON.stringify({ prompt: 'a fox', n: 9, size: '10*10' }), expect: [400, 2003] },
    { name: 'an unknown field', raw: JSON.stringify({ prompt: 'a fox', colour: 'red' }), expect: [400, 2004] },
    { name: 'malformed JSON (2001)', raw: '{"prompt": "a fox",', expect: [400, 2001] },
    { name: 'a JSON string instead of an object (2001)', raw: '"a fox"', expect: [400, 2001] },
    { name: 'a JSON array', raw: '[1, 2]', expect: [400, 2001] },
    { name: 'no API key (401)', key: () => '', raw: JSON.stringify({ prompt: 'a fox' }), expect: [401, 1001] },
    { name: 'an unknown API key (401)', key: () => 'gw_live_nope', raw: JSON.stringify({ prompt: 'a fox' }), expect: [401, 1001] },
    { name: 'a key without the create scope (403)', key: () => readOnlyKey, raw: JSON.stringify({ prompt: 'a fox' }), expect: [403, 1002] },
    { name: 'a body with a charset parameter', raw: JSON.stringify({ prompt: 'a fox' }), headers: { 'content-type': 'application/json; charset=utf-8' }, expect: [202] },
    { name: 'a +json media type', raw: JSON.stringify({ prompt: 'a fox' }), headers: { 'content-type': 'application/vnd.api+json' }, expect: [202] },
    { name: 'text/plain (415)', raw: JSON.stringify({ prompt: 'a fox' }), headers: { 'content-type': 'text/plain' }, expect: [415, 2001] },
    { name: 'another charset (415)', raw: JSON.stringify({ prompt: 'a fox' }), headers: { 'content-type': 'application/json; charset=utf-16' }, expect: [415, 2001] },
    { name: 'a compressed body (415)', raw: JSON.stringify({ prompt: 'a fox' }), headers: { 'content-encoding': 'gzip' }, expect: [415, 2001] },
    { name: 'a body over the route limit (413)', raw: JSON.stringify({ prompt: 'x'.repeat(2_000_000) }), expect: [413, 2101] },
    { name: 'an empty body (validation: body required)', raw: '', expect: [400, 2001] },
  ];
  for (const c of cases) {
    it(`${c.name}: ${c.expect.join(' / ')}`, async () => {
      const r = await call(gw.url, 'POST', D, { key: c.key ? c.key() : key, raw: c.raw, headers: { 'content-type': 'application/json', ...c.headers } });
      expect(r.headers.get('traceparent')).to.match(TRACEPARENT);
      expect([r.status, r.body.error_code]).to.deep.equal([c.expect[0], c.expect[1]]);
      if (r.status === 202) {
        expect(r.headers.get('content-type')).to.equal('application/json; charset=utf-8');
        expect(r.body.task_info.status).to.be.a('string');
      } else {
        expect(r.headers.get('content-type')).to.equal('application/problem+json');
        expect(r.body.instance).to.equal(D);
        expect(r.body.trace_id).to.equal(r.headers.get('traceparent')!.slice(3, 35));
      }
    });
  }

  it('a validation failure names the fields by pointer', async () => {
    const r = await call(gw.url, 'POST', D, { key, body: { prompt: 'a fox', n: 9, size: '10*10' } });
    expect(r.body.errors.map((e: { pointer: string }) => e.pointer)).to.include('/n');
  });

  it('other spellings of the path (trailing slash, letter case) are the same route', async () => {
    for (const path of [`${D}/`, D.toUpperCase().replace('/VENDORS', '/vendors')]) {
      const r = await call(gw.url, 'POST', path, { key, body: { prompt: 'a fox' } });
      expect([path, r.status]).to.deep.equal([path, 202]);
    }
  });

  it('an Idempotency-Key replays the first answer on any spelling: one task', async () => {
    const headers = { 'content-type': 'application/json', 'idempotency-key': 'async-create-1' };
    const raw = JSON.stringify({ prompt: 'a fox' });
    const first = await call(gw.url, 'POST', D, { key, raw, headers });
    const again = await call(gw.url, 'POST', D, { key, raw, headers });
    const slash = await call(gw.url, 'POST', `${D}/`, { key, raw, headers });
    expect(first.status).to.equal(202);
    expect(again.body.task_info.id).to.equal(first.body.task_info.id);
    expect(slash.body.task_info.id).to.equal(first.body.task_info.id);
    const other = await call(gw.url, 'POST', D, { key, raw: JSON.stringify({ prompt: 'another' }), headers });
    expect(other.status).to.equal(409);
  });

  it('a chunked body is read as one', async () => {
    const r = await fetch(`${gw.url}${D}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: new ReadableStream({ start(c) { c.enqueue(new TextEncoder().encode(JSON.stringify({ prompt: 'a fox', n: 7 }))); c.close(); } }),
      duplex: 'half',
    } as RequestInit);
    expect([r.status, (await r.json()).error_code]).to.deep.equal([400, 2003]);
  });

  it('a media route refuses a create with a task_info-shaped 400; another method is 405', async () => {
    const a = await call(gw.url, 'POST', A, { key, body: { prompt: 'x', resolution: '8k' } });
    expect([a.status, a.body.task_info?.status]).to.deep.equal([400, 'failed']);
    const put = await call(gw.url, 'PUT', D, { key, body: { prompt: 'a fox' } });
    expect([put.status, put.headers.get('allow')]).to.deep.equal([405, 'POST']);
  });

  it('a created task goes on to completion', async () => {
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
