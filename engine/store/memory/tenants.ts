// Memory adapter of the tenant/key store.
import type { TenantLimitsInput } from '../../limits/config.ts';
import type { TenantStore } from '../../tenants/store.ts';
import type { ApiKeyRecord, TenantRecord } from '../../tenants/types.ts';

export class MemoryTenantStore implements TenantStore {
  private readonly tenants = new Map<string, TenantRecord>();
  private readonly keys = new Map<string, ApiKeyRecord>();
  private readonly byHash = new Map<string, string>();

  async createTenant(t: TenantRecord): Promise<void> {
    if (this.tenants.has(t.id)) throw new Error(`tenant ${t.id} exists`);
    this.tenants.set(t.id, structuredClone(t));
  }
  async getTenant(id: string): Promise<TenantRecord | undefined> {
    const t = this.tenants.get(id);
    return t && structuredClone(t);
  }
  async listTenants(): Promise<TenantRecord[]> {
    return [...this.tenants.values()].map((t) => structuredClone(t));
  }
  async setTenantDisabled(id: string, disabled: boolean): Promise<TenantRecord | undefined> {
    const t = this.tenants.get(id);
    if (!t) return undefined;
    t.disabled = disabled;
    return structuredClone(t);
  }
  async setTenantLimits(id: string, limits: TenantLimitsInput | undefined): Promise<TenantRecord | undefined> {
    const t = this.tenants.get(id);
    if (!t) return undefined;
    if (limits) t.limits = structuredClone(limits);
    else delete t.limits;
    return structuredClone(t);
  }
  async createKey(k: ApiKeyRecord): Promise<void> {
    if (this.byHash.has(k.hash)) throw new Error('key exists');
    this.keys.set(k.id, structuredClone(k));
    this.byHash.set(k.hash, k.id);
  }
  async getKey(id: string): Promise<ApiKeyRecord | undefined> {
    const k = this.keys.get(id);
    return k && structuredClone(k);
  }
  async findKeyByHash(hash: string): Promise<ApiKeyRecord | undefined> {
    const id = this.byHash.get(hash);
    return id === undefined ? undefined : this.getKey(id);
  }
  async listKeys(tenantId: string): Promise<ApiKeyRecord[]> {
    return [...this.keys.values()].filter((k) => k.tenant_id === tenantId).map((k) => structuredClone(k));
  }
  async revokeKey(id: string, at: string): Promise<ApiKeyRecord | undefined> {
    const k = this.keys.get(id);
    if (!k) return undefined;
    k.revoked_at ??= at;
    return structuredClone(k);
  }
}
