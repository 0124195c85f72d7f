// BillingService: the tenant wallet. Every money movement is one atomic WalletStore call; this
// class validates amounts, turns outcomes into GatewayErrors, and runs the after-effects
// (daily-spend accounting, balance.low) once the movement is recorded.
//
// Async tasks:   hold(tenant, taskId, plan.hold(req))  at creation      -> 1003 (402) if not enough, no hold written
//                settle(tenant, taskId, plan.settle(req, result))  on success (min(actual, held); rest released)
//                release(tenant, taskId)                on failure / timeout (nothing billed)
//   settle and release are exactly-once per ref: whichever comes first closes the hold; any later
//   settle/release of that ref is a no-op returning the first outcome (duplicate: true).
// Requests (chat):  holdUpTo(tenant, ref, largest possible charge) before the upstream call: up to
//                what is available (1003 (402) when nothing is), then settleUsage(tenant, ref,
//                cost) after it: the hold settled, its rest released, usage beyond it charged
//                as `<ref>+` (may take the balance below zero; the next request is refused
//                until a top-up). charge() is that last step: hold + settle in one, once per ref.
import { GatewayError } from '../errors/gateway-error.ts';
import { creditsMoved, fundsRefusals } from '../metrics/metrics.ts';
import { isoNow, systemClock, type Clock } from '../util/clock.ts';
import { BILLING_DEFAULTS } from './config.ts';
import { checkLedger, type InvariantReport } from './invariant.ts';
import type { LowBalanceMonitor } from './low-balance.ts';
import { assertMilli, creditsToMilli, formatCredits, MoneyError, type Milli } from '../util/money.ts';
import type { SpendGuard } from '../limits/service.ts';
import type { AlertState, CloseResult, HoldOptions, HoldRecord, LedgerEntry, LedgerLines, SettleOptions, WalletStore } from './store.ts';

export interface BillingServiceOptions {
  store: WalletStore;
  /** Where ledger pages are read: the archive reading across the store and its segments (default: the store alone). */
  ledger?: LedgerLines;
  clock?: Clock;
  /** balance.low; without it no event is ever emitted. */
  lowBalance?: LowBalanceMonitor;
  /** Daily spend limit; without it spend is not limited. */
  spend?: SpendGuard;
  /** Threshold shown by getWallet when no monitor is given (milli; default 1000.00 credits). */
  defaultThreshold?: Milli;
}

export interface WalletView {
  tenantId: string;
  balance: Milli;
  held: Milli;
  available: Milli;
  state: AlertState;
  /** The effective balance.low threshold (the tenant's override or the default). */
  threshold: Milli;
}

export interface HoldOutcome {
  ref: string;
  amount: Milli;
  /** True when a hold for this ref already existed (it is returned, nothing new is held). */
  duplicate: boolean;
  /** False when that hold is already settled or released (it holds nothing any more). */
  open: boolean;
}

export interface CloseOutcome {
  ref: string;
  /** 'unknown': no hold has this ref (nothing was moved). */
  status: 'settled' | 'released' | 'open' | 'unknown';
  held: Milli;
  settled: Milli;
  released: Milli;
  /** True when this call did nothing because the ref was already closed; the first outcome is returned. */
  duplicate: boolean;
}

export interface LedgerQuery {
  /** 1..200, default 50. */
  limit?: number;
  /** `next_cursor` of the previous page. */
  cursor?: string | null;
}

export interface LedgerListing {
  entries: LedgerEntry[];
  next_cursor: string | null;
}

export class BillingService {
  private readonly store: WalletStore;
  private readonly ledger: LedgerLines;
  private readonly clock: Clock;
  private readonly lowBalance: LowBalanceMonitor | undefined;
  private readonly spend: SpendGuard | undefined;
  private readonly defaultThreshold: Milli;

  constructor(opts: BillingServiceOptions) {
    this.store = opts.store;
    this.ledger = opts.ledger ?? opts.store;
    this.clock = opts.clock ?? systemClock;
    this.lowBalance = opts.lowBalance;
    this.spend = opts.spend;
    this.defaultThreshold =
      opts.lowBalance?.defaultThreshold ?? opts.defaultThreshold ?? creditsToMilli(BILLING_DEFAULTS.threshold_credits);
  }

  /** Credit a top-up (milli > 0). Idempotent per ref (a payment id): a repeat returns the first entry. */
  async topUp(tenantId: string, milli: Milli, ref: string, note = ''): Promise<LedgerEntry> {
    assertMilli(milli, 'top-up');
    if (milli <= 0) throw new MoneyError(`a top-up must be positive, got ${milli}`);
    const r = await this.store.credit(tenantId, 'topup', ref, milli, note, this.now());
    if (r.status === 'credited') {
      countCredits('topped_up', milli);
      await this.lowBalance?.afterCredit(tenantId);
    }
    return r.entry;
  }

  /** An operator correction (milli != 0, may be negative). Idempotent per ref. */
  async adjust(tenantId: string, milli: Milli, ref: string, note = ''): Promise<LedgerEntry> {
    assertMilli(milli, 'adjustment');
    if (milli === 0) throw new MoneyError('an adjustment must not be zero');
    const r = await this.store.credit(tenantId, 'adjustment', ref, milli, note, this.now());
    if (r.status === 'credited') await this.lowBalance?.afterCredit(tenantId);
    return r.entry;
  }

  /**
   * Hold `milli` for `ref` (a task id). Throws 1005 when the daily spend limit would be passed,
   * 1003 (402) when the available balance is less than `milli` — in both cases nothing is held.
   * A second hold for the same ref returns the first (duplicate: true) and holds nothing more.
   * `spendReserved`: the caller has reserved the spend of `ref` with this service's spend guard
   * already (a task: LimitsService.acquireTask with its hold's amount, one store step with its
   * slot); it is not reserved again, and is still cancelled when the hold is refused.
   */
  async hold(tenantId: string, ref: string, milli: Milli, note = '', opts?: { spendReserved?: boolean }): Promise<HoldOutcome> {
    assertMilli(milli, 'hold', { nonNegative: true });
    if (!opts?.spendReserved) await this.spend?.reserveSpend(tenantId, ref, milli);
    const r = await this.store.hold(tenantId, ref, milli, note, this.now());
    if (r.status === 'insufficient') {
      fundsRefusals.inc();
      await this.spend?.cancelSpend(tenantId, ref);
      const available = r.wallet.balance - r.wallet.held;
      throw new GatewayError(
        'insufficientBalance',
        `Insufficient balance: this request needs ${formatCredits(milli, 'up')} credits and ${formatCredits(Math.max(available, 0))} are available.`,
      );
    }
    const hold = r.hold as HoldRecord;
    if (r.status !== 'duplicate') countCredits('held', hold.amount);
    return { ref, amount: hold.amount, duplicate: r.status === 'duplicate', open: hold.state === 'open' };
  }

  /**
   * Settle min(actualMilli, held) of the hold `ref` and release the rest. Exactly once per ref.
   * `spendByCaller`: the caller closes the ref's spend reservation itself, with the outcome (a
   * task: LimitsService.closeTask, one store step with its slot); else it is finalized here.
   */
  async settle(tenantId: string, ref: string, actualMilli: Milli, note = '', opts?: { spendByCaller?: boolean }): Promise<CloseOutcome> {
    assertMilli(actualMilli, 'settlement', { nonNegative: true });
    const r = await this.store.settle(tenantId, ref, actualMilli, note, this.now());
    return this.afterClose(tenantId, ref, r, opts?.spendByCaller);
  }

  /** Release the hold `ref` (task failed: nothing billed). Exactly once per ref. `spendByCaller`: as settle's. */
  async release(tenantId: string, ref: string, note = '', opts?: { spendByCaller?: boolean }): Promise<CloseOutcome> {
    const r = await this.store.release(tenantId, ref, note, this.now());
    // No such hold: a create withdrawn after its spend was reserved but before its hold was
    // written (the store went away in between) leaves the reservation alone; drop it.
    if (r.status === 'unknown' && !opts?.spendByCaller) await this.spend?.cancelSpend(tenantId, ref);
    return this.afterClose(tenantId, ref, r, opts?.spendByCaller);
  }

  /** Synchronous usage: hold + settle `milli` in one step; may overdraw. Once per ref. */
  async charge(tenantId: string, ref: string, milli: Milli, note = ''): Promise<CloseOutcome> {
    assertMilli(milli, 'charge', { nonNegative: true });
    const r = await this.store.charge(tenantId, ref, milli, note, this.now());
    const hold = r.hold as HoldRecord;
    if (r.status === 'closed') {
      // Only a new charge counts towards today's spend: a repeat is the wallet's duplicate.
      const recorded = this.spend?.recordSpend(tenantId, hold.settled);
      if (recorded) await recorded;
      countCredits('charged', hold.settled);
      if (this.lowBalance?.mayAlert(r.wallet)) await this.lowBalance.afterSettlement(tenantId, r.wallet);
    }
    return outcome(ref, r);
  }

  /**
   * A request's hold before its provider is called (chat): up to `milli` of what is available,
   * once per ref; 1003 (402) when nothing is available. No spend is reserved: the request's
   * spend is recorded when it is settled (settleUsage). Returns the amount held.
   */
  async holdUpTo(tenantId: string, ref: string, milli: Milli, note = ''): Promise<Milli> {
    assertMilli(milli, 'hold', { nonNegative: true });
    const r = await this.store.hold(tenantId, ref, milli, note, this.now(), REQUEST_HOLD);
    if (r.status === 'insufficient') {
      fundsRefusals.inc();
      throw new GatewayError('insufficientBalance', 'Insufficient balance: the wallet has no available credits.');
    }
    // Not taken: the request is refused by its own limits in the same step, whose refusal answers.
    if (r.status === 'withheld') throw new GatewayError('rateLimitExceeded', 'Refused by the request\'s own limits: no hold was taken.');
    const hold = r.hold as HoldRecord;
    if (r.status !== 'duplicate') countCredits('held', hold.amount);
    return hold.amount;
  }

  /**
   * Settle a request's usage (`milli`) against its hold (holdUpTo): the held part is settled and
   * the rest of the hold released; usage beyond what the hold covered is charged as `<ref>+`
   * (post-paid: it may take the balance below zero). Each step is once per ref, so a repeat of
   * the whole call (a retry after the store refused part of it) charges nothing twice.
   */
  async settleUsage(tenantId: string, ref: string, milli: Milli, note = ''): Promise<void> {
    assertMilli(milli, 'settlement', { nonNegative: true });
    const at = this.now();
    // The spend is recorded with the settlement where the store can (SettleOptions), else after it.
    const r = await this.store.settle(tenantId, ref, milli, note, at, this.spend ? spendOn(at) : undefined);
    const hold = r.hold;
    if (r.status === 'closed' && hold) {
      countCredits('settled', hold.settled);
      countCredits('released', hold.released);
      // The memory store records at once: no turn waited for.
      const recorded = r.spendRecorded ? undefined : this.spend?.recordSpend(tenantId, hold.settled);
      if (recorded) await recorded;
      if (this.lowBalance?.mayAlert(r.wallet)) await this.lowBalance.afterSettlement(tenantId, r.wallet);
    }
    // A hold released by someone else (the orphan sweep) covered nothing of this usage.
    const covered = hold?.state === 'settled' ? hold.settled : 0;
    if (milli > covered) await this.charge(tenantId, `${ref}+`, milli - covered, `${note} (beyond the hold)`);
  }

  /** Release a request's hold (holdUpTo) when its exchange served nothing billable. Once per ref. */
  async releaseHold(tenantId: string, ref: string, note = ''): Promise<void> {
    const r = await this.store.release(tenantId, ref, note, this.now());
    if (r.status === 'closed' && r.hold) countCredits('released', r.hold.released);
  }

  async getWallet(tenantId: string): Promise<WalletView> {
    const w = await this.store.get(tenantId);
    return {
      tenantId,
      balance: w.balance,
      held: w.held,
      available: w.balance - w.held,
      state: w.alertState,
      threshold: w.threshold ?? this.defaultThreshold,
    };
  }

  /** Ledger entries, newest first. */
  async listLedger(tenantId: string, query: LedgerQuery = {}): Promise<LedgerListing> {
    const limit = query.limit ?? 50;
    if (!Number.isInteger(limit) || limit < 1 || limit > 200) {
      throw new GatewayError('invalidParameterValue', 'limit must be an integer from 1 to 200.', { errors: [{ pointer: '/query/limit', detail: 'must be 1 to 200' }] });
    }
    let before: number | undefined;
    if (query.cursor !== undefined && query.cursor !== null && query.cursor !== '') {
      if (!/^[1-9]\d{0,15}$/.test(query.cursor)) {
        throw new GatewayError('invalidParameterValue', 'The cursor is not valid.', { errors: [{ pointer: '/query/cursor', detail: 'not a cursor from a previous page' }] });
      }
      before = Number(query.cursor);
    }
    const page = await this.ledger.list(tenantId, limit, before);
    return { entries: page.entries, next_cursor: page.nextBeforeSeq === null ? null : String(page.nextBeforeSeq) };
  }

  /** Set the tenant's balance.low threshold (milli >= 0), or null for the configured default. */
  async setThreshold(tenantId: string, milli: Milli | null): Promise<WalletView> {
    if (milli !== null) assertMilli(milli, 'threshold', { nonNegative: true });
    await this.store.setThreshold(tenantId, milli);
    await this.lowBalance?.afterCredit(tenantId); // a lowered threshold can be a recovery
    return this.getWallet(tenantId);
  }

  /** Holds still open, oldest first. */
  async openHolds(tenantId: string): Promise<HoldRecord[]> {
    return (await this.store.openHolds(tenantId)).sort((a, b) => a.at.localeCompare(b.at));
  }

  /** Replay the ledger against the cached wallet; `ok` with no violations when consistent. */
  async checkInvariant(tenantId: string): Promise<InvariantReport> {
    return checkLedger(await this.store.snapshot(tenantId));
  }

  private async afterClose(tenantId: string, ref: string, r: CloseResult, spendByCaller = false): Promise<CloseOutcome> {
    if (r.status === 'unknown') return outcome(ref, r);
    const hold = r.hold as HoldRecord;
    if (r.status === 'closed') {
      countCredits('settled', hold.settled);
      countCredits('released', hold.released);
    }
    // Also on duplicates: finalizeSpend is idempotent, and repeating it repairs a crash that
    // happened between the wallet settlement and the spend accounting.
    if (!spendByCaller) await this.spend?.finalizeSpend(tenantId, ref, hold.settled);
    if (r.status === 'closed' && this.lowBalance) {
      if (hold.state !== 'settled') await this.lowBalance.afterCredit(tenantId);
      else if (this.lowBalance.mayAlert(r.wallet)) await this.lowBalance.afterSettlement(tenantId, r.wallet);
    }
    return outcome(ref, r);
  }

  private now(): string {
    return isoNow(this.clock);
  }
}

/** A request's hold options (holdUpTo): one object for every chat, never changed. */
const REQUEST_HOLD: HoldOptions = Object.freeze({ upTo: true, newRef: true });

/** The settle options of a spend on the UTC day of `at`: the same object while the day is (a chat settles per request). */
let lastSpend: SettleOptions | undefined;
function spendOn(at: string): SettleOptions {
  if (!lastSpend || !at.startsWith(lastSpend.spendDay!)) lastSpend = Object.freeze({ spendDay: at.slice(0, 10) });
  return lastSpend;
}

/** gateway_billing_credits_total, counted in plain numbers and taken at scrape (engine/metrics). */
function countCredits(operation: keyof typeof creditsMoved, milli: Milli): void {
  if (milli > 0) creditsMoved[operation] += milli;
}

function outcome(ref: string, r: CloseResult): CloseOutcome {
  const h = r.hold;
  if (!h) return { ref, status: 'unknown', held: 0, settled: 0, released: 0, duplicate: false };
  return { ref, status: h.state, held: h.amount, settled: h.settled, released: h.released, duplicate: r.status === 'duplicate' };
}
