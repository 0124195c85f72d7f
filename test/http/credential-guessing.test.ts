// Credential guessing is slowed per client address (server.failed_auth, default 10 a minute):
// the failure that reaches the limit and every attempt from that address until the window ends
// get 429 / 1006 with Retry-After and a problem body, whatever the credential (API keys, console
// sign-in, operator sign-in, the admin bearer token), while a correct credential from another
// address keeps working. Addresses come from X-Forwarded-For under server.trust_proxy (ignored
// without it). Failures are counted in gateway_auth_failures_total. Runs on both stores.
import { expect } from 'chai';
import type { Gateway } from '../../engine/gateway.ts';
import { call, newTenant, startTestGateway, type CallResult } from '../helpers/gateway.ts';
import { metricValue } from '../helpers/metrics.ts';

const CHAT = '/v1/chat/completions';
const from = (address: string) => ({ 'x-forwarded-for': address });

function expectThrottled(r: CallResult, what: string): void {
  expect(r.status, `${what}: ${r.text}`).to.equal(429);
  expect(r.body, what).to.include({ error_code: 1006, status: 429, title: 'Too Many Failed Authentications' });
  expect(r.headers.get('content-type'), what).to.match(/^application\/problem\+json/);
  expect(Number(r.headers.get('retry-after')), what).to.be.within(1, 3600);
  expect(r.headers.get('traceparent'), what).to.match(/^00-/);
}

describe('credential guessing: failed authentications per client address', function () {
  this.timeout(30_000);
  let gw: Gateway;
  let key: string;
  before(async () => {
    // Windows are aligned to the clock: an hour's makes a window turning mid-test unlikely.
    gw = await startTestGateway({ server: 'trust_proxy: true, failed_auth: { limit: 10, window_seconds: 3600 }', yaml: 'metrics: { port: 0 }' });
    ({ key } = await newTenant(gw, { scopes: ['*'] }));
  });
  after(() => gw?.close());

  it('API keys: 200 wrong keys from one address get 429 / 1006 at the 10th; a valid key from another address is never refused', async () => {
    const statuses: number[] = [];
    let first429 = 0;
    for (let i = 1; i <= 200; i++) {
      const r = await call(gw.url, 'GET', '/v1/balance', { key: `gw_live_wrong_${i}`, headers: from('198.51.100.7') });
      statuses.push(r.status);
      if (r.status === 429 && !first429) {
        first429 = i;
        expectThrottled(r, `attempt ${i}`);
      }
      // The right key from elsewhere, in between: always served.
      if (i % 20 === 0) expect((await call(gw.url, 'GET', '/v1/balance', { key, headers: from('203.0.113.9') })).status, `valid key after ${i} guesses`).to.equal(200);
    }
    expect(first429, 'first 429').to.equal(10);
    expect(statuses.slice(0, 9)).to.deep.equal(Array(9).fill(401));
    expect(statuses.slice(9)).to.deep.equal(Array(191).fill(429));
    // The guessing address cannot tell a right key from a wrong one until its window ends.
    expectThrottled(await call(gw.url, 'GET', '/v1/balance', { key, headers: from('198.51.100.7') }), 'right key from the guessing address');
    // The data plane's routes (chat proxy, async create) count the same address.
    expectThrottled(await call(gw.url, 'POST', CHAT, { key: 'gw_live_wrong', body: {}, headers: from('198.51.100.7') }), 'chat from the guessing address');
  });

  it('an IPv6 client counts by its /64', async () => {
    for (let i = 1; i < 10; i++) expect((await call(gw.url, 'GET', '/v1/balance', { key: 'wrong', headers: from(`2001:db8:1:2::${i.toString(16)}`) })).status).to.equal(401);
    expectThrottled(await call(gw.url, 'GET', '/v1/balance', { key: 'wrong', headers: from('2001:db8:1:2:ffff::1') }), 'the 10th from the same /64');
    expect((await call(gw.url, 'GET', '/v1/balance', { key: 'wrong', headers: from('2001:db8:1:3::1') })).status, 'another /64').to.equal(401);
  });

  const targets: Array<[string, (i: number, address: string) => Promise<CallResult>, () => Promise<CallResult>]> = [
    ['console sign-in', (i, a) => call(gw.url, 'POST', '/console/v1/session', { body: { api_key: `gw_live_nope_${i}` }, headers: from(a) }),
      () => call(gw.url, 'POST', '/console/v1/session', { body: { api_key: key }, headers: from('192.0.2.50') })],
    ['operator sign-in', (i, a) => call(gw.url, 'POST', '/console/v1/admin-session', { body: { admin_token: `nope-${i}` }, headers: from(a) }),
      () => call(gw.url, 'POST', '/console/v1/admin-session', { body: { admin_token: 'test-admin-token' }, headers: from('192.0.2.51') })],
    ['admin bearer token', (i, a) => call(gw.url, 'GET', '/admin/v1/tenants', { key: `nope-${i}`, headers: from(a) }),
      () => call(gw.url, 'GET', '/admin/v1/tenants', { key: 'test-admin-token', headers: from('192.0.2.52') })],
  ];
  targets.forEach(([name, wrong, right], t) => {
    it(`${name}: 429 at the 10th failure from one address; the right credential from another still works`, async () => {
      const address = `198.51.100.${100 + t}`;
      for (let i = 1; i < 10; i++) expect((await wrong(i, address)).status, `${name} attempt ${i}`).to.equal(401);
      expectThrottled(await wrong(10, address), `${name} attempt 10`);
      expectThrottled(await wrong(11, address), `${name} attempt 11`);
      expect((await right()).status, `${name}: the right credential from another address`).to.be.oneOf([200, 201]);
    });
  });

  it('failures are counted in gateway_auth_failures_total by credential and answer', async () => {
    const text = await (await fetch(gw.metricsUrl!)).text();
    expect(metricValue(text, 'gateway_auth_failures_total', { credential: 'api_key', answer: '401' })).to.be.at.least(9 + 9 + 1);
    expect(metricValue(text, 'gateway_auth_failures_total', { credential: 'api_key', answer: '429' })).to.be.at.least(192);
    for (const c of ['console_sign_in', 'operator_sign_in', 'admin_token']) {
      expect(metricValue(text, 'gateway_auth_failures_total', { credential: c, answer: '429' }), c).to.be.at.least(2);
    }
  });

  it('a request without a credential is not a failed authentication (the console asks for its session)', async () => {
    for (let i = 0; i < 15; i++) expect((await call(gw.url, 'GET', '/v1/balance', { headers: from('198.51.100.200') })).status).to.equal(401);
    for (let i = 0; i < 15; i++) expect((await call(gw.url, 'GET', '/console/v1/session', { headers: from('198.51.100.200') })).status).to.equal(401);
    expect((await call(gw.url, 'GET', '/v1/balance', { key, headers: from('198.51.100.200') })).status).to.equal(200);
  });
});

describe('credential guessing without trust_proxy', function () {
  this.timeout(30_000);
  it('X-Forwarded-For is ignored: the peer address is counted', async () => {
    const gw = await startTestGateway({ server: 'failed_auth: { limit: 3, window_seconds: 3600 }' });
    try {
      const answers: number[] = [];
      for (let i = 0; i < 4; i++) answers.push((await call(gw.url, 'GET', '/v1/balance', { key: 'wrong', headers: from(`203.0.113.${i}`) })).status);
      expect(answers).to.deep.equal([401, 401, 429, 429]);
    } finally {
      await gw.close();
    }
  });
});
