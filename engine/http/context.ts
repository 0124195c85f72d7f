// What the auth middleware leaves on `res.locals.auth` for every authenticated express request.
import type { Response } from 'express';
import { GatewayError } from '../errors/gateway-error.ts';
import type { AuthContext } from '../tenants/auth-context.ts';

export function authOf(res: Response): AuthContext {
  const auth = res.locals.auth as AuthContext | undefined;
  if (!auth) throw new GatewayError('authenticationFailed', 'Authentication required.');
  return auth;
}
