// The engine's event bus: services publish domain events (task.*, balance.low); subscribers
// (the webhook dispatcher) turn them into durable work. Publishing awaits every subscriber, so
// once publish() returns, whatever they stored is stored: durability lives in the stores the
// subscribers write to, not in the bus.
import { prefixedId } from '../util/ids.ts';
import { isoNow, type Clock } from '../util/clock.ts';
import type { EventType } from './types.ts';

/** The envelope of the spec ("Events"), plus the owning tenant (never sent to receivers). */
export interface GatewayEvent {
  id: string; // evt_...
  type: EventType;
  created_at: string;
  data: Record<string, unknown>;
  tenant_id: string;
  /** The trace the event belongs to (a task's creating request), never sent: its webhook attempts join it. */
  traceparent?: string;
}

export type EventHandler = (event: GatewayEvent) => Promise<void> | void;

export class EventBus {
  private readonly handlers: EventHandler[] = [];
  private readonly clock: Clock;
  constructor(clock: Clock) {
    this.clock = clock;
  }

  subscribe(handler: EventHandler): void {
    this.handlers.push(handler);
  }

  /**
   * Build an envelope (created_at now; a random evt_ id unless the caller derives one, so that
   * publishing the same fact twice is recognised downstream) and publish it.
   */
  async emit(tenantId: string, type: EventType, data: Record<string, unknown>, opts: { id?: string; traceparent?: string } = {}): Promise<GatewayEvent> {
    const event: GatewayEvent = { id: opts.id ?? prefixedId('evt_'), type, created_at: isoNow(this.clock), data, tenant_id: tenantId };
    if (opts.traceparent) event.traceparent = opts.traceparent;
    await this.publish(event);
    return event;
  }

  async publish(event: GatewayEvent): Promise<void> {
    for (const h of this.handlers) await h(event);
  }
}
