// What clients see of the stored records: never tenant ids or full secrets.
import type { AttemptRecord, DeliveryRecord, EndpointRecord } from './store.ts';

export type EndpointView = Omit<EndpointRecord, 'tenant_id' | 'secret'>;
/** Only create and rotate-secret return this: the one time the full secret is shown. */
export type EndpointWithSecret = EndpointView & { secret: string };
export type DeliveryView = Omit<DeliveryRecord, 'tenant_id' | 'body'>;
export type AttemptView = Omit<AttemptRecord, 'delivery_id'>;
export type DeliveryDetailView = DeliveryView & { payload: unknown; attempts: AttemptView[] };

export function endpointView(e: EndpointRecord): EndpointView {
  const { tenant_id: _t, secret: _s, ...view } = e;
  return view;
}

export function endpointWithSecret(e: EndpointRecord): EndpointWithSecret {
  return { ...endpointView(e), secret: e.secret };
}

export function deliveryView(d: DeliveryRecord): DeliveryView {
  const { tenant_id: _t, body: _b, ...view } = d;
  return view;
}

export function deliveryDetailView(d: DeliveryRecord, attempts: AttemptRecord[]): DeliveryDetailView {
  return {
    ...deliveryView(d),
    payload: JSON.parse(d.body),
    attempts: attempts.map(({ delivery_id: _d, ...a }) => a),
  };
}
