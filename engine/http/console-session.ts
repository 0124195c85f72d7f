// The console's session cookies over HTTP: reading and writing them, and the CSRF rule of
// docs/console-api.md. A cookie travels with every request the browser makes to this origin,
// including ones another site triggers, so a state-changing request authenticated by a cookie
// must come from a page of this origin: its Origin (or, lacking one, its Referer) must be the
// gateway's own (the scheme express sees, trust proxy included, and the Host).
import type { Request, Response } from 'express';
import { GatewayError } from '../errors/gateway-error.ts';
import type { ConsoleSessions, OpenedSession, ResolvedSession } from '../tenants/sessions.ts';

export const TENANT_COOKIE = 'gw_session';
export const ADMIN_COOKIE = 'gw_admin_session';

const SAFE_METHODS = new Set(['GET', 'HEAD']);

export function readCookie(req: Request, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0 || part.slice(0, eq).trim() !== name) continue;
    const value = part.slice(eq + 1).trim();
    return value === '' ? undefined : value;
  }
  return undefined;
}

/** `Secure` only over HTTPS (TLS, or X-Forwarded-Proto: https from a trusted proxy): a plain-HTTP console would otherwise never get its cookie back. */
export function setSessionCookie(req: Request, res: Response, name: string, s: Pick<OpenedSession, 'id' | 'maxAge'>): void {
  res.append('Set-Cookie', `${name}=${s.id}; HttpOnly; SameSite=Strict; Path=/; Max-Age=${s.maxAge}${req.secure ? '; Secure' : ''}`);
}

export function clearSessionCookie(req: Request, res: Response, name: string): void {
  res.append('Set-Cookie', `${name}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0${req.secure ? '; Secure' : ''}`);
}

export function ownOrigin(req: Request): string {
  return `${req.protocol}://${req.host}`.toLowerCase();
}

/** Where the request says it comes from: its Origin, else its Referer's origin; undefined when neither says. */
function claimedOrigin(req: Request): string | undefined {
  const origin = req.get('origin');
  if (origin !== undefined && origin !== 'null') return origin.toLowerCase();
  const referer = req.get('referer');
  if (referer === undefined) return origin; // 'null' (an opaque origin) stays a foreign one
  try {
    return new URL(referer).origin.toLowerCase();
  } catch {
    return 'invalid';
  }
}

/** The CSRF rule for cookie-authenticated requests (GET and HEAD change nothing and pass). */
export function checkSameOrigin(req: Request): void {
  if (SAFE_METHODS.has(req.method)) return;
  if (claimedOrigin(req) !== ownOrigin(req)) throw new GatewayError('permissionDenied', 'cross-site request refused: a console request must come from the gateway\'s own origin.');
}

/** A sign-in from a browser page of another site (login CSRF) is refused; API clients send no Origin. */
export function checkSignInOrigin(req: Request): void {
  const origin = req.get('origin');
  if (origin !== undefined && origin.toLowerCase() !== ownOrigin(req)) throw new GatewayError('permissionDenied', 'cross-site request refused: sign in from the gateway\'s own console.');
}

/**
 * The session behind the cookie `name`: undefined without that cookie; 403 for a cross-site
 * state change, 401 for an unknown, expired or revoked session. A use that slid the expiry
 * re-sends the cookie with the new Max-Age.
 */
export async function cookieSession(req: Request, res: Response, sessions: ConsoleSessions, name: string): Promise<ResolvedSession | undefined> {
  const id = readCookie(req, name);
  if (id === undefined) return undefined;
  checkSameOrigin(req);
  const resolved = await sessions.resolve(id, name === ADMIN_COOKIE ? 'operator' : 'tenant');
  if (resolved.renewed) setSessionCookie(req, res, name, resolved.renewed);
  return resolved;
}
