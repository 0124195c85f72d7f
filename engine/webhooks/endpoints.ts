// The tenant's webhook endpoints (spec "Webhook endpoint"): at most `max_endpoints` (5) per
// tenant, HTTPS URLs to public addresses only, a signing secret shown in full only on create
// and on rotate.
//
// Record fields (see store.ts): id `we_` + 24 base62; url; events; description (null when
// absent); enabled; disabled_reason (null | disabled_by_user | endpoint_gone); secret_preview
// `whsec_...` + last 4; created_at, updated_at (ISO 8601). The full secret is `whsec_` + 32
// base62 characters (~190 bits) from the OS CSPRNG. Rotation replaces it at once: the old
// secret stops verifying with the next attempt (no overlap window).
import { GatewayError } from '../errors/gateway-error.ts';
import { isoNow, type Clock } from '../util/clock.ts';
import { prefixedId, randomBase62 } from '../util/ids.ts';
import type { GatewayEvent } from '../events/bus.ts';
import type { EventType } from '../events/types.ts';
import type { WebhookConfig } from './config.ts';
import type { WebhookDispatcher } from './dispatcher.ts';
import { AddressPolicy, destinationRefusal, systemResolver, type HostResolver } from './ssrf.ts';
import type { EndpointPatch, EndpointRecord, WebhookStore } from './store.ts';
import { fail, parseEndpointInput } from './validation.ts';
import { deliveryView, endpointView, endpointWithSecret, type DeliveryView, type EndpointView, type EndpointWithSecret } from './views.ts';

export const SECRET_PREFIX = 'whsec_';

export interface EndpointServiceOptions {
  store: WebhookStore;
  clock: Clock;
  config: WebhookConfig;
  dispatcher: WebhookDispatcher;
  /** DNS for the save-time SSRF check; defaults to the system resolver. */
  resolveHost?: HostResolver;
}

export class WebhookEndpoints {
  private readonly store: WebhookStore;
  private readonly clock: Clock;
  private readonly config: WebhookConfig;
  private readonly dispatcher: WebhookDispatcher;
  private readonly resolveHost: HostResolver;
  private readonly policy: AddressPolicy;

  constructor(opts: EndpointServiceOptions) {
    this.store = opts.store;
    this.clock = opts.clock;
    this.config = opts.config;
    this.dispatcher = opts.dispatcher;
    this.resolveHost = opts.resolveHost ?? systemResolver;
    this.policy = AddressPolicy.fromCidrs(opts.config.allow_private_cidrs);
  }

  async create(tenantId: string, input: unknown): Promise<EndpointWithSecret> {
    const fields = parseEndpointInput(input, 'create');
    await this.checkDestination(fields.url!);
    const now = isoNow(this.clock);
    const secret = newSecret();
    const enabled = fields.enabled ?? true;
    const record: EndpointRecord = {
      id: prefixedId('we_'),
      tenant_id: tenantId,
      url: fields.url!,
      events: fields.events!,
      description: fields.description ?? null,
      enabled,
      disabled_reason: enabled ? null : 'disabled_by_user',
      secret,
      secret_preview: preview(secret),
      created_at: now,
      updated_at: now,
    };
    const max = this.config.max_endpoints;
    if (!(await this.store.createEndpointIfUnderLimit(record, max))) {
      throw fail([{ pointer: '', detail: `At most ${max} webhook endpoints per tenant; delete one first.`, code: 2003 }]);
    }
    return endpointWithSecret(record);
  }

  async list(tenantId: string): Promise<EndpointView[]> {
    return (await this.store.listEndpoints(tenantId)).map(endpointView);
  }

  /** True when the tenant has an enabled endpoint subscribed to `type` (balance.low fires only then). */
  async hasSubscriber(tenantId: string, type: EventType): Promise<boolean> {
    return (await this.store.listEndpoints(tenantId)).some((e) => e.enabled && e.events.includes(type));
  }

  async get(tenantId: string, id: string): Promise<EndpointView> {
    return endpointView(await this.record(tenantId, id));
  }

  async update(tenantId: string, id: string, input: unknown): Promise<EndpointView> {
    const fields = parseEndpointInput(input, 'update');
    await this.record(tenantId, id); // 404 before a (slow) DNS check
    if (fields.url !== undefined) await this.checkDestination(fields.url);
    const patch: EndpointPatch = { ...fields, updated_at: isoNow(this.clock) };
    if (fields.enabled !== undefined) patch.disabled_reason = fields.enabled ? null : 'disabled_by_user';
    const updated = await this.store.updateEndpoint(tenantId, id, patch);
    if (!updated) throw notFound(id);
    return endpointView(updated);
  }

  async delete(tenantId: string, id: string): Promise<void> {
    if (!(await this.store.deleteEndpoint(tenantId, id))) throw notFound(id);
  }

  async rotateSecret(tenantId: string, id: string): Promise<EndpointWithSecret> {
    const secret = newSecret();
    const updated = await this.store.updateEndpoint(tenantId, id, { secret, secret_preview: preview(secret), updated_at: isoNow(this.clock) });
    if (!updated) throw notFound(id);
    return endpointWithSecret(updated);
  }

  /** See test-event.ts: delivered to this endpoint even if it does not subscribe to task.succeeded. */
  async sendTestEvent(tenantId: string, id: string): Promise<{ event: Omit<GatewayEvent, 'tenant_id'>; delivery: DeliveryView }> {
    const endpoint = await this.record(tenantId, id);
    const { event, delivery } = await this.dispatcher.sendTestEvent(endpoint);
    const { tenant_id: _t, ...envelope } = event;
    return { event: envelope, delivery: deliveryView(delivery) };
  }

  private async record(tenantId: string, id: string): Promise<EndpointRecord> {
    const e = await this.store.getEndpoint(tenantId, id);
    if (!e) throw notFound(id);
    return e;
  }

  private async checkDestination(url: string): Promise<void> {
    const why = await destinationRefusal(new URL(url), this.policy, this.resolveHost);
    if (why) throw fail([{ pointer: '/url', detail: `url cannot be used as a webhook destination: ${why}.`, code: 2003 }]);
  }
}

function newSecret(): string {
  return `${SECRET_PREFIX}${randomBase62(32)}`;
}

function preview(secret: string): string {
  return `${SECRET_PREFIX}...${secret.slice(-4)}`;
}

function notFound(id: string): GatewayError {
  return new GatewayError('resourceNotFound', `No webhook endpoint ${id}.`);
}
