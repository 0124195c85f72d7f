import { expect } from 'chai';
import { MemoryTenantStore } from '../../engine/store/memory/tenants.ts';
import { RedisTenantStore } from '../../engine/store/redis/tenants.ts';
import type { TenantStore } from '../../engine/tenants/store.ts';
import type { ApiKeyRecord, TenantRecord } from '../../engine/tenants/types.ts';
import { forEachBackend, keysUnder, rejectionOf } from './support.ts';

const tenant = (id: string, over: Partial<TenantRecord> = {}): TenantRecord => ({
  id,
  name: `Tenant ${id} «ü»`,
  created_at: '2026-01-01T00:00:00.000Z',
  requires_live: false,
  disabled: false,
  ...over,
});

const key = (id: string, tenantId: string, over: Partial<ApiKeyRecord> = {}): ApiKeyRecord => ({
  id,
  tenant_id: tenantId,
  name: `key ${id}`,
  hash: `sha256-${id}`,
  preview: 'gw_live_AbCd…wxyz',
  scopes: [],
  mode: 'live',
  created_at: '2026-01-01T00:00:00.000Z',
  ...over,
});

forEachBackend('TenantStore contract', (env) => {
  let a: TenantStore;
  let b: TenantStore;
  let prefix: string;
  beforeEach(() => {
    ({ a, b, prefix } = env.pair<TenantStore>(() => new MemoryTenantStore(), (client, p) => new RedisTenantStore({ client, prefix: p })));
  });

  it('creates tenants once, reads them back, lists them in creation order', async () => {
    const t1 = tenant('t1', { limits: { concurrent_tasks: 3, rate: { key: { per_second: null } } } as never });
    await a.createTenant(t1);
    await b.createTenant(tenant('t0'));
    await a.createTenant(tenant('t2', { requires_live: true }));
    expect(String(await rejectionOf(b.createTenant(tenant('t1', { name: 'again' }))))).to.match(/t1 exists/);
    expect(await b.getTenant('t1')).to.deep.equal(t1);
    expect(await a.getTenant('nope')).to.equal(undefined);
    expect((await b.listTenants()).map((t) => t.id)).to.deep.equal(['t1', 't0', 't2']);
  });

  it('disables and re-enables a tenant; sets and clears its limits', async () => {
    await a.createTenant(tenant('t1'));
    expect(await b.setTenantDisabled('t1', true)).to.deep.equal(tenant('t1', { disabled: true }));
    expect((await a.getTenant('t1'))?.disabled).to.equal(true);
    expect(await a.setTenantDisabled('nope', true)).to.equal(undefined);
    const limits = { concurrent_tasks: 5, daily_spend_credits: '10.00' } as never;
    expect((await a.setTenantLimits('t1', limits))?.limits).to.deep.equal(limits);
    expect((await b.getTenant('t1'))?.limits).to.deep.equal(limits);
    const cleared = await b.setTenantLimits('t1', undefined);
    expect(cleared).to.not.have.property('limits');
    expect(await a.getTenant('t1')).to.deep.equal(tenant('t1', { disabled: true }));
    expect(await a.setTenantLimits('nope', limits)).to.equal(undefined);
  });

  it('stores keys by id and hash, lists them per tenant, refuses a duplicate hash', async () => {
    await a.createKey(key('k1', 't1', { expires_at: '2027-01-01T00:00:00.000Z', scopes: ['tasks:read'] }));
    await b.createKey(key('k2', 't2'));
    await a.createKey(key('k3', 't1', { mode: 'test' }));
    expect(String(await rejectionOf(b.createKey(key('k4', 't1', { hash: 'sha256-k1' }))))).to.match(/key exists/);
    expect(await a.getKey('k4')).to.equal(undefined);
    expect(await b.getKey('k1')).to.deep.equal(key('k1', 't1', { expires_at: '2027-01-01T00:00:00.000Z', scopes: ['tasks:read'] }));
    expect((await b.findKeyByHash('sha256-k3'))?.id).to.equal('k3');
    expect(await a.findKeyByHash('sha256-none')).to.equal(undefined);
    expect((await b.listKeys('t1')).map((k) => k.id)).to.deep.equal(['k1', 'k3']);
    expect(await a.listKeys('nobody')).to.deep.equal([]);
  });

  it('revokes a key once: the first revocation time wins', async () => {
    await a.createKey(key('k1', 't1'));
    expect((await b.revokeKey('k1', '2026-02-01T00:00:00.000Z'))?.revoked_at).to.equal('2026-02-01T00:00:00.000Z');
    expect((await a.revokeKey('k1', '2026-03-01T00:00:00.000Z'))?.revoked_at).to.equal('2026-02-01T00:00:00.000Z');
    expect((await a.findKeyByHash('sha256-k1'))?.revoked_at).to.equal('2026-02-01T00:00:00.000Z');
    expect(await a.revokeKey('nope', '2026-03-01T00:00:00.000Z')).to.equal(undefined);
  });

  it('hands out records the caller cannot use to change the store (private copies or frozen)', async () => {
    await a.createKey(key('k1', 't1', { scopes: ['a'] }));
    try {
      (await a.getKey('k1'))!.scopes.push('b');
    } catch (err) {
      expect(err).to.be.instanceOf(TypeError); // a frozen snapshot refuses the write
    }
    expect((await a.getKey('k1'))!.scopes).to.deep.equal(['a']);
  });

  it('race: concurrent creations and revocations on two connections take effect once', async () => {
    const made = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 ? a : b).createTenant(tenant('t1', { name: `n${i}` })).then(() => i, () => -1)));
    const winners = made.filter((i) => i >= 0);
    expect(winners).to.have.length(1);
    expect((await a.getTenant('t1'))?.name).to.equal(`n${winners[0]}`);
    expect(await a.listTenants()).to.have.length(1);
    const keys = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 ? a : b).createKey(key(`k${i}`, 't1', { hash: 'same' })).then(() => i, () => -1)));
    expect(keys.filter((i) => i >= 0)).to.have.length(1);
    expect(await a.listKeys('t1')).to.have.length(1);
    const id = (await a.findKeyByHash('same'))!.id;
    const times = Array.from({ length: 10 }, (_, i) => `2026-02-${String(i + 10)}T00:00:00.000Z`);
    const revoked = await Promise.all(times.map((at, i) => (i % 2 ? a : b).revokeKey(id, at)));
    const first = (await a.getKey(id))!.revoked_at;
    expect(times).to.include(first);
    expect(revoked.every((k) => k?.revoked_at === first)).to.equal(true);
  });

  if (env.isRedis) {
    it('redis: keeps the whole directory in the {dir} slot under the prefix', async () => {
      await a.createTenant(tenant('t1'));
      await a.createKey(key('k1', 't1'));
      expect(await keysUnder(env.a, prefix)).to.deep.equal(['key_hash', 'keys', 'tenant_ids', 'tenants', 'tkeys:t1'].map((k) => `${prefix}{dir}:${k}`));
    });
  }
});
