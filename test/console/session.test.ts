// Console sign-in (docs/console-api.md, "Authentication"): the session cookie's flags, sessions
// ending with sign-out and with their key, the CSRF rule, and the operator's session.
import { expect } from 'chai';
import type { Gateway } from '../../engine/gateway.ts';
import { createHash } from 'node:crypto';
import { MemorySessionStore } from '../../engine/store/memory/sessions.ts';
import { MemoryTenantStore } from '../../engine/store/memory/tenants.ts';
import { TenantService } from '../../engine/tenants/service.ts';
import { ConsoleSessions } from '../../engine/tenants/sessions.ts';
import { ManualClock } from '../../engine/util/clock.ts';
import { loadConfigText } from '../../engine/load-config.ts';
import { LoadError } from '../../engine/config/yaml-source.ts';
import { call, newTenant, ROOT, startTestGateway, type CallResult } from '../helpers/gateway.ts';

const ADMIN = 'test-admin-token';

/** The message a promise is rejected with (fails when it resolves). */
async function refusal(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error('expected a refusal');
}

/** `name=value` of the Set-Cookie header that sets `name`. */
function cookieOf(r: CallResult, name: string): { pair: string; attrs: string[] } {
  const line = r.headers.getSetCookie().find((c) => c.startsWith(`${name}=`));
  if (!line) throw new Error(`no ${name} cookie in ${JSON.stringify(r.headers.getSetCookie())}`);
  const [pair, ...attrs] = line.split(';').map((s) => s.trim());
  return { pair: pair!, attrs };
}

describe('console sessions', () => {
  let gw: Gateway;
  let proxied: Gateway;
  const signIn = async (key: string, headers: Record<string, string> = {}, base = gw.url) => {
    const r = await call(base, 'POST', '/console/v1/session', { body: { api_key: key }, headers });
    expect(r.status, r.text).to.equal(201);
    return { r, cookie: cookieOf(r, 'gw_session').pair };
  };
  const origin = () => gw.url;

  before(async () => {
    [gw, proxied] = await Promise.all([startTestGateway(), startTestGateway({ server: 'trust_proxy: true' })]);
  });
  after(() => Promise.all([gw.close(), proxied.close()]));

  it('signs in with a console key: 201, the session body, and an HttpOnly SameSite=Strict cookie', async () => {
    const { tenant, keyId } = await newTenant(gw, { scopes: ['console:*'] });
    const { key } = await gw.tenants.issueKey(tenant.id, { scopes: ['console:read'], mode: 'test' });
    const { r } = await signIn(key);
    expect(r.body).to.include({ tenant_id: tenant.id, mode: 'test' });
    expect(r.body.scopes).to.deep.equal(['console:read']);
    expect(Date.parse(r.body.expires_at) - Date.now()).to.be.within(3500_000, 3601_000);
    const { pair, attrs } = cookieOf(r, 'gw_session');
    expect(pair).to.match(/^gw_session=[A-Za-z0-9_-]{43}$/);
    expect(attrs).to.include.members(['HttpOnly', 'SameSite=Strict', 'Path=/', 'Max-Age=3600']);
    expect(attrs).not.to.include('Secure'); // plain HTTP, no trusted proxy
    expect(r.text).not.to.include(pair.slice('gw_session='.length)); // the id is only in the cookie
    void keyId;
  });

  it('sets Secure behind X-Forwarded-Proto: https with trust_proxy, and not without trust_proxy', async () => {
    const { key } = await newTenant(proxied);
    const { r } = await signIn(key, { 'x-forwarded-proto': 'https' }, proxied.url);
    expect(cookieOf(r, 'gw_session').attrs).to.include('Secure');
    const { key: other } = await newTenant(gw);
    const plain = await signIn(other, { 'x-forwarded-proto': 'https' });
    expect(cookieOf(plain.r, 'gw_session').attrs).not.to.include('Secure');
  });

  it('keeps at most 20 sessions per key: signing in again drops the oldest', async () => {
    const { key } = await newTenant(gw);
    const cookies: string[] = [];
    for (let i = 0; i < 21; i++) cookies.push((await signIn(key)).cookie);
    expect((await call(gw.url, 'GET', '/v1/balance', { headers: { cookie: cookies[0]! } })).status).to.equal(401);
    expect((await call(gw.url, 'GET', '/v1/balance', { headers: { cookie: cookies[1]! } })).status).to.equal(200);
    expect((await call(gw.url, 'GET', '/v1/balance', { headers: { cookie: cookies[20]! } })).status).to.equal(200);
  });

  it('stores only a hash of the id; slides the expiry on use, never past 12 h after sign-in', async () => {
    const clock = new ManualClock(Date.parse('2026-01-01T00:00:00Z'));
    const tenants = new TenantService(new MemoryTenantStore(), clock);
    const store = new MemorySessionStore({ clock });
    const sessions = new ConsoleSessions({ store, tenants, clock, ttlSeconds: 3600, adminToken: 'adm' });
    const t = await tenants.createTenant({ name: 'unit' });
    const { key } = await tenants.issueKey(t.id, { scopes: ['console:read'] });
    const { session } = await sessions.signIn(key);
    const hash = createHash('sha256').update(session.id).digest('hex');
    const stored = await store.get(hash);
    expect(stored).to.include({ kind: 'tenant', tenant_id: t.id });
    expect(JSON.stringify(stored)).not.to.include(session.id);
    // Used every 50 minutes, it lives on, up to 12 h after sign-in.
    let last = await sessions.resolve(session.id, 'tenant');
    for (let i = 0; i < 14; i++) {
      clock.advance(50 * 60_000);
      last = await sessions.resolve(session.id, 'tenant');
    }
    expect(last.record.expires_at).to.equal(stored!.created_at + 12 * 3_600_000);
    clock.advance(60 * 60_000);
    expect(await refusal(sessions.resolve(session.id, 'tenant'))).to.match(/sign in/);
    // Idle longer than the TTL: gone.
    const again = await sessions.signIn(key);
    clock.advance(3600_000);
    expect(await refusal(sessions.resolve(again.session.id, 'tenant'))).to.match(/sign in/);
  });

  it('console.session_ttl_seconds: 3600 by default, at most 12 h, and the cookie\'s Max-Age follows it', async () => {
    const load = (yaml: string) => loadConfigText(`sandbox: { enabled: false }\n${yaml}`, ROOT, { env: {} });
    expect(load('').console.session_ttl_seconds).to.equal(3600);
    expect(load('console: { session_ttl_seconds: 43200 }').console.session_ttl_seconds).to.equal(43200);
    for (const bad of ['43201', '59', '"soon"']) {
      expect(() => load(`console: { session_ttl_seconds: ${bad} }`), bad).to.throw(LoadError);
    }
    const short = await startTestGateway({ yaml: 'console: { session_ttl_seconds: 120 }' });
    try {
      const { key } = await newTenant(short);
      const { r } = await signIn(key, {}, short.url);
      expect(cookieOf(r, 'gw_session').attrs).to.include('Max-Age=120');
    } finally {
      await short.close();
    }
  });

  it('an operator session ends when the admin token changes or is removed', async () => {
    const clock = new ManualClock();
    const store = new MemorySessionStore({ clock });
    const tenants = new TenantService(new MemoryTenantStore(), clock);
    const make = (adminToken: string) => new ConsoleSessions({ store, tenants, clock, ttlSeconds: 3600, adminToken });
    const opened = await make('first-token').signInOperator('first-token');
    expect((await make('first-token').resolve(opened.id, 'operator')).record.kind).to.equal('operator');
    expect(await refusal(make('second-token').resolve(opened.id, 'operator'))).to.match(/sign in/);
    const again = await make('first-token').signInOperator('first-token');
    expect(await refusal(make('').resolve(again.id, 'operator'))).to.match(/sign in/);
    expect(await refusal(make('first-token').signInOperator('wrong'))).to.match(/Invalid admin token/);
  });

  it('refuses a key without console:read (403) and a bad key (401)', async () => {
    const { key } = await newTenant(gw, { scopes: ['provider_b:*'] });
    const r = await call(gw.url, 'POST', '/console/v1/session', { body: { api_key: key } });
    expect(r.status).to.equal(403);
    expect(r.body.error_code).to.equal(1002);
    const bad = await call(gw.url, 'POST', '/console/v1/session', { body: { api_key: 'gw_live_nope' } });
    expect(bad.status).to.equal(401);
    expect(bad.body.error_code).to.equal(1001);
    expect(bad.headers.getSetCookie()).to.deep.equal([]);
  });

  it('a console call without a session or key is 401; with the cookie it answers as the key would', async () => {
    const none = await call(gw.url, 'GET', '/v1/balance');
    expect(none.status).to.equal(401);
    expect(none.body.error_code).to.equal(1001);
    const { tenant, key } = await newTenant(gw);
    const { cookie } = await signIn(key);
    const session = await call(gw.url, 'GET', '/console/v1/session', { headers: { cookie } });
    expect(session.status).to.equal(200);
    expect(session.body.tenant_id).to.equal(tenant.id);
    for (const path of ['/v1/balance', '/v1/keys', '/v1/tasks', '/v1/usage', '/v1/ledger', '/v1/webhooks/endpoints']) {
      const withCookie = await call(gw.url, 'GET', path, { headers: { cookie } });
      const withKey = await call(gw.url, 'GET', path, { key });
      expect(withCookie.status, `${path}: ${withCookie.text}`).to.equal(200);
      expect(withCookie.body, path).to.deep.equal(withKey.body);
    }
    expect((await call(gw.url, 'GET', '/console/v1/session')).status).to.equal(401);
    // The session is not a provider credential: the data plane wants the key.
    expect((await call(gw.url, 'POST', '/vendors/provider_b/v1/tob/diffusion', { headers: { cookie }, body: { prompt: 'x' } })).status).to.equal(401);
  });

  it('sign-out revokes the session server-side and clears the cookie', async () => {
    const { key } = await newTenant(gw);
    const { cookie } = await signIn(key);
    const out = await call(gw.url, 'DELETE', '/console/v1/session', { headers: { cookie, origin: origin() } });
    expect(out.status).to.equal(204);
    const cleared = cookieOf(out, 'gw_session');
    expect(cleared.pair).to.equal('gw_session=');
    expect(cleared.attrs).to.include('Max-Age=0');
    // A browser would drop the cookie; a replayed one is refused.
    const again = await call(gw.url, 'GET', '/v1/balance', { headers: { cookie } });
    expect(again.status).to.equal(401);
    expect((await call(gw.url, 'GET', '/console/v1/session', { headers: { cookie } })).status).to.equal(401);
  });

  it('a session ends when its key is revoked (by the operator or through /v1/keys) or expires', async () => {
    const { tenant, key, keyId } = await newTenant(gw);
    const { cookie } = await signIn(key);
    expect((await call(gw.url, 'GET', '/v1/balance', { headers: { cookie } })).status).to.equal(200);
    await gw.tenants.revokeKey(keyId); // not through the console: the check at use catches it
    const r = await call(gw.url, 'GET', '/v1/balance', { headers: { cookie } });
    expect(r.status).to.equal(401);
    expect(r.body.error_code).to.equal(1001);

    const { key: k2 } = await gw.tenants.issueKey(tenant.id, { scopes: ['*'] });
    const s2 = await signIn(k2);
    const minted = await call(gw.url, 'POST', '/v1/keys', { headers: { cookie: s2.cookie, origin: origin() }, body: { name: 'other' } });
    expect(minted.status).to.equal(201);
    const s3 = await signIn(minted.body.secret);
    expect((await call(gw.url, 'DELETE', `/v1/keys/${minted.body.id}`, { headers: { cookie: s2.cookie, origin: origin() } })).status).to.equal(200);
    expect((await call(gw.url, 'GET', '/v1/keys', { headers: { cookie: s3.cookie } })).status).to.equal(401);
    expect((await call(gw.url, 'GET', '/v1/keys', { headers: { cookie: s2.cookie } })).status).to.equal(200);

    const { key: soon, record } = await gw.tenants.issueKey(tenant.id, { scopes: ['*'], expires_at: new Date(Date.now() + 1500).toISOString() });
    const s4 = await signIn(soon);
    expect((await call(gw.url, 'GET', '/v1/keys', { headers: { cookie: s4.cookie } })).status).to.equal(200);
    await new Promise((res) => setTimeout(res, 1600));
    expect((await call(gw.url, 'GET', '/v1/keys', { headers: { cookie: s4.cookie } })).status).to.equal(401);
    void record;
  });

  describe('CSRF', () => {
    it('refuses a cookie POST from a foreign Origin (403/1002) and accepts the own Origin', async () => {
      const { key } = await newTenant(gw);
      const { cookie } = await signIn(key);
      const foreign = await call(gw.url, 'POST', '/v1/keys', { headers: { cookie, origin: 'https://evil.example' }, body: { name: 'x' } });
      expect(foreign.status).to.equal(403);
      expect(foreign.body.error_code).to.equal(1002);
      expect(foreign.body.detail).to.match(/cross-site request refused/);
      const missing = await call(gw.url, 'POST', '/v1/keys', { headers: { cookie }, body: { name: 'x' } });
      expect(missing.status).to.equal(403);
      const foreignReferer = await call(gw.url, 'POST', '/v1/keys', { headers: { cookie, referer: 'https://evil.example/page' }, body: { name: 'x' } });
      expect(foreignReferer.status).to.equal(403);
      const own = await call(gw.url, 'POST', '/v1/keys', { headers: { cookie, origin: origin() }, body: { name: 'x' } });
      expect(own.status, own.text).to.equal(201);
      const ownReferer = await call(gw.url, 'POST', '/v1/keys', { headers: { cookie, referer: `${origin()}/console/keys` }, body: { name: 'y' } });
      expect(ownReferer.status, ownReferer.text).to.equal(201);
      // The webhook routes sit behind the same rule.
      const hook = await call(gw.url, 'POST', '/v1/webhooks/endpoints', { headers: { cookie, origin: 'https://evil.example' }, body: { url: 'https://example.com/h' } });
      expect(hook.status).to.equal(403);
      // GET changes nothing: allowed from anywhere (the answer is unreadable cross-origin anyway).
      expect((await call(gw.url, 'GET', '/v1/keys', { headers: { cookie, origin: 'https://evil.example' } })).status).to.equal(200);
    });

    it('does not apply to bearer-key requests', async () => {
      const { key } = await newTenant(gw);
      const r = await call(gw.url, 'POST', '/v1/keys', { key, body: { name: 'from ci' } });
      expect(r.status, r.text).to.equal(201);
      const foreign = await call(gw.url, 'POST', '/v1/keys', { key, headers: { origin: 'https://evil.example' }, body: { name: 'from ci' } });
      expect(foreign.status).to.equal(201);
    });

    it('refuses a sign-in posted by another site', async () => {
      const { key } = await newTenant(gw);
      const r = await call(gw.url, 'POST', '/console/v1/session', { headers: { origin: 'https://evil.example' }, body: { api_key: key } });
      expect(r.status).to.equal(403);
      expect(r.headers.getSetCookie()).to.deep.equal([]);
    });
  });

  describe('operator session', () => {
    it('signs in with the admin token, calls the admin API and opens a tenant view with X-Console-Tenant', async () => {
      const bad = await call(gw.url, 'POST', '/console/v1/admin-session', { body: { admin_token: 'wrong' } });
      expect(bad.status).to.equal(401);
      const r = await call(gw.url, 'POST', '/console/v1/admin-session', { body: { admin_token: ADMIN } });
      expect(r.status, r.text).to.equal(201);
      const { pair: cookie, attrs } = cookieOf(r, 'gw_admin_session');
      expect(attrs).to.include.members(['HttpOnly', 'SameSite=Strict', 'Path=/', 'Max-Age=3600']);
      const tenants = await call(gw.url, 'GET', '/admin/v1/tenants', { headers: { cookie } });
      expect(tenants.status).to.equal(200);
      const created = await call(gw.url, 'POST', '/admin/v1/tenants', { headers: { cookie, origin: 'https://evil.example' }, body: { name: 'x' } });
      expect(created.status).to.equal(403);
      const ok = await call(gw.url, 'POST', '/admin/v1/tenants', { headers: { cookie, origin: origin() }, body: { name: 'Opco' } });
      expect(ok.status).to.equal(201);

      const { tenant } = await newTenant(gw);
      const view = await call(gw.url, 'GET', '/v1/balance', { headers: { cookie, 'x-console-tenant': tenant.id } });
      expect(view.status, view.text).to.equal(200);
      expect(view.body.tenant_id).to.equal(tenant.id);
      const unknown = await call(gw.url, 'GET', '/v1/balance', { headers: { cookie, 'x-console-tenant': '00000000-0000-4000-8000-000000000000' } });
      expect(unknown.status).to.equal(404);
      // The operator session alone is no tenant's session.
      expect((await call(gw.url, 'GET', '/v1/balance', { headers: { cookie } })).status).to.equal(401);
      const out = await call(gw.url, 'DELETE', '/console/v1/admin-session', { headers: { cookie, origin: origin() } });
      expect(out.status).to.equal(204);
      expect((await call(gw.url, 'GET', '/admin/v1/tenants', { headers: { cookie } })).status).to.equal(401);
    });

    it('X-Console-Tenant without an operator session is ignored: a tenant sees only itself', async () => {
      const a = await newTenant(gw);
      const b = await newTenant(gw);
      const { cookie } = await signIn(a.key);
      const bySession = await call(gw.url, 'GET', '/v1/balance', { headers: { cookie, 'x-console-tenant': b.tenant.id } });
      expect(bySession.status).to.equal(200);
      expect(bySession.body.tenant_id).to.equal(a.tenant.id);
      const byKey = await call(gw.url, 'GET', '/v1/balance', { key: a.key, headers: { 'x-console-tenant': b.tenant.id } });
      expect(byKey.body.tenant_id).to.equal(a.tenant.id);
      // A tenant's session presented as the operator's is no operator session.
      const forged = await call(gw.url, 'GET', '/v1/balance', { headers: { cookie: cookie.replace('gw_session', 'gw_admin_session'), 'x-console-tenant': b.tenant.id } });
      expect(forged.status).to.equal(401);
    });
  });
});
