// Nesting depth is bounded on every JSON body before anything recursive touches it: 100,000
// levels of {"a":...} answered 500/4002 on the media routes (a stack overflow in the media pool,
// issue 16, item 5). Deep objects and deep arrays alike are 400/2001 on every kind of route.
import { expect } from 'chai';
import type { Gateway } from '../../engine/gateway.ts';
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../../engine/util/json-body.ts';
import { newTenant, startTestGateway, type CallResult } from '../helpers/gateway.ts';

const TP = /^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;
const deepObject = (n: number) => `${'{"a":'.repeat(n)}1${'}'.repeat(n)}`;
const deepArray = (n: number) => `{"a":${'['.repeat(n - 1)}1${']'.repeat(n - 1)}}`;

async function post(base: string, path: string, raw: string, key: string): Promise<CallResult> {
  const res = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: raw,
    signal: AbortSignal.timeout(10_000),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: JSON.parse(text), text };
}

function expectTooDeep(r: CallResult) {
  expect(r.status, r.text).to.equal(400);
  expect(r.headers.get('content-type')).to.match(/^application\/problem\+json/);
  expect(r.body).to.include({ status: 400, error_code: 2001 });
  expect(r.body.detail).to.match(/deeper than 128 levels/);
  expect(r.headers.get('traceparent')).to.match(TP);
}

describe('JSON nesting depth', () => {
  let gw: Gateway;
  let key: string;
  let tenantId: string;
  before(async () => {
    gw = await startTestGateway();
    ({ key, tenant: { id: tenantId } } = await newTenant(gw));
  });
  after(() => gw.close());

  const routes = {
    'a media route (model G, parsed in the media pool)': '/vendors/provider_d/v1/model_g/generation',
    'a media route (model F)': '/vendors/provider_f/v1/model_f/text-to-video/generation',
    'a chat route': '/vendors/provider_c/v1/chat/completions',
    'an async create route': '/vendors/provider_b/v1/tob/diffusion',
    'an async create route (odd path spelling)': '/vendors/provider_b/v1/tob/diffusion/',
  };
  for (const [name, path] of Object.entries(routes)) {
    it(`${name}: 100,000 levels of objects or of arrays are 400/2001`, async () => {
      expectTooDeep(await post(gw.url, path, deepObject(100_000), key));
      expectTooDeep(await post(gw.url, path, deepArray(100_000), key));
    });
  }

  it('video model A (media route) refuses it in its documented task_info shape', async () => {
    for (const raw of [deepObject(100_000), deepArray(100_000)]) {
      const r = await post(gw.url, '/vendors/provider_a/v1/model_a/generation', raw, key);
      expect(r.status, r.text).to.equal(400);
      expect(r.body.task_info.error).to.include({ code: 2001 });
      expect(r.body.error.detail).to.match(/deeper than 128 levels/);
    }
  });

  it('an admin route: 400/2001 within its body limit', async () => {
    for (const raw of [deepObject(1000), deepArray(1000)]) expectTooDeep(await post(gw.url, `/admin/v1/tenants/${tenantId}/keys`, raw, 'test-admin-token'));
  });

  it(`the bound is ${MAX_JSON_DEPTH} levels: one more is refused, that many reaches validation`, async () => {
    const path = '/vendors/provider_b/v1/tob/diffusion';
    expectTooDeep(await post(gw.url, path, deepObject(MAX_JSON_DEPTH + 1), key));
    const atBound = await post(gw.url, path, deepObject(MAX_JSON_DEPTH), key);
    expect(atBound.status).to.equal(400);
    expect(atBound.body.detail).not.to.match(/deeper than/);
  });

  it('brackets inside strings do not count, escaped quotes do not end a string', () => {
    const bytes = (s: string) => Buffer.from(s);
    const inString = JSON.stringify({ p: '{'.repeat(1000), q: '\\"[[[[' + '['.repeat(1000) });
    expect(nestsDeeperThan(bytes(inString), inString.length, 2)).to.equal(false);
    const nested = '{"a\\"":{"b\\\\":{"c":[1]}}}';
    expect(nestsDeeperThan(bytes(nested), nested.length, 3)).to.equal(true);
    expect(nestsDeeperThan(bytes(nested), nested.length, 4)).to.equal(false);
  });
});
