// The tenant console API for webhooks. Mounted by the app after authentication; every failure
// is thrown as a GatewayError and rendered by the app's error handler (RFC 9457).
//
//   POST   /v1/webhooks/endpoints                      201 endpoint + secret     console:create
//   GET    /v1/webhooks/endpoints                      {data, has_more}          console:read
//   GET    /v1/webhooks/endpoints/:id                  endpoint                  console:read
//   PATCH  /v1/webhooks/endpoints/:id                  endpoint                  console:create
//   DELETE /v1/webhooks/endpoints/:id                  {id, deleted: true}       console:create
//   POST   /v1/webhooks/endpoints/:id/rotate-secret    endpoint + new secret     console:create
//   POST   /v1/webhooks/endpoints/:id/test             202 {event, delivery}     console:create
//   GET    /v1/webhooks/endpoints/:id/deliveries       {data, has_more}          console:read
//   GET    /v1/webhooks/deliveries/:id                 delivery + attempts       console:read
//   POST   /v1/webhooks/deliveries/:id/resend          202 delivery              console:create
//   GET    /v1/events/:id/deliveries                   {data, has_more}          console:read
//   GET    /v1/webhooks/event-types                    {data}                    console:read
//
// Lists of deliveries are newest first with cursor pagination: `?limit=1..100` (default 20)
// and `?starting_after=<last id of the previous page>`.
import { Router, type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { jsonBody } from './body.ts';
import { authOf } from './context.ts';
import { EVENT_DEFINITIONS, EVENT_TYPES } from '../events/types.ts';
import { pageLimit, query } from './query.ts';
import { requireScope } from '../tenants/auth-context.ts';
import type { WebhookEndpoints } from '../webhooks/endpoints.ts';
import type { WebhookDeliveries } from '../webhooks/deliveries.ts';
import type { PageRequest } from '../webhooks/store.ts';
import type { TenantService } from '../tenants/service.ts';

export interface WebhookRouteDeps {
  endpoints: WebhookEndpoints;
  deliveries: WebhookDeliveries;
}

const DEFAULT_LIMIT = 20;
const MAX_LIMIT = 100;

/**
 * `prefix` is `/v1` for tenants (behind `auth`, their API key) and empty for the admin API,
 * which mounts the same routes under /admin/v1/tenants/:tenant_id with the tenant chosen there.
 */
export function webhookRouter(deps: WebhookRouteDeps, opts: { prefix?: string; auth?: RequestHandler } = {}): Router {
  const { endpoints, deliveries } = deps;
  const prefix = opts.prefix ?? '/v1';
  const r = Router();
  const json = jsonBody(16 * 1024);
  if (opts.auth) r.use([`${prefix}/webhooks`, `${prefix}/events`], opts.auth);

  const tenant = (res: Response, action: 'read' | 'create'): string => {
    const auth = authOf(res);
    requireScope(auth, 'console', action);
    return auth.tenantId;
  };

  // The event types an endpoint may subscribe to, as engine/events/types.ts defines them (the console's form lists these).
  r.get(`${prefix}/webhooks/event-types`, (_req, res) => {
    tenant(res, 'read');
    res.json({ data: EVENT_TYPES.map((type) => ({ type, summary: EVENT_DEFINITIONS[type].summary, description: EVENT_DEFINITIONS[type].description })) });
  });
  r.post(`${prefix}/webhooks/endpoints`, json, async (req, res) => {
    res.status(201).json(await endpoints.create(tenant(res, 'create'), req.body));
  });
  r.get(`${prefix}/webhooks/endpoints`, async (_req, res) => {
    res.json({ data: await endpoints.list(tenant(res, 'read')), has_more: false });
  });
  r.get(`${prefix}/webhooks/endpoints/:id`, async (req, res) => {
    res.json(await endpoints.get(tenant(res, 'read'), param(req, 'id')));
  });
  r.patch(`${prefix}/webhooks/endpoints/:id`, json, async (req, res) => {
    res.json(await endpoints.update(tenant(res, 'create'), param(req, 'id'), req.body));
  });
  r.delete(`${prefix}/webhooks/endpoints/:id`, async (req, res) => {
    const id = param(req, 'id');
    await endpoints.delete(tenant(res, 'create'), id);
    res.json({ id, deleted: true });
  });
  r.post(`${prefix}/webhooks/endpoints/:id/rotate-secret`, async (req, res) => {
    res.json(await endpoints.rotateSecret(tenant(res, 'create'), param(req, 'id')));
  });
  r.post(`${prefix}/webhooks/endpoints/:id/test`, async (req, res) => {
    res.status(202).json(await endpoints.sendTestEvent(tenant(res, 'create'), param(req, 'id')));
  });
  r.get(`${prefix}/webhooks/endpoints/:id/deliveries`, async (req, res) => {
    res.json(await deliveries.listForEndpoint(tenant(res, 'read'), param(req, 'id'), pageOf(req)));
  });
  r.get(`${prefix}/webhooks/deliveries/:id`, async (req, res) => {
    res.json(await deliveries.get(tenant(res, 'read'), param(req, 'id')));
  });
  r.post(`${prefix}/webhooks/deliveries/:id/resend`, async (req, res) => {
    res.status(202).json(await deliveries.resend(tenant(res, 'create'), param(req, 'id')));
  });
  r.get(`${prefix}/events/:id/deliveries`, async (req, res) => {
    res.json(await deliveries.listForEvent(tenant(res, 'read'), param(req, 'id'), pageOf(req)));
  });
  return r;
}

function param(req: Request, name: string): string {
  return String(req.params[name]);
}

function pageOf(req: Request): PageRequest {
  const page: PageRequest = { limit: pageLimit(req, DEFAULT_LIMIT, MAX_LIMIT) };
  const startingAfter = query(req, 'starting_after');
  if (startingAfter !== undefined) page.starting_after = startingAfter;
  return page;
}

/** The same console routes for the operator: /admin/v1/tenants/:tenant_id/webhooks/... */
export function mountAdminWebhookRoutes(admin: Router, tenants: TenantService, deps: WebhookRouteDeps): void {
  admin.use('/tenants/:tenant_id', async (req: Request, res: Response, next: NextFunction) => {
    const tenant = await tenants.getTenant(String(req.params.tenant_id));
    res.locals.auth = { tenantId: tenant.id, keyId: 'admin', scopes: ['*'], mode: 'live' };
    next();
  }, webhookRouter(deps, { prefix: '' }));
}
