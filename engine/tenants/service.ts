// Tenants and API keys: issuing (shown once, stored as a hash), revoking (effective at once:
// every request looks the key up, or a cache that the store's change feed empties in every
// process, ./credential-cache.ts), and authenticating a bearer header into an AuthContext.
import { hash } from 'node:crypto';
import { GatewayError } from '../errors/gateway-error.ts';
import type { AuthContext } from './auth-context.ts';
import { isoNow, type Clock } from '../util/clock.ts';
import { newUuid, prefixedId, randomBase62 } from '../util/ids.ts';
import type { TenantLimitsInput } from '../limits/config.ts';
import type { TenantStore } from './store.ts';
import { traced, tracing } from '../tracing/tracing.ts';
import type { ApiKeyRecord, TenantRecord } from './types.ts';
import type { CredentialGuard, CredentialKind } from './credential-guard.ts';
import { CredentialCache, type Credential } from './credential-cache.ts';

export interface IssueKeyOptions {
  name?: string;
  scopes?: string[];
  mode?: 'live' | 'test';
  /** ISO 8601 expiry; a key with an expiry is a temporary key. */
  expires_at?: string;
  /** Use this exact secret (the sandbox demo key); otherwise a random one is generated. */
  secret?: string;
}

export const hashKey = (key: string): string => hash('sha256', key, 'hex');

export class TenantService {
  private readonly store: TenantStore;
  private readonly clock: Clock;
  /** Counts failed authentications per client address (credential guessing); none in unit tests. */
  readonly guard: CredentialGuard | undefined;
  /** Keys and their tenants by hash, when the store has a change feed (./credential-cache.ts). */
  private readonly cache: CredentialCache | undefined;

  constructor(store: TenantStore, clock: Clock, guard?: CredentialGuard) {
    this.store = store;
    this.clock = clock;
    this.guard = guard;
    this.cache = store.changes ? new CredentialCache(store.changes) : undefined;
  }

  /**
   * A presented credential's check, counted for `client` (its address) when guessing is guarded:
   * see CredentialGuard.attempt. Without a client or a guard, the check alone.
   */
  guarded<T>(client: string | undefined, kind: CredentialKind, check: () => Promise<T>): Promise<T> {
    return client !== undefined && this.guard ? this.guard.attempt(client, kind, check) : check();
  }

  async createTenant(opts: { name: string; requires_live?: boolean; id?: string }): Promise<TenantRecord> {
    const t: TenantRecord = { id: opts.id ?? newUuid(), name: opts.name, created_at: isoNow(this.clock), requires_live: opts.requires_live ?? false, disabled: false };
    await this.store.createTenant(t);
    return t;
  }

  async getTenant(id: string): Promise<TenantRecord> {
    const t = await this.store.getTenant(id);
    if (!t) throw new GatewayError('resourceNotFound', `No tenant ${id}.`);
    return t;
  }

  listTenants(): Promise<TenantRecord[]> {
    return this.store.listTenants();
  }

  setDisabled(id: string, disabled: boolean): Promise<TenantRecord | undefined> {
    return this.store.setTenantDisabled(id, disabled).finally(() => this.cache?.clear());
  }

  async setLimits(id: string, limits: TenantLimitsInput | undefined): Promise<TenantRecord> {
    const t = await this.store.setTenantLimits(id, limits).finally(() => this.cache?.clear());
    if (!t) throw new GatewayError('resourceNotFound', `No tenant ${id}.`);
    return t;
  }

  /** Issue a key. The returned `key` is the only time the secret is ever visible. */
  async issueKey(tenantId: string, opts: IssueKeyOptions = {}): Promise<{ key: string; record: ApiKeyRecord }> {
    await this.getTenant(tenantId);
    const mode = opts.mode ?? 'live';
    const key = opts.secret ?? `gw_${mode}_${randomBase62(40)}`;
    if (opts.expires_at !== undefined && Number.isNaN(Date.parse(opts.expires_at))) {
      throw new GatewayError('parameterValidationFailed', 'expires_at must be an ISO 8601 date-time.', { errors: [{ pointer: '/expires_at', detail: 'must be an ISO 8601 date-time' }] });
    }
    const record: ApiKeyRecord = {
      id: prefixedId('key_', 20),
      tenant_id: tenantId,
      name: opts.name ?? '',
      hash: hashKey(key),
      preview: `${key.slice(0, 12)}…${key.slice(-4)}`,
      scopes: opts.scopes ?? ['*'],
      mode,
      created_at: isoNow(this.clock),
      ...(opts.expires_at ? { expires_at: new Date(opts.expires_at).toISOString() } : {}),
    };
    await this.store.createKey(record);
    return { key, record };
  }

  listKeys(tenantId: string): Promise<ApiKeyRecord[]> {
    return this.store.listKeys(tenantId);
  }

  async revokeKey(id: string): Promise<ApiKeyRecord> {
    const k = await this.store.revokeKey(id, isoNow(this.clock)).finally(() => this.cache?.clear());
    if (!k) throw new GatewayError('resourceNotFound', `No API key ${id}.`);
    return k;
  }

  /**
   * `Authorization: Bearer <key>` → who is calling; 401/1001 for anything but a usable key. A
   * header sent from `client` counts toward its failed authentications (no header: nothing
   * was presented, nothing is counted).
   */
  authenticate(header: string | undefined, client?: string): Promise<AuthContext> {
    const check = () => (tracing ? traced('auth', () => this.authenticateKey(header)) : this.authenticateKey(header));
    return header === undefined ? check() : this.guarded(client, 'api_key', check);
  }

  // Not async (nor authenticateSecret, credential): an async function that returns another
  // promise settles a microtask turn or two after it, on every request.
  private authenticateKey(header: string | undefined): Promise<AuthContext> {
    const m = header ? /^Bearer[ ]+(\S+)\s*$/i.exec(header) : null;
    if (!header) return Promise.reject(new GatewayError('authenticationFailed', 'Missing API key: send Authorization: Bearer <API_KEY>.', { headers: { 'WWW-Authenticate': 'Bearer' } }));
    if (!m) return Promise.reject(new GatewayError('authenticationFailed', 'Malformed Authorization header: expected Bearer <API_KEY>.', { headers: { 'WWW-Authenticate': 'Bearer' } }));
    return this.authenticateSecret(m[1]!);
  }

  /** A key's secret (the console's sign-in) → who is calling; the same refusals as a bearer header. */
  authenticateSecret(secret: string): Promise<AuthContext> {
    const hash = hashKey(secret);
    const found = this.cache ? this.cache.get(hash, () => this.credential(this.store.findKeyByHash(hash))) : this.credential(this.store.findKeyByHash(hash));
    return found.then((c) => this.usable(c));
  }

  /** The context of the key `keyId` if it is still usable (a console session checks its key on every use). */
  async keyContext(keyId: string): Promise<AuthContext> {
    return this.usable(await this.credential(this.store.getKey(keyId)));
  }

  /** A key with its tenant. */
  private credential(key: Promise<ApiKeyRecord | undefined>): Promise<Credential | undefined> {
    return key.then((k) => k && this.store.getTenant(k.tenant_id).then((tenant) => ({ key: k, tenant })));
  }

  getKey(id: string): Promise<ApiKeyRecord | undefined> {
    return this.store.getKey(id);
  }

  private usable(credential: Credential | undefined): AuthContext {
    const invalid = (why: string) => new GatewayError('authenticationFailed', why, { headers: { 'WWW-Authenticate': 'Bearer error="invalid_token"' } });
    if (!credential) throw invalid('Invalid API key.');
    const { key, tenant } = credential;
    if (key.revoked_at) throw invalid('This API key has been revoked.');
    if (key.expires_at && Date.parse(key.expires_at) <= this.clock.now()) throw invalid('This API key has expired.');
    if (!tenant || tenant.disabled) throw invalid('Invalid API key.');
    if (tenant.requires_live && (key.mode !== 'live' || key.expires_at)) {
      throw new GatewayError('permissionDenied', 'This tenant accepts only production keys; test and temporary keys are refused.');
    }
    return { tenantId: key.tenant_id, keyId: key.id, scopes: key.scopes, mode: key.mode };
  }
}
