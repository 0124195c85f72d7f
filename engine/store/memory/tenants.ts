// Memory adapter of the tenant/key store. Records are frozen snapshots (./snapshot.ts): every
// request authenticates, so reads hand out the stored snapshot instead of copying it.
import type { TenantLimitsInput } from '../../limits/config.ts';
import type { TenantStore } from '../../tenants/store.ts';
import type { ApiKeyRecord, TenantRecord } from '../../tenants/types.ts';
import { snapshot } from './snapshot.ts';

export class MemoryTenantStore implements TenantStore {
  private readonly tenants = new Map<string, TenantRecord>();
  private readonly keys = new Map<string, ApiKeyRecord>();
  private readonly byHash = new Map<string, string>();

  async createTenant(t: TenantRecord): Promise<void> {
    if (this.tenants.has(t.id)) throw new Error(`tenant ${t.id} exists`);
    this.tenants.set(t.id, snapshot(t));
  }
  async getTenant(id: string): Promise<TenantRecord | undefined> {
    return this.tenants.get(id);
  }
  async listTenants(): Promise<TenantRecord[]> {
    return [...this.tenants.values()];
  }
  async setTenantDisabled(id: string, disabled: boolean): Promise<TenantRecord | undefined> {
    return this.updateTenant(id, (t) => ({ ...t, disabled }));
  }
  async setTenantLimits(id: string, limits: TenantLimitsInput | undefined): Promise<TenantRecord | undefined> {
    return this.updateTenant(id, ({ limits: _old, ...t }) => (limits ? { ...t, limits } : t));
  }
  async createKey(k: ApiKeyRecord): Promise<void> {
    if (this.byHash.has(k.hash)) throw new Error('key exists');
    this.keys.set(k.id, snapshot(k));
    this.byHash.set(k.hash, k.id);
  }
  async getKey(id: string): Promise<ApiKeyRecord | undefined> {
    return this.keys.get(id);
  }
  async findKeyByHash(hash: string): Promise<ApiKeyRecord | undefined> {
    const id = this.byHash.get(hash);
    return id === undefined ? undefined : this.keys.get(id);
  }
  async listKeys(tenantId: string): Promise<ApiKeyRecord[]> {
    return [...this.keys.values()].filter((k) => k.tenant_id === tenantId);
  }
  async revokeKey(id: string, at: string): Promise<ApiKeyRecord | undefined> {
    const k = this.keys.get(id);
    if (!k) return undefined;
    if (k.revoked_at) return k; // the first revocation time wins
    const revoked = snapshot({ ...k, revoked_at: at });
    this.keys.set(id, revoked);
    return revoked;
  }

  private updateTenant(id: string, change: (t: TenantRecord) => TenantRecord): TenantRecord | undefined {
    const t = this.tenants.get(id);
    if (!t) return undefined;
    const next = snapshot(change(t));
    this.tenants.set(id, next);
    return next;
  }
}
