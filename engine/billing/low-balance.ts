// balance.low (spec "Billing event balance.low"):
//  - checked after a SETTLEMENT (task settle, synchronous charge), never after a hold;
//  - edge-triggered: NORMAL -> ALERTED when the available balance (balance - held) is below the
//    tenant's threshold after the settlement; the event fires at once, whatever the throttle;
//  - while ALERTED (no recovery), further settlements stay silent unless the last event is at
//    least `throttleMs` old (default 24 h): then one reminder fires and the window restarts;
//  - recovery: any credit (top-up, adjustment, release of a hold) or settlement that leaves the
//    available balance at/above the threshold moves the wallet back to NORMAL, so the next drop
//    alerts at once;
//  - no active endpoint subscribes to balance.low -> no event AND the edge is not consumed: the
//    wallet stays NORMAL, so once an endpoint subscribes the next settlement while low alerts.
// The state transition is one atomic port call (WalletStore.lowBalance); the event is emitted
// after it. A failing subscriber lookup counts as "not subscribed" (edge kept for the next
// settlement); a failing emit is reported through onError (the settlement itself stands).
import type { EventBus, GatewayEvent } from '../events/bus.ts';
import { systemClock, type Clock } from '../util/clock.ts';
import { BILLING_DEFAULTS } from './config.ts';
import { creditsToMilli, formatCredits, type Milli } from '../util/money.ts';
import type { LowBalanceDecision, WalletRecord, WalletStore } from './store.ts';

export type HasSubscriber = (tenantId: string, type: 'balance.low') => Promise<boolean>;

export interface LowBalanceOptions {
  store: WalletStore;
  bus: Pick<EventBus, 'emit'>;
  hasSubscriber: HasSubscriber;
  clock?: Clock;
  /** Default threshold in milli-credits (config billing.low_balance.threshold_credits; default 1000.00 credits). */
  defaultThreshold?: Milli;
  /** Throttle window in ms (config billing.low_balance.throttle_seconds; default 24 h). */
  throttleMs?: number;
  onError?: (err: unknown, tenantId: string) => void;
}

export interface LowBalanceOutcome extends LowBalanceDecision {
  event?: GatewayEvent;
}

export class LowBalanceMonitor {
  readonly defaultThreshold: Milli;
  readonly throttleMs: number;
  private readonly store: WalletStore;
  private readonly bus: Pick<EventBus, 'emit'>;
  private readonly hasSubscriber: HasSubscriber;
  private readonly clock: Clock;
  private readonly onError: (err: unknown, tenantId: string) => void;

  constructor(opts: LowBalanceOptions) {
    this.store = opts.store;
    this.bus = opts.bus;
    this.hasSubscriber = opts.hasSubscriber;
    this.clock = opts.clock ?? systemClock;
    this.defaultThreshold = opts.defaultThreshold ?? creditsToMilli(BILLING_DEFAULTS.threshold_credits);
    this.throttleMs = opts.throttleMs ?? BILLING_DEFAULTS.throttle_seconds * 1000;
    this.onError = opts.onError ?? (() => {});
  }

  /**
   * After funds were settled: may alert. `settled` is the wallet as the settlement left it (the
   * store's answer), which saves reading it again.
   */
  async afterSettlement(tenantId: string, settled?: WalletRecord): Promise<LowBalanceOutcome> {
    const now = this.clock.now();
    const w = settled ?? (await this.store.get(tenantId));
    const threshold = w.threshold ?? this.defaultThreshold;
    if (!this.mayAlert(w)) {
      return { alert: false, state: 'NORMAL', recovered: false, available: w.balance - w.held, threshold };
    }
    const couldAlert =
      w.balance - w.held < threshold &&
      (w.alertState === 'NORMAL' || w.lastAlertAt === null || now - w.lastAlertAt >= this.throttleMs);
    let subscribed = false;
    if (couldAlert) {
      try {
        subscribed = await this.hasSubscriber(tenantId, 'balance.low');
      } catch (err) {
        this.onError(err, tenantId);
      }
    }
    const decision = await this.store.lowBalance(tenantId, {
      trigger: 'settlement',
      subscribed,
      defaultThreshold: this.defaultThreshold,
      now,
      throttleMs: this.throttleMs,
    });
    if (!decision.alert) return decision;
    try {
      const event = await this.bus.emit(tenantId, 'balance.low', lowBalanceData(tenantId, decision.available, decision.threshold));
      return { ...decision, event };
    } catch (err) {
      this.onError(err, tenantId);
      return decision;
    }
  }

  /**
   * Whether a settlement that left the wallet as `w` has anything to decide: not when it is well
   * funded and not alerted (the common case; a settlement racing this one that does cross the
   * threshold decides on its own fresher read). Callers on a chat's path ask first, so that the
   * common case costs no call and no turn of afterSettlement's.
   */
  mayAlert(w: WalletRecord): boolean {
    return w.balance - w.held < (w.threshold ?? this.defaultThreshold) || w.alertState !== 'NORMAL';
  }

  /** After funds were credited or released: may only recover (ALERTED -> NORMAL). */
  async afterCredit(tenantId: string): Promise<LowBalanceDecision> {
    return this.store.lowBalance(tenantId, {
      trigger: 'credit',
      subscribed: false,
      defaultThreshold: this.defaultThreshold,
      now: this.clock.now(),
      throttleMs: this.throttleMs,
    });
  }
}

/** The spec's `data` of balance.low. */
export function lowBalanceData(tenantId: string, available: Milli, threshold: Milli): Record<string, unknown> {
  return {
    user_id: tenantId,
    payload: {
      available_balance: formatCredits(available),
      trigger_threshold: formatCredits(threshold),
      currency: 'credits',
    },
  };
}
