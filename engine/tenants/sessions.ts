// Console sessions: an API key (or the admin token) is exchanged once for an opaque session id
// that the browser keeps in an HttpOnly cookie, so the key itself never sits in the browser.
// Only the SHA-256 of the id is stored. A session lasts `ttlSeconds` without use (sliding), and
// never more than SESSION_LIFETIME_CAP_MS after sign-in: a stolen cookie stops working on its own.
// A tenant session is re-checked against its key on every use, so revoking or expiring the key
// (or disabling the tenant) ends its sessions at once, whatever the store still holds.
import { createHash, randomBytes } from 'node:crypto';
import { GatewayError } from '../errors/gateway-error.ts';
import type { Clock } from '../util/clock.ts';
import { sameSecret } from '../util/secrets.ts';
import { hasScope, type AuthContext } from './auth-context.ts';
import type { TenantService } from './service.ts';
import type { SessionRecord, SessionStore } from './store.ts';

export const SESSION_LIFETIME_CAP_MS = 12 * 3_600_000;
/** Sessions one key (or the operator) may hold at once; signing in again drops the oldest. */
export const SESSIONS_PER_OWNER = 20;

export interface SessionView {
  tenant_id: string;
  key_id: string;
  scopes: readonly string[];
  mode: 'live' | 'test';
  expires_at: string;
}

export interface OpenedSession {
  /** The opaque id: the cookie's value, never stored. */
  id: string;
  /** Seconds until it expires (the cookie's Max-Age). */
  maxAge: number;
  expiresAt: number;
}

export interface ResolvedSession {
  record: SessionRecord;
  /** The tenant session's caller (its key's current context); undefined for the operator. */
  auth?: AuthContext;
  /** Set when this use slid the expiry: the cookie is re-sent with the new Max-Age. */
  renewed?: OpenedSession;
}

export interface ConsoleSessionsOptions {
  store: SessionStore;
  tenants: TenantService;
  clock: Clock;
  ttlSeconds: number;
  /** The admin token (empty: operator sessions are refused, as the admin API is). */
  adminToken: string;
}

const sha256 = (s: string): Buffer => createHash('sha256').update(s).digest();
const hashOf = (id: string): string => sha256(id).toString('hex');

const unauthenticated = (why: string) => new GatewayError('authenticationFailed', why, { headers: { 'WWW-Authenticate': 'Bearer' } });

export class ConsoleSessions {
  private readonly o: ConsoleSessionsOptions;
  private readonly ttlMs: number;

  constructor(o: ConsoleSessionsOptions) {
    this.o = o;
    this.ttlMs = Math.min(o.ttlSeconds * 1000, SESSION_LIFETIME_CAP_MS);
  }

  /** Sign in with an API key that has console:read; 401 for an unusable key, 403 without the scope. */
  async signIn(apiKey: string, client?: string): Promise<{ session: OpenedSession; view: SessionView }> {
    const auth = await this.o.tenants.guarded(client, 'console_sign_in', () => this.o.tenants.authenticateSecret(apiKey));
    if (!hasScope(auth.scopes, 'console', 'read')) throw new GatewayError('permissionDenied', 'This API key lacks the scope console:read the console needs.');
    const session = await this.open('tenant', `key:${auth.keyId}`, auth);
    return { session, view: view(auth, session.expiresAt) };
  }

  /** Sign in with the admin token; its failures from `client` count as guesses (CredentialGuard). */
  async signInOperator(token: string, client?: string): Promise<OpenedSession> {
    if (!this.o.adminToken) throw unauthenticated('The admin API is disabled: set GATEWAY_ADMIN_TOKEN to enable it.');
    await this.o.tenants.guarded(client, 'operator_sign_in', async () => {
      if (!sameSecret(token, this.o.adminToken)) throw unauthenticated('Invalid admin token.');
    });
    return this.open('operator', 'operator', undefined, this.adminTag());
  }

  /** Which admin token an operator session belongs to, without storing anything that could be replayed. */
  private adminTag(): string {
    return createHash('sha256').update(`console operator session\n${this.o.adminToken}`).digest('hex').slice(0, 32);
  }

  /**
   * The live session behind a cookie value of `kind`, or 401. A tenant session whose key is no
   * longer usable is deleted as it is refused.
   */
  async resolve(id: string, kind: SessionRecord['kind']): Promise<ResolvedSession> {
    const hash = hashOf(id);
    const record = await this.o.store.get(hash);
    const now = this.o.clock.now();
    if (!record || record.kind !== kind || record.expires_at <= now) throw unauthenticated('No console session: sign in again.');
    // The admin token was changed or removed since: its operator sessions end with it.
    if (kind === 'operator' && (!this.o.adminToken || record.admin_tag !== this.adminTag())) {
      await this.o.store.delete(record);
      throw unauthenticated('No console session: sign in again.');
    }
    let auth: AuthContext | undefined;
    if (kind === 'tenant') {
      try {
        auth = await this.o.tenants.keyContext(record.key_id!);
      } catch (err) {
        if (err instanceof GatewayError && err.errorName === 'authenticationFailed') await this.o.store.delete(record);
        throw err instanceof GatewayError && err.errorName === 'authenticationFailed' ? unauthenticated(`The session's API key is no longer usable: ${err.detail}`) : err;
      }
    }
    // Sliding, but written at most once per SLIDE interval: most requests only read.
    const slideEvery = Math.min(60_000, this.ttlMs / 2);
    if (now - record.seen_at < slideEvery) return { record, auth };
    const expiresAt = Math.min(now + this.ttlMs, record.created_at + SESSION_LIFETIME_CAP_MS);
    await this.o.store.touch(hash, now, expiresAt);
    const renewed = { id, maxAge: Math.max(0, Math.floor((expiresAt - now) / 1000)), expiresAt };
    return { record: { ...record, seen_at: now, expires_at: expiresAt }, auth, renewed };
  }

  view(auth: AuthContext, record: SessionRecord): SessionView {
    return view(auth, record.expires_at);
  }

  /** Sign-out: the session is deleted server-side (an unknown id is already signed out). */
  async signOut(id: string): Promise<void> {
    const record = await this.o.store.get(hashOf(id));
    if (record) await this.o.store.delete(record);
  }

  /** A key was revoked: its sessions go too (they would be refused at use anyway). */
  async endKeySessions(keyId: string): Promise<void> {
    await this.o.store.deleteOwner(`key:${keyId}`);
  }

  private async open(kind: SessionRecord['kind'], owner: string, auth?: AuthContext, adminTag?: string): Promise<OpenedSession> {
    const id = randomBytes(32).toString('base64url');
    const now = this.o.clock.now();
    const expiresAt = now + this.ttlMs;
    const record: SessionRecord = { hash: hashOf(id), kind, owner, created_at: now, seen_at: now, expires_at: expiresAt };
    if (auth) Object.assign(record, { tenant_id: auth.tenantId, key_id: auth.keyId });
    if (adminTag) record.admin_tag = adminTag;
    await this.o.store.create(record, SESSIONS_PER_OWNER);
    return { id, maxAge: Math.floor(this.ttlMs / 1000), expiresAt };
  }
}

function view(auth: AuthContext, expiresAt: number): SessionView {
  return { tenant_id: auth.tenantId, key_id: auth.keyId, scopes: auth.scopes, mode: auth.mode, expires_at: new Date(expiresAt).toISOString() };
}
