// Console sign-in (docs/console-api.md, "Authentication"): an API key or the admin token is
// exchanged for a session cookie; the credential itself never has to stay in the browser.
//
//   POST   /console/v1/session          {api_key}      201 session + gw_session cookie
//   GET    /console/v1/session                         the session (401 without one)
//   DELETE /console/v1/session                         204, cookie cleared, session revoked
//   POST   /console/v1/admin-session    {admin_token}  201 {expires_at} + gw_admin_session
//   GET    /console/v1/admin-session                   {expires_at} (401 without one)
//   DELETE /console/v1/admin-session                   204, cookie cleared, session revoked
import { Router, type Request, type Response } from 'express';
import { GatewayError } from '../errors/gateway-error.ts';
import type { ConsoleSessions } from '../tenants/sessions.ts';
import { clientOf } from './auth.ts';
import { jsonBody } from './body.ts';
import { ADMIN_COOKIE, checkSameOrigin, checkSignInOrigin, clearSessionCookie, cookieSession, readCookie, setSessionCookie, TENANT_COOKIE } from './console-session.ts';

export function consoleSessionRouter(sessions: ConsoleSessions): Router {
  const r = Router();
  const json = jsonBody(8 * 1024);

  r.post('/console/v1/session', json, async (req, res) => {
    checkSignInOrigin(req);
    const { session, view } = await sessions.signIn(stringField(req, 'api_key'), clientOf(req));
    setSessionCookie(req, res, TENANT_COOKIE, session);
    res.status(201).json(view);
  });
  r.get('/console/v1/session', async (req, res) => {
    const s = await cookieSession(req, res, sessions, TENANT_COOKIE);
    if (!s?.auth) throw noSession();
    res.json(sessions.view(s.auth, s.record));
  });
  r.delete('/console/v1/session', async (req, res) => {
    await signOut(req, res, sessions, TENANT_COOKIE);
  });

  r.post('/console/v1/admin-session', json, async (req, res) => {
    checkSignInOrigin(req);
    const session = await sessions.signInOperator(stringField(req, 'admin_token'), clientOf(req));
    setSessionCookie(req, res, ADMIN_COOKIE, session);
    res.status(201).json({ operator: true, expires_at: new Date(session.expiresAt).toISOString() });
  });
  r.get('/console/v1/admin-session', async (req, res) => {
    const s = await cookieSession(req, res, sessions, ADMIN_COOKIE);
    if (!s) throw noSession();
    res.json({ operator: true, expires_at: new Date(s.record.expires_at).toISOString() });
  });
  r.delete('/console/v1/admin-session', async (req, res) => {
    await signOut(req, res, sessions, ADMIN_COOKIE);
  });
  return r;
}

/** Signing out twice, or without a session, is still a sign-out: 204 either way. */
async function signOut(req: Request, res: Response, sessions: ConsoleSessions, name: string): Promise<void> {
  const id = readCookie(req, name);
  if (id !== undefined) {
    checkSameOrigin(req);
    await sessions.signOut(id);
  }
  clearSessionCookie(req, res, name);
  res.status(204).end();
}

function stringField(req: Request, name: string): string {
  const body = req.body as Record<string, unknown> | undefined;
  const v = body?.[name];
  if (typeof v !== 'string' || v === '' || v.length > 512) {
    throw new GatewayError('parameterValidationFailed', `The body must be {"${name}": "..."}.`, { errors: [{ pointer: `/${name}`, detail: v === undefined ? 'required' : 'must be a non-empty string' }] });
  }
  return v;
}

const noSession = () => new GatewayError('authenticationFailed', 'No console session: sign in first.', { headers: { 'WWW-Authenticate': 'Bearer' } });
