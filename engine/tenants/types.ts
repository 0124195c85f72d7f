import type { TenantLimitsInput } from '../limits/config.ts';

// Tenants and their API keys. A key is stored only as its SHA-256 hash plus a short preview.
export interface TenantRecord {
  id: string;
  name: string;
  created_at: string;
  /** Only production (live, non-expiring) keys may call provider routes. */
  requires_live: boolean;
  /** A disabled tenant's keys all fail authentication (the sandbox demo tenant when the sandbox is off). */
  disabled: boolean;
  /** The tenant's own limits (rates, concurrent tasks, daily spend), over the config's. */
  limits?: TenantLimitsInput;
}

export interface ApiKeyRecord {
  id: string;
  tenant_id: string;
  name: string;
  hash: string;
  /** e.g. `gw_live_AbCd…wxyz`: enough to recognise a key, useless to use it. */
  preview: string;
  scopes: string[];
  mode: 'live' | 'test';
  created_at: string;
  expires_at?: string;
  revoked_at?: string;
}
