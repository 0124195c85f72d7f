// A tenant managing its own API keys (the console's /v1/keys): a key can mint keys with at
// most its own scopes, never a live key from a test key, and never one that outlives it.
import { GatewayError } from '../errors/gateway-error.ts';
import type { AuthContext } from './auth-context.ts';
import type { TenantService } from './service.ts';
import type { ApiKeyRecord } from './types.ts';

export interface KeyView {
  id: string;
  name: string;
  preview: string;
  scopes: string[];
  mode: 'live' | 'test';
  created_at: string;
  expires_at: string | null;
  revoked_at: string | null;
}

export interface MintKeyInput {
  name: string;
  scopes?: string[];
  mode?: 'live' | 'test';
  expires_at?: string;
}

export function keyView(k: ApiKeyRecord): KeyView {
  return { id: k.id, name: k.name, preview: k.preview, scopes: [...k.scopes], mode: k.mode, created_at: k.created_at, expires_at: k.expires_at ?? null, revoked_at: k.revoked_at ?? null };
}

/** `area:action` with `*` for either (a bare `*` is `*:*`). */
function parts(scope: string): [string, string] {
  if (scope === '*') return ['*', '*'];
  const i = scope.indexOf(':');
  return i < 0 ? [scope, ''] : [scope.slice(0, i), scope.slice(i + 1)];
}

/** Whether `held` grants everything `wanted` does: a wildcard is covered only by a wildcard. */
export function covers(held: readonly string[], wanted: string): boolean {
  const [wa, wx] = parts(wanted);
  return held.some((h) => {
    const [ha, hx] = parts(h);
    return (ha === '*' || ha === wa) && (hx === '*' || hx === wx) && hx !== '';
  });
}

export class KeySelfService {
  private readonly tenants: TenantService;
  private readonly now: () => number;

  constructor(tenants: TenantService, now: () => number) {
    this.tenants = tenants;
    this.now = now;
  }

  async list(auth: AuthContext): Promise<KeyView[]> {
    return (await this.tenants.listKeys(auth.tenantId)).map(keyView);
  }

  async mint(auth: AuthContext, input: MintKeyInput): Promise<KeyView & { secret: string }> {
    const scopes = input.scopes ?? [...auth.scopes];
    scopes.forEach((s, i) => {
      if (!covers(auth.scopes, s)) throw new GatewayError('permissionDenied', `A key cannot grant the scope ${s}, which it does not have itself.`, { errors: [{ pointer: `/scopes/${i}`, detail: 'wider than the calling key' }] });
    });
    const mode = input.mode ?? auth.mode;
    if (auth.mode === 'test' && mode === 'live') throw new GatewayError('permissionDenied', 'A test key cannot create a live key.', { errors: [{ pointer: '/mode', detail: 'live from a test key' }] });
    let expiresAt = input.expires_at === undefined ? undefined : Date.parse(input.expires_at);
    if (expiresAt !== undefined && expiresAt <= this.now()) throw new GatewayError('invalidParameterValue', 'expires_at must be in the future.', { errors: [{ pointer: '/expires_at', detail: 'in the past' }] });
    // A temporary key would otherwise outlive itself through the keys it mints.
    const caller = await this.tenants.getKey(auth.keyId);
    const callerExpiry = caller?.expires_at === undefined ? undefined : Date.parse(caller.expires_at);
    if (callerExpiry !== undefined) {
      if (expiresAt !== undefined && expiresAt > callerExpiry) throw new GatewayError('permissionDenied', `A temporary key cannot create a key that expires after it (${caller!.expires_at}).`, { errors: [{ pointer: '/expires_at', detail: 'after the calling key expires' }] });
      expiresAt ??= callerExpiry;
    }
    const { key, record } = await this.tenants.issueKey(auth.tenantId, { name: input.name, scopes, mode, ...(expiresAt === undefined ? {} : { expires_at: new Date(expiresAt).toISOString() }) });
    return { ...keyView(record), secret: key };
  }

  /** Revoke one of the tenant's keys; another tenant's key is unknown (404). */
  async revoke(auth: AuthContext, id: string): Promise<KeyView> {
    const k = await this.tenants.getKey(id);
    if (!k || k.tenant_id !== auth.tenantId) throw new GatewayError('resourceNotFound', `No API key ${id}.`);
    return keyView(await this.tenants.revokeKey(id));
  }
}
