// Bearer authentication of tenants, and the operator's admin-token check. Where `sessions` is
// given (the /v1 console routes, the admin API), a console session cookie is accepted instead of
// the bearer credential (./console-session.ts); a request with an Authorization header is always
// judged by that header alone.
import type { NextFunction, Request, Response } from 'express';
import { GatewayError } from '../errors/gateway-error.ts';
import { sameSecret } from '../util/secrets.ts';
import type { TenantService } from '../tenants/service.ts';
import type { ConsoleSessions } from '../tenants/sessions.ts';
import { clientAddress } from './client-address.ts';
import { ADMIN_COOKIE, cookieSession, TENANT_COOKIE } from './console-session.ts';

/** The request's client address under the app's `trust proxy` (server.trust_proxy). */
export function clientOf(req: Request): string {
  return clientAddress(req, req.app.get('trust proxy') === true);
}

export function requireApiKey(tenants: TenantService, sessions?: ConsoleSessions) {
  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    if (sessions && req.headers.authorization === undefined) {
      // The operator opens a tenant's view with its own session; elsewhere the header means nothing.
      const viewed = req.get('x-console-tenant');
      const operator = viewed ? await cookieSession(req, res, sessions, ADMIN_COOKIE) : undefined;
      if (operator && viewed) {
        const tenant = await tenants.getTenant(viewed);
        res.locals.auth = { tenantId: tenant.id, keyId: 'operator', scopes: ['*'], mode: 'live' };
        return next();
      }
      const session = await cookieSession(req, res, sessions, TENANT_COOKIE);
      if (session) {
        res.locals.auth = session.auth;
        return next();
      }
    }
    res.locals.auth = await tenants.authenticate(req.headers.authorization, clientOf(req));
    next();
  };
}

/** The admin API is closed unless an admin token is configured (GATEWAY_ADMIN_TOKEN). */
/**
 * The admin API is closed unless an admin token is configured (GATEWAY_ADMIN_TOKEN). A wrong
 * bearer token counts toward its client address's failed authentications (tenants.guarded).
 */
export function requireAdminToken(token: string, tenants: TenantService, sessions?: ConsoleSessions) {
  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    if (!token) throw new GatewayError('authenticationFailed', 'The admin API is disabled: set GATEWAY_ADMIN_TOKEN to enable it.');
    if (sessions && req.headers.authorization === undefined && (await cookieSession(req, res, sessions, ADMIN_COOKIE))) return next();
    const invalid = () => new GatewayError('authenticationFailed', 'Invalid admin token.', { headers: { 'WWW-Authenticate': 'Bearer' } });
    if (req.headers.authorization === undefined) throw invalid();
    await tenants.guarded(clientOf(req), 'admin_token', async () => {
      const m = /^Bearer[ ]+(\S+)\s*$/i.exec(req.headers.authorization ?? '');
      if (!m || !sameSecret(m[1]!, token)) throw invalid();
    });
    next();
  };
}
