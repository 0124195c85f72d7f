// What the auth middleware leaves on `res.locals.auth` for every authenticated request.
import type { Response } from 'express';
import { GatewayError } from '../errors/gateway-error.ts';

export interface AuthContext {
  tenantId: string;
  keyId: string;
  scopes: readonly string[];
  mode: 'live' | 'test';
}

export function authOf(res: Response): AuthContext {
  const auth = res.locals.auth as AuthContext | undefined;
  if (!auth) throw new GatewayError(1001, 'Authentication required.');
  return auth;
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
    throw new GatewayError(1002, `This API key lacks the scope ${area}:${action}.`);
  }
}
