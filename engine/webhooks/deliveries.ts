// The delivery log as the tenant's console reads it: per endpoint, per event, one delivery
// with its attempts, and the manual re-send. Deliveries of an unknown event id list as empty
// (the log cannot tell "no subscriber" from "no such event").
import { GatewayError } from '../errors/gateway-error.ts';
import type { WebhookDispatcher } from './dispatcher.ts';
import type { Page, PageRequest, WebhookStore } from './store.ts';
import { deliveryDetailView, deliveryView, type DeliveryDetailView, type DeliveryView } from './views.ts';

export interface DeliveryServiceOptions {
  store: WebhookStore;
  dispatcher: WebhookDispatcher;
}

export class WebhookDeliveries {
  private readonly store: WebhookStore;
  private readonly dispatcher: WebhookDispatcher;

  constructor(opts: DeliveryServiceOptions) {
    this.store = opts.store;
    this.dispatcher = opts.dispatcher;
  }

  async listForEndpoint(tenantId: string, endpointId: string, page: PageRequest): Promise<Page<DeliveryView>> {
    if (!(await this.store.getEndpoint(tenantId, endpointId))) throw new GatewayError('resourceNotFound', `No webhook endpoint ${endpointId}.`);
    return viewPage(await this.store.listDeliveriesByEndpoint(tenantId, endpointId, page));
  }

  async listForEvent(tenantId: string, eventId: string, page: PageRequest): Promise<Page<DeliveryView>> {
    return viewPage(await this.store.listDeliveriesByEvent(tenantId, eventId, page));
  }

  async get(tenantId: string, deliveryId: string): Promise<DeliveryDetailView> {
    const d = await this.store.getDelivery(deliveryId);
    if (!d || d.tenant_id !== tenantId) throw new GatewayError('resourceNotFound', `No webhook delivery ${deliveryId}.`);
    return deliveryDetailView(d, await this.store.listAttempts(deliveryId));
  }

  async resend(tenantId: string, deliveryId: string): Promise<DeliveryView> {
    return deliveryView(await this.dispatcher.resend(tenantId, deliveryId));
  }
}

function viewPage(page: Page<Parameters<typeof deliveryView>[0]>): Page<DeliveryView> {
  return { data: page.data.map(deliveryView), has_more: page.has_more };
}
