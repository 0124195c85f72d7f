// The wallet port. One wallet per tenant, with an append-only ledger. EVERY method is one atomic
// operation on one wallet: the memory adapter runs each method synchronously (no await between
// its read and its write); a Redis adapter implements each as one Lua script on the wallet's
// keys. Services never read-modify-write.
//
// Model (amounts are milli-credits, see engine/util/money.ts):
//   balance   = top-ups + adjustments - settled         (the ledger balance; open holds are still in it)
//   held      = sum of open holds
//   available = balance - held                          (what a new hold may take)
// Invariant after every operation:
//   top-ups + adjustments = available + held + settled
// and balance/held cached on the wallet record equal their ledger-derived values.
//
// Ledger entries (amounts are positive magnitudes; only an adjustment may be negative):
//   topup       +amount to balance                      ref = payment / operator reference (idempotent per ref)
//   adjustment  +/-amount to balance                     ref = operator reference (idempotent per ref)
//   hold        amount moved into held                   ref = task id / request id (one hold per ref)
//   settle      amount leaves held and balance (spent)   ref = the hold's ref
//   release     amount leaves held (back to available)   ref = the hold's ref
// A ref's entries are exactly one of: [hold] (open), [hold, release], [hold, settle] or
// [hold, settle, release] (partial settlement: the remainder is released in the same step).
// A synchronous charge writes [hold, settle] in one step.
import type { Milli } from '../util/money.ts';

export type LedgerKind = 'topup' | 'hold' | 'settle' | 'release' | 'adjustment';

export interface LedgerEntry {
  /** `led_...`, unique. */
  id: string;
  /** Position in this wallet's ledger, 1, 2, 3... (also the page cursor). */
  seq: number;
  /** ISO 8601. */
  at: string;
  kind: LedgerKind;
  amount: Milli;
  ref: string;
  note: string;
}

export type AlertState = 'NORMAL' | 'ALERTED';

export interface WalletRecord {
  tenantId: string;
  balance: Milli;
  held: Milli;
  /** Per-tenant balance.low threshold; null = the configured default. */
  threshold: Milli | null;
  alertState: AlertState;
  /** Epoch ms of the last balance.low emitted, null if none since the wallet was created. */
  lastAlertAt: number | null;
  /** Seq of the last ledger entry. */
  seq: number;
}

export type HoldState = 'open' | 'settled' | 'released';

export interface HoldRecord {
  ref: string;
  amount: Milli;
  state: HoldState;
  settled: Milli;
  released: Milli;
  at: string;
  /** True for a synchronous charge (hold + settle in one step). */
  charge: boolean;
}

export interface HoldOptions {
  /** Hold what is available up to `amount` (a request's reservation before its usage is known). */
  upTo?: boolean;
  /**
   * The caller made `ref` for this hold and never holds it again, not even after a lost answer (a
   * request's own ref: its trace id and the gateway's own span id). A store may then skip looking
   * for it among holds closed a while ago (Redis: one command less a chat); a repeat is still
   * answered 'duplicate' while the hold is open or was closed a moment ago.
   */
  newRef?: boolean;
}

export interface HoldResult {
  /**
   * withheld: not taken, because its request is refused by its own rate counts or day's spend,
   * judged in the same store step (a hold asked in LimitsStore.gate: the request's refusal answers).
   */
  status: 'held' | 'duplicate' | 'insufficient' | 'withheld';
  /** The hold (the first one for a duplicate); absent when insufficient or withheld. */
  hold?: HoldRecord;
  wallet: WalletRecord;
}

export interface CloseResult {
  /** closed: this call settled/released the hold. duplicate: it was already closed (the first outcome is returned). unknown: no hold has this ref. */
  status: 'closed' | 'duplicate' | 'unknown';
  hold?: HoldRecord;
  wallet: WalletRecord;
  /** The settled amount was added to the tenant's daily spend in the same step (SettleOptions.spendDay). */
  spendRecorded?: boolean;
}

export interface SettleOptions {
  /**
   * Post-paid spend (a chat's): the UTC day its settled amount counts on. A store that keeps the
   * limits' daily spend beside the wallet (Redis, the same tenant slot) adds it in the settling
   * step itself and says so (CloseResult.spendRecorded): one atomic step, no second write that a
   * crash in between could lose. Others leave it to the caller (LimitsService.recordSpend).
   */
  spendDay?: string;
}

export interface CreditResult {
  status: 'credited' | 'duplicate';
  entry: LedgerEntry;
  wallet: WalletRecord;
}

export interface LowBalanceInput {
  /** 'settlement' may raise an alert; 'credit' (top-up, adjustment, release) may only recover. */
  trigger: 'settlement' | 'credit';
  defaultThreshold: Milli;
  /** Whether an active endpoint subscribes to balance.low. When false no alert is raised and the edge is NOT consumed. */
  subscribed: boolean;
  now: number;
  throttleMs: number;
}

export interface LowBalanceDecision {
  /** True when the caller must emit balance.low now (the state change is already recorded). */
  alert: boolean;
  /** The state after this call. */
  state: AlertState;
  recovered: boolean;
  available: Milli;
  threshold: Milli;
}

export interface LedgerPage {
  entries: LedgerEntry[];
  /** Pass as `beforeSeq` for the next (older) page; null at the end of what the store keeps. */
  nextBeforeSeq: number | null;
  /**
   * Lines 1..archivedThrough have moved to the ledger archive (engine/billing/ledger-archive.ts,
   * which reads across both); absent or 0: the store keeps every line.
   */
  archivedThrough?: number;
}

/** Asks for the oldest lines kept that may move to the archive (WalletStore.claimArchive). */
export interface ArchiveClaim {
  /** Who archives (one process's archiver); the lease is theirs until now + leaseMs. */
  owner: string;
  now: number;
  leaseMs: number;
  /** Lines at or after this instant (ISO 8601; '' for none) stay... */
  before: string;
  /** ...unless the store keeps more than `keep` lines (0 or absent: no count bound). */
  keep?: number;
  /** At most this many lines. */
  max: number;
}

export interface ArchiveBatch {
  /** ok: `entries` (or `segment`) are the lines to archive (one UTC day, oldest kept first); none: nothing is due; busy: another archiver holds the lease. */
  status: 'ok' | 'none' | 'busy';
  /** Lines already archived before this batch. */
  archivedThrough: number;
  entries: LedgerEntry[];
  /**
   * The lines as the segment's bytes instead, from a store that keeps them so (memory): `entries`
   * is then empty. The archive writes these bytes as they are.
   */
  segment?: ArchiveSegment;
}

/** Ledger lines as an archive segment's bytes. */
export interface ArchiveSegment {
  /** One `JSON.stringify(entry)` a line, each followed by '\n' (the entry's keys in LedgerEntry's order). */
  body: Buffer;
  /** Lines in `body`. */
  count: number;
  first: Pick<LedgerEntry, 'seq' | 'id' | 'at'>;
  last: Pick<LedgerEntry, 'seq' | 'id'>;
}

/** Which lines were durably archived: the first and last of a batch, by seq and id. */
export interface TrimRequest {
  owner: string;
  first: Pick<LedgerEntry, 'seq' | 'id'>;
  last: Pick<LedgerEntry, 'seq' | 'id'>;
}

export interface WalletSnapshot {
  wallet: WalletRecord;
  /** The ledger kept, oldest first (every entry, unless `opening` says older ones were dropped). */
  entries: LedgerEntry[];
  /** Open holds, and closed holds the store still remembers, in the order they were taken. */
  holds: HoldRecord[];
  /** Set when the store keeps bounded history: the wallet just before `entries[0]`. */
  opening?: LedgerOpening;
}

/** What the dropped oldest entries added up to: the ledger is replayed from here. */
export interface LedgerOpening {
  /** The seq of the last entry dropped. */
  seq: number;
  balance: Milli;
  held: Milli;
}

export interface WalletStore {
  /** The wallet (a zero wallet if the tenant has none yet). */
  get(tenantId: string): Promise<WalletRecord>;
  /** Add a top-up (amount > 0) or an adjustment (amount != 0). Idempotent per (kind, ref). */
  credit(tenantId: string, kind: 'topup' | 'adjustment', ref: string, amount: Milli, note: string, at: string): Promise<CreditResult>;
  /**
   * Hold `amount` for `ref` iff amount <= available (amount 0 always holds). One hold per ref.
   * With `upTo`, hold min(amount, available) instead, refused only when nothing is available.
   */
  hold(tenantId: string, ref: string, amount: Milli, note: string, at: string, opts?: HoldOptions): Promise<HoldResult>;
  /** Settle min(actual, held) of the open hold `ref` and release the rest. Exactly once per ref. */
  settle(tenantId: string, ref: string, actual: Milli, note: string, at: string, opts?: SettleOptions): Promise<CloseResult>;
  /** Release the open hold `ref` entirely. Exactly once per ref (a settled ref is not released). */
  release(tenantId: string, ref: string, note: string, at: string): Promise<CloseResult>;
  /** Hold and settle `amount` in one step, for usage billed after the fact; may take available below 0. Once per ref. */
  charge(tenantId: string, ref: string, amount: Milli, note: string, at: string): Promise<CloseResult>;
  /** Ledger entries newest first, `limit` of them, with seq < beforeSeq when given. */
  list(tenantId: string, limit: number, beforeSeq?: number): Promise<LedgerPage>;
  /** Set (or clear, with null) the tenant's balance.low threshold. */
  setThreshold(tenantId: string, threshold: Milli | null): Promise<WalletRecord>;
  /** The balance.low state machine, in one atomic step on the wallet's current numbers. */
  lowBalance(tenantId: string, input: LowBalanceInput): Promise<LowBalanceDecision>;
  /** Everything about one wallet, for invariant checks and audits. */
  snapshot(tenantId: string): Promise<WalletSnapshot>;
  /** The holds of a tenant that are still open (for the sweep that releases orphaned ones). */
  openHolds(tenantId: string): Promise<HoldRecord[]>;
  /** The lines due for the archive, with the tenant's archive lease (see ArchiveClaim). */
  claimArchive(tenantId: string, claim: ArchiveClaim): Promise<ArchiveBatch>;
  /**
   * Removes the archived lines first..last from the store, folding them into the opening, iff
   * they are still the oldest kept and `owner` still holds the lease. True when trimmed. Seqs
   * never change: line n is line n before and after.
   */
  trimArchived(tenantId: string, trim: TrimRequest): Promise<boolean>;
  /**
   * A store that keeps its lines in the process's heap (memory) calls `due(tenantId)` when a
   * wallet holds `lines` lines past its count bound, once until lines are trimmed, so that the
   * archive moves them then rather than at its next run (a chat burst appends tens of thousands of
   * lines a second). Optional: Redis holds its lines out of the process.
   */
  onLinesPastBound?(lines: number, due: (tenantId: string) => void): void;
}

/** What reads ledger pages: a WalletStore, or the archive reading across it (billing/ledger-archive.ts). */
export type LedgerLines = Pick<WalletStore, 'list'>;

/**
 * The balance.low state machine on a wallet record — the reference semantics every adapter
 * implements atomically (the memory adapter calls this; a Lua script mirrors it).
 *   available >= threshold            -> NORMAL (an ALERTED wallet has recovered); no alert
 *   below, trigger 'credit'           -> unchanged; no alert (holds and credits never alert)
 *   below, settlement, no subscriber  -> unchanged; no alert (the edge is not consumed)
 *   below, settlement, NORMAL         -> ALERTED, alert (the edge; no throttle applies)
 *   below, settlement, ALERTED        -> alert again only if the last one is >= throttleMs old
 * Returns the decision and the fields to write back.
 */
export function applyLowBalance(
  wallet: Pick<WalletRecord, 'balance' | 'held' | 'threshold' | 'alertState' | 'lastAlertAt'>,
  input: LowBalanceInput,
): { decision: LowBalanceDecision; alertState: AlertState; lastAlertAt: number | null } {
  const available = wallet.balance - wallet.held;
  const threshold = wallet.threshold ?? input.defaultThreshold;
  const keep = { alertState: wallet.alertState, lastAlertAt: wallet.lastAlertAt };
  const result = (alert: boolean, alertState: AlertState, lastAlertAt: number | null, recovered = false) => ({
    decision: { alert, state: alertState, recovered, available, threshold },
    alertState,
    lastAlertAt,
  });
  if (available >= threshold) {
    return result(false, 'NORMAL', keep.lastAlertAt, wallet.alertState === 'ALERTED');
  }
  if (input.trigger !== 'settlement' || !input.subscribed) return result(false, keep.alertState, keep.lastAlertAt);
  if (wallet.alertState === 'NORMAL') return result(true, 'ALERTED', input.now);
  if (wallet.lastAlertAt === null || input.now - wallet.lastAlertAt >= input.throttleMs) {
    return result(true, 'ALERTED', input.now);
  }
  return result(false, keep.alertState, keep.lastAlertAt);
}
