// Bearer authentication of tenants, and the operator's admin-token check.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';
import { GatewayError } from '../errors/gateway-error.ts';
import type { TenantService } from '../tenants/service.ts';

export function requireApiKey(tenants: TenantService) {
  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    res.locals.auth = await tenants.authenticate(req.headers.authorization);
    next();
  };
}

/** The admin API is closed unless an admin token is configured (GATEWAY_ADMIN_TOKEN). */
export function requireAdminToken(token: string) {
  const expected = createHash('sha256').update(token).digest();
  return (req: Request, _res: Response, next: NextFunction): void => {
    if (!token) throw new GatewayError(1001, 'The admin API is disabled: set GATEWAY_ADMIN_TOKEN to enable it.');
    const m = /^Bearer[ ]+(\S+)\s*$/i.exec(req.headers.authorization ?? '');
    const given = createHash('sha256').update(m?.[1] ?? '').digest();
    if (!m || !timingSafeEqual(given, expected)) throw new GatewayError(1001, 'Invalid admin token.', { headers: { 'WWW-Authenticate': 'Bearer' } });
    next();
  };
}
