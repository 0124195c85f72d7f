// Defects the fuzz suite found (other seeds than its default), pinned one by one. The requests the
// HTTP parser refuses, CONNECT, an unknown Expect and a missing Host are pinned in
// test/http/parser-errors.test.ts.
import { expect } from 'chai';
import type { Gateway } from '../../engine/gateway.ts';
import { call, newTenant, startTestGateway } from '../helpers/gateway.ts';

const ADMIN = 'test-admin-token';

describe('defects found by fuzzing', () => {
  let gw: Gateway;
  before(async () => {
    gw = await startTestGateway();
  });
  after(() => gw.close());

  it('a limit too large for the limits engine is refused (400/2003), not stored to fail the tenant later', async () => {
    const { tenant, key } = await newTenant(gw);
    const path = `/admin/v1/tenants/${tenant.id}/limits`;
    for (const body of [{ concurrent_tasks: 2 ** 53 }, { rate: { key: { per_minute: 1e308 } } }, { rate: { tenant: { per_day: 2 ** 60 } } }]) {
      const r = await call(gw.url, 'PUT', path, { key: ADMIN, body });
      expect(r.status, r.text).to.equal(400);
      expect(r.body.error_code).to.equal(2003);
    }
    expect((await call(gw.url, 'GET', path, { key: ADMIN })).status).to.equal(200);
    expect((await call(gw.url, 'GET', '/v1/balance', { key })).status).to.equal(200);
  });

  it('a key ttl_seconds beyond any date is refused (400/2003), not a 500', async () => {
    const { tenant } = await newTenant(gw);
    const r = await call(gw.url, 'POST', `/admin/v1/tenants/${tenant.id}/keys`, { key: ADMIN, body: { ttl_seconds: 1e308 } });
    expect(r.status, r.text).to.equal(400);
    expect(r.body.error_code).to.equal(2003);
    const ok = await call(gw.url, 'POST', `/admin/v1/tenants/${tenant.id}/keys`, { key: ADMIN, body: { ttl_seconds: 3600 } });
    expect(ok.status, ok.text).to.equal(201);
  });
});
