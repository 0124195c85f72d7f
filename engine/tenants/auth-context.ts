// Who is calling: what authentication (TenantService.authenticate) leaves for every
// authenticated request, and the scope rule every route applies to it.
import { GatewayError } from '../errors/gateway-error.ts';

export interface AuthContext {
  tenantId: string;
  keyId: string;
  scopes: readonly string[];
  mode: 'live' | 'test';
}

/**
 * Scopes are `*`, `<area>:*`, `<area>:<action>` or `*:<action>`; areas are vendor names plus
 * `console` (webhooks, balance) and actions are `create` and `read`.
 */
export function hasScope(scopes: readonly string[], area: string, action: string): boolean {
  for (const s of scopes) {
    if (s === '*' || s === `${area}:*` || s === `${area}:${action}` || s === `*:${action}`) return true;
  }
  return false;
}

export function requireScope(auth: AuthContext, area: string, action: string): void {
  if (!hasScope(auth.scopes, area, action)) {
    throw new GatewayError('permissionDenied', `This API key lacks the scope ${area}:${action}.`);
  }
}
