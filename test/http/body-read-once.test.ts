// A request's body is read from its stream once, whatever number of routers it passes: the
// operator's webhook routes (/admin/v1/tenants/:id/webhooks/...) sit under the admin router,
// which reads every body, and they read it again. They used to wait forever for a body already
// consumed (issue 16, item 4).
import { expect } from 'chai';
import type { Gateway } from '../../engine/gateway.ts';
import { newTenant, startTestGateway, type CallResult } from '../helpers/gateway.ts';

const ADMIN = 'test-admin-token';
const TP = /^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;

/** fetch with a deadline: a hang fails the test in 3 s instead of at mocha's timeout. */
async function admin(base: string, method: string, path: string, raw?: string): Promise<CallResult> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN}`, ...(raw === undefined ? {} : { 'content-type': 'application/json' }) },
    body: raw,
    signal: AbortSignal.timeout(3000),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined, text };
}

function expectProblem(r: CallResult, status: number, code: number) {
  expect(r.status, r.text).to.equal(status);
  expect(r.headers.get('content-type')).to.match(/^application\/problem\+json/);
  expect(r.body).to.include({ status, error_code: code });
  expect(r.headers.get('traceparent')).to.match(TP);
}

describe('request bodies are read once (admin webhook routes)', () => {
  let gw: Gateway;
  let base: string;
  before(async () => {
    gw = await startTestGateway({ yaml: 'webhooks: { allow_private_cidrs: ["127.0.0.1/32"] }' });
    const { tenant } = await newTenant(gw);
    base = `/admin/v1/tenants/${tenant.id}/webhooks/endpoints`;
  });
  after(() => gw.close());

  it('POST answers 201 with a valid body and a problem with an invalid one', async () => {
    const created = await admin(gw.url, 'POST', base, JSON.stringify({ url: 'https://127.0.0.1:9/hook', events: ['task.succeeded'] }));
    expect(created.status, created.text).to.equal(201);
    expect(created.body).to.include({ url: 'https://127.0.0.1:9/hook' });
    expectProblem(await admin(gw.url, 'POST', base, '{}'), 400, 2002);
    expectProblem(await admin(gw.url, 'POST', base, '{"url": '), 400, 2001);
  });

  it('PATCH answers 200 with a valid body and a problem with an invalid one', async () => {
    const created = await admin(gw.url, 'POST', base, JSON.stringify({ url: 'https://127.0.0.1:9/patch', events: ['task.failed'] }));
    const path = `${base}/${created.body.id}`;
    const patched = await admin(gw.url, 'PATCH', path, JSON.stringify({ description: 'renamed' }));
    expect(patched.status, patched.text).to.equal(200);
    expect(patched.body).to.include({ description: 'renamed' });
    expectProblem(await admin(gw.url, 'PATCH', path, JSON.stringify({ events: ['no.such.event'] })), 400, 2001);
  });

  it('holds the inner route to its own, smaller body limit', async () => {
    // The admin router reads up to 64 KiB; the webhook routes take 16 KiB.
    const big = JSON.stringify({ url: 'https://127.0.0.1:9/big', events: ['task.succeeded'], description: 'x'.repeat(20 * 1024) });
    expectProblem(await admin(gw.url, 'POST', base, big), 413, 2101);
  });
});
