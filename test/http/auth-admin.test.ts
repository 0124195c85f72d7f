// Bearer auth of tenants (401/1001, 403/1002) and the operator's admin API and CLI.
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { Gateway } from '../../engine/gateway.ts';
import { call, DEMO_KEY, ROOT, startTestGateway } from '../helpers/gateway.ts';

const IMAGES = '/vendors/provider_b/v1/tob/diffusion';
const ADMIN = 'test-admin-token';
const run = promisify(execFile);

describe('authentication and the admin API', () => {
  let gw: Gateway;
  const admin = (method: string, path: string, body?: unknown, token = ADMIN) => call(gw.url, method, `/admin/v1${path}`, { key: token, body });
  before(async () => {
    gw = await startTestGateway();
  });
  after(() => gw.close());

  it('operator creates a tenant, issues a key (shown once, stored as a hash), and the key works', async () => {
    const t = await admin('POST', '/tenants', { name: 'Acme' });
    expect(t.status).to.equal(201);
    expect(t.body).to.include({ name: 'Acme', requires_live: false, disabled: false });
    const k = await admin('POST', `/tenants/${t.body.id}/keys`, { name: 'ci', scopes: ['provider_b:*'] });
    expect(k.status).to.equal(201);
    expect(k.body.key).to.match(/^gw_live_[0-9A-Za-z]{40}$/);
    expect(k.body).not.to.have.property('hash');
    expect(k.body.preview).to.equal(`${k.body.key.slice(0, 12)}…${k.body.key.slice(-4)}`);
    const listed = await admin('GET', `/tenants/${t.body.id}/keys`);
    expect(JSON.stringify(listed.body)).not.to.include(k.body.key);
    const stored = await gw.tenants.listKeys(t.body.id);
    expect(stored[0]!.hash).to.match(/^[0-9a-f]{64}$/).and.not.include(k.body.key);
    // No credits yet: 402 / 1003, no task. After a top-up the same request is accepted.
    const broke = await call(gw.url, 'POST', IMAGES, { key: k.body.key, body: { prompt: 'hello' } });
    expect(broke.status).to.equal(402);
    expect(broke.body.error_code).to.equal(1003);
    const topup = await admin('POST', `/tenants/${t.body.id}/wallet/topups`, { credits: '100.00', ref: 'pay_1' });
    expect(topup.status).to.equal(201);
    expect(topup.body.wallet).to.include({ available: '100.00', currency: 'credits', state: 'NORMAL' });
    const created = await call(gw.url, 'POST', IMAGES, { key: k.body.key, body: { prompt: 'hello' } });
    expect(created.status).to.equal(202);
  });

  it('revocation works at once', async () => {
    const t = await admin('POST', '/tenants', { name: 'Revoked Inc' });
    const k = await admin('POST', `/tenants/${t.body.id}/keys`, {});
    expect((await call(gw.url, 'GET', `${IMAGES}/9b2f0c1e-4a57-4c43-9d5e-6f1f4b1c2a3d`, { key: k.body.key })).status).to.equal(404);
    const revoked = await admin('DELETE', `/keys/${k.body.id}`);
    expect(revoked.status).to.equal(200);
    expect(revoked.body.revoked_at).to.be.a('string');
    const r = await call(gw.url, 'POST', IMAGES, { key: k.body.key, body: { prompt: 'x' } });
    expect(r.status).to.equal(401);
    expect(r.body.error_code).to.equal(1001);
    expect(r.body.detail).to.match(/revoked/);
  });

  it('disabling a tenant refuses its keys at once; enabling it lets them in again', async () => {
    const t = await admin('POST', '/tenants', { name: 'Paused Ltd' });
    const k = await admin('POST', `/tenants/${t.body.id}/keys`, {});
    const read = () => call(gw.url, 'GET', `${IMAGES}/9b2f0c1e-4a57-4c43-9d5e-6f1f4b1c2a3d`, { key: k.body.key });
    const off = await admin('PATCH', `/tenants/${t.body.id}`, { disabled: true });
    expect([off.status, off.body.disabled]).to.deep.equal([200, true]);
    expect((await read()).status).to.equal(401);
    const on = await admin('PATCH', `/tenants/${t.body.id}`, { disabled: false });
    expect([on.status, on.body.disabled]).to.deep.equal([200, false]);
    expect((await read()).status).to.equal(404);
    expect((await admin('PATCH', `/tenants/${t.body.id}`, { disabled: 'yes' })).status).to.equal(400);
    expect((await admin('PATCH', '/tenants/no-such-tenant', { disabled: true })).status).to.equal(404);
  });

  it('missing, malformed, unknown and expired keys → 401 / 1001', async () => {
    const t = await admin('POST', '/tenants', { name: 'Temp' });
    const expired = await gw.tenants.issueKey(t.body.id, { expires_at: new Date(Date.now() - 1000).toISOString() });
    const cases: Array<[Record<string, string>, RegExp]> = [
      [{}, /Missing API key/],
      [{ authorization: 'Basic abc' }, /Malformed/],
      [{ authorization: 'Bearer gw_live_doesnotexist' }, /Invalid API key/],
      [{ authorization: `Bearer ${expired.key}` }, /expired/],
    ];
    for (const [headers, detail] of cases) {
      const r = await call(gw.url, 'POST', IMAGES, { headers, body: { prompt: 'x' } });
      expect(r.status).to.equal(401);
      expect(r.body.error_code).to.equal(1001);
      expect(r.body.title).to.equal('Authentication Failed');
      expect(r.body.detail).to.match(detail);
      expect(r.headers.get('www-authenticate')).to.match(/^Bearer/);
    }
  });

  it('a valid key lacking the scope → 403 / 1002; read scope reads but cannot create', async () => {
    const t = await admin('POST', '/tenants', { name: 'Scoped' });
    const reader = await admin('POST', `/tenants/${t.body.id}/keys`, { scopes: ['provider_b:read'] });
    const r = await call(gw.url, 'POST', IMAGES, { key: reader.body.key, body: { prompt: 'x' } });
    expect(r.status).to.equal(403);
    expect(r.body.error_code).to.equal(1002);
    expect(r.body.detail).to.match(/provider_b:create/);
    const g = await call(gw.url, 'GET', `${IMAGES}/9b2f0c1e-4a57-4c43-9d5e-6f1f4b1c2a3d`, { key: reader.body.key });
    expect(g.status).to.equal(404);
  });

  it('a tenant that requires production keys refuses test and temporary keys with 403 / 1002', async () => {
    const t = await admin('POST', '/tenants', { name: 'Prod only', requires_live: true });
    const test = await admin('POST', `/tenants/${t.body.id}/keys`, { mode: 'test' });
    const temp = await admin('POST', `/tenants/${t.body.id}/keys`, { ttl_seconds: 3600 });
    const live = await admin('POST', `/tenants/${t.body.id}/keys`, {});
    await admin('POST', `/tenants/${t.body.id}/wallet/topups`, { credits: '100.00' });
    for (const k of [test, temp]) {
      const r = await call(gw.url, 'POST', IMAGES, { key: k.body.key, body: { prompt: 'x' } });
      expect(r.status).to.equal(403);
      expect(r.body.error_code).to.equal(1002);
    }
    expect((await call(gw.url, 'POST', IMAGES, { key: live.body.key, body: { prompt: 'x' } })).status).to.equal(202);
  });

  it('the admin API needs the admin token, and validates its input', async () => {
    for (const token of ['', 'wrong', DEMO_KEY]) {
      const r = await admin('GET', '/tenants', undefined, token);
      expect(r.status).to.equal(401);
      expect(r.body.error_code).to.equal(1001);
    }
    const bad = await admin('POST', '/tenants', { name: '' });
    expect(bad.status).to.equal(400);
    expect(bad.body.error_code).to.equal(2003);
    const both = await admin('POST', `/tenants/${(await admin('POST', '/tenants', { name: 'x' })).body.id}/keys`, { ttl_seconds: 5, expires_at: '2030-01-01T00:00:00Z' });
    expect(both.status).to.equal(400);
    expect(both.body.error_code).to.equal(2004);
    const unknown = await admin('POST', '/tenants/9b2f0c1e-4a57-4c43-9d5e-6f1f4b1c2a3d/keys', {});
    expect(unknown.status).to.equal(404);
  });

  it('the admin API is closed when no admin token is configured', async () => {
    const closed = await startTestGateway({ adminToken: '' });
    try {
      const r = await call(closed.url, 'GET', '/admin/v1/tenants', { key: 'anything' });
      expect(r.status).to.equal(401);
      expect(r.body.detail).to.match(/disabled/);
    } finally {
      await closed.close();
    }
  });

  it('the CLI creates a tenant, issues and revokes a key through the admin API', async () => {
    const env = { ...process.env, GATEWAY_ADMIN_TOKEN: ADMIN, GATEWAY_URL: gw.url };
    const cli = (...args: string[]) => run(process.execPath, [`${ROOT}engine/cli/main.ts`, ...args], { env });
    const tenant = JSON.parse((await cli('tenant', 'create', '--name', 'From CLI')).stdout);
    expect(tenant.name).to.equal('From CLI');
    const key = JSON.parse((await cli('key', 'create', '--tenant', tenant.id, '--scopes', 'provider_b:create,provider_b:read')).stdout);
    expect(key.scopes).to.deep.equal(['provider_b:create', 'provider_b:read']);
    const wallet = JSON.parse((await cli('wallet', 'topup', '--tenant', tenant.id, '--credits', '50.50')).stdout);
    expect(wallet.wallet.available).to.equal('50.50');
    expect(JSON.parse((await cli('wallet', 'show', '--tenant', tenant.id)).stdout).balance).to.equal('50.50');
    const threshold = JSON.parse((await cli('wallet', 'threshold', '--tenant', tenant.id, '--credits', '20.00')).stdout);
    expect(threshold.low_balance_threshold).to.equal('20.00');
    const limits = JSON.parse((await cli('limits', 'set', '--tenant', tenant.id, '--json', '{"concurrent_tasks": 7, "rate": {"key": {"per_second": 3}}}')).stdout);
    expect(limits).to.deep.include({ concurrent_tasks: 7 });
    expect(limits.rate.key.per_second).to.equal(3);
    expect(JSON.parse((await cli('limits', 'show', '--tenant', tenant.id)).stdout).overrides).to.deep.equal({ concurrent_tasks: 7, rate: { key: { per_second: 3 } } });
    const ledger = JSON.parse((await cli('wallet', 'ledger', '--tenant', tenant.id, '--limit', '5')).stdout);
    expect(ledger.data.map((e: { kind: string; amount: string }) => [e.kind, e.amount])).to.deep.equal([['topup', '50.500']]);
    expect((await call(gw.url, 'POST', IMAGES, { key: key.key, body: { prompt: 'cli' } })).status).to.equal(202);
    await cli('key', 'revoke', key.id);
    expect((await call(gw.url, 'POST', IMAGES, { key: key.key, body: { prompt: 'cli' } })).status).to.equal(401);
    const denied = await run(process.execPath, [`${ROOT}engine/cli/main.ts`, 'tenant', 'list'], { env: { ...env, GATEWAY_ADMIN_TOKEN: 'nope' } }).catch((e) => e);
    expect(denied.code).to.equal(1);
    expect(denied.stderr).to.match(/1001/);
  });

  it('the demo tenant exists only while the sandbox is on', async () => {
    expect((await call(gw.url, 'POST', IMAGES, { key: DEMO_KEY, body: { prompt: 'demo' } })).status).to.equal(202);
    const off = await startTestGateway({ sandbox: false, only: ['provider_b'], upstreams: { provider_b: { base_url: 'http://127.0.0.1:9', credentials: { api_key: 'k' } } } });
    try {
      const r = await call(off.url, 'POST', IMAGES, { key: DEMO_KEY, body: { prompt: 'demo' } });
      expect(r.status).to.equal(401);
      expect(await off.tenants.listTenants()).to.deep.equal([]);
    } finally {
      await off.close();
    }
  });
});
