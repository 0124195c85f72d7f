// Every route the gateway serves, as request templates for the fuzzer: the descriptor routes of
// every vendor (async creates with their request examples, task GETs and cancels, status routes,
// chat sync and stream, model lists, their aliases), the admin API (tenants, keys, wallets,
// limits, webhook endpoints and deliveries), the tenant routes (balance, ledger and its CSV,
// keys, tasks, usage, webhooks console) and the docs and health routes. Ids in paths are real
// (made in `prepare`), so routes get past their lookups.
import type { Gateway } from '../../engine/gateway.ts';
import type { RouteSpec } from '../../engine/descriptors/types.ts';
import { call, newTenant } from '../helpers/gateway.ts';

export const ADMIN_TOKEN = 'test-admin-token';

export type Auth = 'tenant' | 'admin' | 'none';

export interface Template {
  method: string;
  path: string;
  auth: Auth;
  /** Valid sample bodies (empty: the route takes none). */
  bodies: unknown[];
  /** Routes like video model A answer a refused create with a task_info-shaped 400. */
  taskInfoShape?: boolean;
}

export interface Fixtures {
  key: string;
  otherKey: string;
  tenantId: string;
  /** Admin writes that would change what the main tenant may do go to this tenant. */
  victimId: string;
  victimKeyId: string;
  endpointId: string;
  victimEndpointId: string;
  deliveryId: string;
  eventId: string;
  /** route key → a task of that route owned by the main tenant */
  tasks: Map<string, string>;
}

const UNKNOWN = '7f1d6c1e-3a0b-4c52-9d8e-2b4f6a8c0e11';
export const HOOK_URL = 'https://127.0.0.1:9/fuzz-hook';

/** The ids the templates use: two tenants, keys, endpoints, a delivery, one task per async route. */
export async function prepare(gw: Gateway): Promise<Fixtures> {
  const main = await newTenant(gw);
  const other = await newTenant(gw);
  const victim = await newTenant(gw);
  const ep = await call(gw.url, 'POST', '/v1/webhooks/endpoints', { key: main.key, body: { url: HOOK_URL, events: ['task.succeeded'] } });
  const victimEp = await call(gw.url, 'POST', '/v1/webhooks/endpoints', { key: victim.key, body: { url: HOOK_URL, events: ['task.failed'] } });
  const sent = await call(gw.url, 'POST', `/v1/webhooks/endpoints/${ep.body.id}/test`, { key: main.key });
  if (ep.status !== 201 || victimEp.status !== 201 || sent.status !== 202) throw new Error(`fuzz set-up failed: ${ep.text} ${victimEp.text} ${sent.text}`);
  const tasks = new Map<string, string>();
  for (const v of gw.vendors) {
    for (const r of v.routes) {
      if (r.kind !== 'async') continue;
      const example = examplesOf(specOf(gw, r.vendor, r.id))[0];
      const created = await call(gw.url, 'POST', r.path, { key: main.key, body: example });
      if (created.status >= 300) throw new Error(`fuzz set-up: the example of ${r.key} answered ${created.status}: ${created.text}`);
      tasks.set(r.key, created.body.task_info.id);
    }
  }
  return {
    key: main.key, otherKey: other.key, tenantId: main.tenant.id, victimId: victim.tenant.id, victimKeyId: victim.keyId,
    endpointId: ep.body.id, victimEndpointId: victimEp.body.id, deliveryId: sent.body.delivery?.id ?? sent.body.id, eventId: sent.body.event?.id ?? UNKNOWN, tasks,
  };
}

function specOf(gw: Gateway, vendor: string, id: string): RouteSpec {
  const v = gw.vendors.find((p) => p.vendor === vendor)!;
  return v.loaded.descriptor.routes.find((r) => r.id === id)!;
}

function examplesOf(spec: RouteSpec): unknown[] {
  const req = spec.request;
  const fromSchema = (req?.schema as { examples?: unknown[] } | undefined)?.examples ?? [];
  return [...(req?.examples ?? []), ...fromSchema];
}

export function templates(gw: Gateway, f: Fixtures): Template[] {
  const out: Template[] = [];
  const add = (method: string, path: string, auth: Auth, bodies: unknown[] = [], extra: Partial<Template> = {}) => out.push({ method, path, auth, bodies, ...extra });

  // Descriptor routes of every vendor.
  for (const v of gw.vendors) {
    for (const r of v.routes) {
      if (r.kind === 'async') {
        add('POST', r.path, 'tenant', examplesOf(specOf(gw, r.vendor, r.id)), { taskInfoShape: r.validationShape === 'task_info' });
        add('GET', `${r.path}/${f.tasks.get(r.key)}`, 'tenant');
        add('GET', `${r.path}/${UNKNOWN}`, 'tenant');
        add('POST', `${r.path}/${f.tasks.get(r.key)}/cancel`, 'tenant');
        add('POST', `${r.path}/${UNKNOWN}/cancel`, 'tenant');
      } else if (r.kind === 'status') {
        const task = [...r.tasksOf].map((k) => f.tasks.get(k)).find(Boolean) ?? UNKNOWN;
        add('GET', `${r.path}/${task}`, 'tenant');
      } else {
        const bodies = r.method === 'POST' ? examplesOf(specOf(gw, r.vendor, r.id)) : [];
        for (const path of [r.path, ...r.aliases]) add(r.method, path, 'tenant', bodies);
      }
    }
  }

  // The admin API.
  const t = `/admin/v1/tenants/${f.tenantId}`;
  const victim = `/admin/v1/tenants/${f.victimId}`;
  add('GET', '/admin/v1/tenants', 'admin');
  add('POST', '/admin/v1/tenants', 'admin', [{ name: 'fuzz tenant' }, { name: 'live only', requires_live: true }]);
  add('GET', t, 'admin');
  add('PATCH', victim, 'admin', [{ disabled: false }]);
  add('GET', `/admin/v1/tenants/${UNKNOWN}`, 'admin');
  add('GET', `${t}/keys`, 'admin');
  add('POST', `${t}/keys`, 'admin', [{ name: 'k', scopes: ['*'], mode: 'test', ttl_seconds: 3600 }, { scopes: ['provider_b:read'], expires_at: '2099-01-01T00:00:00Z' }]);
  add('DELETE', `/admin/v1/keys/${f.victimKeyId}`, 'admin');
  add('GET', `${t}/wallet`, 'admin');
  add('GET', `${t}/wallet/ledger?limit=5`, 'admin');
  add('POST', `${t}/wallet/topups`, 'admin', [{ credits: '10.000', note: 'fuzz' }, { credits: '0.001', ref: 'fuzz-ref', note: 'n' }]);
  add('POST', `${victim}/wallet/adjustments`, 'admin', [{ credits: '-1.5', note: 'fuzz' }, { credits: '2', ref: 'adj', note: 'n' }]);
  add('PUT', `${victim}/wallet/threshold`, 'admin', [{ credits: '100.00' }, { credits: null }]);
  add('GET', `${victim}/limits`, 'admin');
  add('PUT', `${victim}/limits`, 'admin', [{ rate: { key: { per_second: 1000, per_minute: null } }, concurrent_tasks: 50, daily_spend_credits: '1000.00' }, { concurrent_tasks: null }]);
  const hooks = (base: string, auth: Auth, endpointId: string) => {
    add('GET', `${base}/webhooks/endpoints`, auth);
    add('POST', `${base}/webhooks/endpoints`, auth, [{ url: HOOK_URL, events: ['task.succeeded', 'task.failed'], description: 'fuzz' }, { url: HOOK_URL, events: ['balance.low'] }]);
    add('GET', `${base}/webhooks/endpoints/${endpointId}`, auth);
    add('PATCH', `${base}/webhooks/endpoints/${endpointId}`, auth, [{ description: 'renamed' }, { enabled: true, events: ['task.created'] }]);
    add('POST', `${base}/webhooks/endpoints/${endpointId}/rotate-secret`, auth);
    add('POST', `${base}/webhooks/endpoints/${endpointId}/test`, auth);
    add('GET', `${base}/webhooks/endpoints/${endpointId}/deliveries?limit=10`, auth);
    add('GET', `${base}/webhooks/deliveries/${f.deliveryId}`, auth);
    add('POST', `${base}/webhooks/deliveries/${f.deliveryId}/resend`, auth);
    add('GET', `${base}/events/${f.eventId}/deliveries`, auth);
  };
  hooks(t, 'admin', f.endpointId);
  add('DELETE', `${victim}/webhooks/endpoints/${f.victimEndpointId}`, 'admin');

  // Tenant routes.
  add('GET', '/v1/balance', 'tenant');
  add('GET', '/v1/ledger?limit=3', 'tenant');
  add('GET', '/v1/ledger?type=hold&format=csv', 'tenant');
  add('GET', '/v1/keys', 'tenant');
  add('POST', '/v1/keys', 'tenant', [{ name: 'fuzz key' }, { name: 'narrow', scopes: ['provider_b:read'], expires_at: '2099-01-01T00:00:00Z' }]);
  add('DELETE', `/v1/keys/${f.victimKeyId}`, 'tenant');
  add('GET', '/v1/tasks?limit=5&status=completed', 'tenant');
  add('GET', `/v1/tasks/${[...f.tasks.values()][0] ?? UNKNOWN}`, 'tenant');
  add('GET', '/v1/usage?from=2026-01-01&to=2026-12-31', 'tenant');
  hooks('/v1', 'tenant', f.endpointId);

  // Docs and health.
  for (const p of ['/healthz', '/readyz', '/openapi.json', '/docs', '/docs/', '/docs/init.js', '/docs/assets/swagger-ui.css', '/docs/assets/nope.js']) add('GET', p, 'none');
  add('GET', '/no/such/route', 'none');
  return out;
}
