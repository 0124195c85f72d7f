// The operator's admin API (bearer admin token from GATEWAY_ADMIN_TOKEN): tenants, API keys, and
// the billing and webhook routes of their areas (./billing-routes.ts, ./webhook-routes.ts),
// mounted here: a new admin route is added to this router, and nowhere else. The CLI
// (engine/cli) is a client of this API, so it works the same on memory and Redis.
import express, { type Router } from 'express';
import type { Ajv2020 } from 'ajv/dist/2020.js';
import { compileRequestValidator } from '../validation/request-validator.ts';
import { SCHEMA_BASE } from '../validation/ajv.ts';
import type { TenantService } from '../tenants/service.ts';
import type { ConsoleSessions } from '../tenants/sessions.ts';
import type { ApiKeyRecord } from '../tenants/types.ts';
import { GatewayError } from '../errors/gateway-error.ts';
import { requireAdminToken } from './auth.ts';
import { mountAdminBillingRoutes, type BillingRouteDeps } from './billing-routes.ts';
import { jsonBody } from './body.ts';
import { mountAdminWebhookRoutes, type WebhookRouteDeps } from './webhook-routes.ts';

export interface AdminDeps {
  token: string;
  tenants: TenantService;
  ajv: Ajv2020;
  /** When given, an operator console session (cookie) is accepted instead of the bearer token. */
  sessions?: ConsoleSessions;
  /** The wallets, ledgers and limits of tenants (./billing-routes.ts). */
  billing: BillingRouteDeps;
  /** Tenants' webhook endpoints and deliveries (./webhook-routes.ts). */
  webhooks: WebhookRouteDeps;
}

/** A key lives at most 100 years: beyond that its expiry is no date at all. */
const MAX_KEY_TTL_SECONDS = 100 * 365 * 24 * 3600;

const SCOPE = { type: 'string', pattern: '^(\\*|[a-z_][a-z0-9_]*):?(\\*|create|read)?$' };

export function adminRouter(deps: AdminDeps): Router {
  const router = express.Router();
  router.use(requireAdminToken(deps.token, deps.tenants, deps.sessions), jsonBody(64 * 1024));
  const v = (name: string, schema: object) => compileRequestValidator(deps.ajv, `${SCHEMA_BASE}/admin/${name}.json`, schema);

  const createTenant = v('create-tenant', {
    type: 'object', additionalProperties: false, required: ['name'],
    properties: { name: { type: 'string', minLength: 1, maxLength: 200 }, requires_live: { type: 'boolean' } },
  });
  const updateTenant = v('update-tenant', {
    type: 'object', additionalProperties: false, required: ['disabled'],
    properties: { disabled: { type: 'boolean' } },
  });
  const createKey = v('create-key', {
    type: 'object', additionalProperties: false,
    properties: {
      name: { type: 'string', maxLength: 200 },
      scopes: { type: 'array', minItems: 1, items: SCOPE },
      mode: { enum: ['live', 'test'] },
      expires_at: { type: 'string', format: 'date-time' },
      ttl_seconds: { type: 'integer', minimum: 1, maximum: MAX_KEY_TTL_SECONDS },
    },
    not: { required: ['expires_at', 'ttl_seconds'] },
  });

  router.post('/tenants', async (req, res) => {
    const body = await createTenant(req.body ?? {});
    res.status(201).json(await deps.tenants.createTenant(body as { name: string; requires_live?: boolean }));
  });
  router.get('/tenants', async (_req, res) => {
    res.json({ data: await deps.tenants.listTenants() });
  });
  router.get('/tenants/:id', async (req, res) => {
    res.json(await deps.tenants.getTenant(req.params.id));
  });
  // A disabled tenant's keys are refused (401) until it is enabled again; its data stays.
  router.patch('/tenants/:id', async (req, res) => {
    const body = (await updateTenant(req.body ?? {})) as { disabled: boolean };
    const tenant = await deps.tenants.setDisabled(req.params.id, body.disabled);
    if (!tenant) throw new GatewayError('resourceNotFound', `No tenant ${req.params.id}.`);
    res.json(tenant);
  });
  router.post('/tenants/:id/keys', async (req, res) => {
    const body = (await createKey(req.body ?? {})) as { name?: string; scopes?: string[]; mode?: 'live' | 'test'; expires_at?: string; ttl_seconds?: number };
    const expires_at = body.ttl_seconds ? new Date(Date.now() + body.ttl_seconds * 1000).toISOString() : body.expires_at;
    const { key, record } = await deps.tenants.issueKey(req.params.id, { ...body, expires_at });
    res.status(201).json({ ...publicKey(record), key });
  });
  router.get('/tenants/:id/keys', async (req, res) => {
    await deps.tenants.getTenant(req.params.id);
    res.json({ data: (await deps.tenants.listKeys(req.params.id)).map(publicKey) });
  });
  router.delete('/keys/:id', async (req, res) => {
    res.json(publicKey(await deps.tenants.revokeKey(req.params.id)));
  });
  mountAdminBillingRoutes(router, deps.billing);
  mountAdminWebhookRoutes(router, deps.tenants, deps.webhooks);
  return router;
}

/** A key as the API shows it: never the hash, never the secret. */
export function publicKey(k: ApiKeyRecord): Omit<ApiKeyRecord, 'hash'> {
  const { hash: _hash, ...rest } = k;
  return rest;
}
