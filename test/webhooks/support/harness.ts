// Wires the webhooks part the way the app does (memory store, memory scheduler, event bus,
// Piscina pool) with test config, and offers a polling wait instead of fixed sleeps.
import { EventBus } from '../../../engine/events/bus.ts';
import { MemoryJobScheduler } from '../../../engine/store/memory/job-scheduler.ts';
import { systemClock, type Clock } from '../../../engine/util/clock.ts';
import { MemoryWebhookStore } from '../../../engine/store/memory/webhooks.ts';
import { resolveWebhookConfig } from '../../../engine/webhooks/config.ts';
import { createWebhooks, type Webhooks } from '../../../engine/webhooks/service.ts';
import type { SendPool } from '../../../engine/webhooks/pool.ts';
import type { HostResolver } from '../../../engine/webhooks/ssrf.ts';
import type { WebhookLogger } from '../../../engine/webhooks/dispatcher.ts';
import type { DeliveryStats } from '../../../engine/webhooks/store.ts';
import { testPki } from './pki.ts';

/** The memory scheduler, recording every schedule() call so tests can read the offsets. */
export class RecordingScheduler extends MemoryJobScheduler {
  readonly scheduled: Array<{ queue: string; jobId: string; payload: Record<string, unknown>; delayMs: number }> = [];
  override async schedule(queue: string, jobId: string, payload: Record<string, unknown>, delayMs: number): Promise<void> {
    this.scheduled.push({ queue, jobId, payload, delayMs });
    return super.schedule(queue, jobId, payload, delayMs);
  }
}

export interface Harness extends Webhooks {
  store: MemoryWebhookStore;
  scheduler: RecordingScheduler;
  bus: EventBus;
  clock: Clock;
  jobErrors: unknown[];
  logs: Array<{ level: string; obj: object; msg?: string }>;
  shutdown(): Promise<void>;
}

export interface HarnessOptions {
  config?: Record<string, unknown>;
  clock?: Clock;
  pool?: SendPool;
  resolveHost?: HostResolver;
}

/** Defaults: trusts the test CA, allows 127.0.0.1 (the receivers), real worker threads. */
export function harness(opts: HarnessOptions = {}): Harness {
  const clock = opts.clock ?? systemClock;
  const jobErrors: unknown[] = [];
  const logs: Harness['logs'] = [];
  const logger: WebhookLogger = {
    info: (obj, msg) => logs.push({ level: 'info', obj, msg }),
    warn: (obj, msg) => logs.push({ level: 'warn', obj, msg }),
    error: (obj, msg) => logs.push({ level: 'error', obj, msg }),
  };
  const store = new MemoryWebhookStore();
  const scheduler = new RecordingScheduler((_q, _id, err) => jobErrors.push(err));
  const bus = new EventBus(clock);
  const config = resolveWebhookConfig({ ca_pem: [testPki().caPem], allow_private_cidrs: ['127.0.0.1/32'], ...opts.config });
  const webhooks = createWebhooks({ store, scheduler, clock, config, pool: opts.pool, logger, resolveHost: opts.resolveHost });
  webhooks.attach(bus);
  return {
    ...webhooks,
    store,
    scheduler,
    bus,
    clock,
    jobErrors,
    logs,
    async shutdown() {
      await scheduler.close();
      await webhooks.close();
    },
  };
}

/** Deliveries created = succeeded + failed + pending (+ purged by retention), for one endpoint. */
export async function expectLedgerBalanced(h: Harness, endpointId: string): Promise<DeliveryStats> {
  const s = await h.store.deliveryStats(endpointId);
  if (s.created !== s.succeeded + s.failed + s.pending + s.purged) throw new Error(`ledger out of balance: ${JSON.stringify(s)}`);
  return s;
}

export { waitFor } from '../../helpers/wait.ts';

/** A pool that answers without the network, for tests about bookkeeping rather than HTTP. */
export function stubPool(answer: () => { ok: boolean; status_code: number | null; error: string | null } = () => ({ ok: true, status_code: 200, error: null })): SendPool & { calls: number } {
  const pool = {
    calls: 0,
    async ready() {},
    async run(task: { clockOffsetMs: number }) {
      pool.calls += 1;
      return { ...answer(), started_at: Date.now() + task.clockOffsetMs, latency_ms: 1 };
    },
    async destroy() {},
  };
  return pool;
}

export const TENANT = '0b1e2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d';

export const taskData = (status: 'pending' | 'completed' | 'failed', extra: Record<string, unknown> = {}) => ({
  vendor: 'provider_a',
  model_name: 'model_a',
  payload: {
    task_info: {
      id: '7d444840-9dc0-11d1-b245-5ffdce74fad2',
      status,
      created_at: '2026-01-01T00:00:00.000Z',
      updated_at: '2026-01-01T00:00:05.000Z',
      ...(status === 'failed' ? { error: { code: 3005, title: 'Upstream Service Execution Failed', detail: 'content filtered' } } : {}),
    },
    ...extra,
  },
});
