// The console's "send test event": a synthetic `task.succeeded` whose id starts `evt_test_`,
// shaped exactly like a real one (a completed image task of model D), so a receiver can be
// exercised end to end before real traffic. It is delivered to the one endpoint asked for,
// whether or not that endpoint subscribes to task.succeeded (testing is the point), and is
// never published on the event bus, so nothing else (billing, other endpoints) sees it.
import type { GatewayEvent } from '../events/bus.ts';
import { isoNow, type Clock } from '../util/clock.ts';
import { newUuid, prefixedId } from '../util/ids.ts';

export const TEST_EVENT_PREFIX = 'evt_test_';

export function buildTestEvent(tenantId: string, clock: Clock): GatewayEvent {
  const now = clock.now();
  const created = new Date(now - 12_000).toISOString();
  const taskId = newUuid();
  return {
    id: prefixedId(TEST_EVENT_PREFIX),
    type: 'task.succeeded',
    created_at: isoNow(clock),
    tenant_id: tenantId,
    data: {
      vendor: 'provider_d',
      model_name: 'model_d',
      payload: {
        task_info: { id: taskId, status: 'completed', created_at: created, updated_at: new Date(now).toISOString() },
        images: [`https://results.example.com/test/${taskId}/0.png`, `https://results.example.com/test/${taskId}/1.png`],
      },
    },
  };
}
