// Shared set-up for billing tests: a memory wallet store, a manual clock, a recording bus, and
// an afterEach-style invariant check over every wallet the test touched.
import { expect } from 'chai';
import { BillingService } from '../../engine/billing/service.ts';
import type { SpendGuard } from '../../engine/limits/service.ts';
import { LowBalanceMonitor } from '../../engine/billing/low-balance.ts';
import { checkLedger } from '../../engine/billing/invariant.ts';
import { MemoryWalletStore } from '../../engine/store/memory/wallets.ts';
import { EventBus, type GatewayEvent } from '../../engine/events/bus.ts';
import { ManualClock } from '../../engine/util/clock.ts';

export interface Rig {
  store: MemoryWalletStore;
  clock: ManualClock;
  bus: EventBus;
  events: GatewayEvent[];
  subscribed: Set<string>;
  monitor: LowBalanceMonitor;
  billing: BillingService;
}

export function rig(opts: { spend?: SpendGuard; throttleMs?: number; threshold?: number } = {}): Rig {
  const store = new MemoryWalletStore();
  const clock = new ManualClock();
  const bus = new EventBus(clock);
  const events: GatewayEvent[] = [];
  bus.subscribe((e) => {
    events.push(e);
  });
  const subscribed = new Set<string>();
  const monitor = new LowBalanceMonitor({
    store,
    bus,
    clock,
    hasSubscriber: async (tenantId) => subscribed.has(tenantId),
    ...(opts.threshold === undefined ? {} : { defaultThreshold: opts.threshold }),
    ...(opts.throttleMs === undefined ? {} : { throttleMs: opts.throttleMs }),
  });
  const billing = new BillingService({ store, clock, lowBalance: monitor, ...(opts.spend ? { spend: opts.spend } : {}) });
  return { store, clock, bus, events, subscribed, monitor, billing };
}

/** Every wallet in the store replays to its cached numbers and hold records. */
export async function expectLedgersConsistent(store: MemoryWalletStore): Promise<void> {
  for (const tenant of store.tenants()) {
    const report = checkLedger(await store.snapshot(tenant));
    expect(report.violations, `ledger of ${tenant}`).to.deep.equal([]);
  }
}

export const credits = (n: number): number => n * 1000;
