// The tenant/key store port.
import type { TenantLimitsInput } from '../limits/config.ts';
import type { ApiKeyRecord, TenantRecord } from './types.ts';

export interface TenantStore {
  createTenant(t: TenantRecord): Promise<void>;
  getTenant(id: string): Promise<TenantRecord | undefined>;
  listTenants(): Promise<TenantRecord[]>;
  setTenantDisabled(id: string, disabled: boolean): Promise<TenantRecord | undefined>;
  /** Replace the tenant's own limits (undefined: back to the config's). */
  setTenantLimits(id: string, limits: TenantLimitsInput | undefined): Promise<TenantRecord | undefined>;
  createKey(k: ApiKeyRecord): Promise<void>;
  getKey(id: string): Promise<ApiKeyRecord | undefined>;
  findKeyByHash(hash: string): Promise<ApiKeyRecord | undefined>;
  listKeys(tenantId: string): Promise<ApiKeyRecord[]>;
  /** Marks the key revoked (first revocation time wins); returns it, or undefined if unknown. */
  revokeKey(id: string, at: string): Promise<ApiKeyRecord | undefined>;
}
