// In-memory WalletStore. Each method does all its reads and writes synchronously, before its
// first (and only) await point — the returned promise — so every method is atomic in one process.
// Callers get copies, never the live records.
// History is bounded: ledger lines (kept as their NDJSON bytes, ledger-lines.ts) leave only through the archive
// (engine/billing/ledger-archive.ts writes them to NDJSON segments, then trimArchived folds them
// into the wallet's opening state, so balance and held stay exact: they are running sums); the
// archive takes lines past the retention, and any beyond the newest `ledgerEntries`. Closed holds are forgotten `closedHoldTtlMs` after they closed, like the
// finished tasks they belong to, or sooner once the wallet has `ledgerEntries` of them (a chat
// charge closes a hold per request: at hundreds of requests a second, a 30-day retention alone
// would be no bound; closed-holds.ts keeps a chat's as bytes). A closed hold is needed only while its settle, release or charge may be
// repeated (seconds to the sweep's grace), so forgetting the oldest is safe. The Redis adapter archives
// the same way and forgets closed holds after the same retention (see redis/wallets.ts).
import { prefixedId } from '../../util/ids.ts';
import { ClosedHolds, copyHold, type KeptHold } from './closed-holds.ts';
import { LedgerLines } from './ledger-lines.ts';
import {
  applyLowBalance,
  type ArchiveBatch,
  type ArchiveClaim,
  type CloseResult,
  type CreditResult,
  type HoldOptions,
  type HoldRecord,
  type HoldResult,
  type LedgerEntry,
  type LedgerKind,
  type LedgerOpening,
  type LedgerPage,
  type LowBalanceDecision,
  type LowBalanceInput,
  type WalletRecord,
  type WalletSnapshot,
  type WalletStore,
  type TrimRequest,
} from '../../billing/store.ts';
import type { Milli } from '../../util/money.ts';
import { systemClock, type Clock } from '../../util/clock.ts';

export interface MemoryWalletStoreOptions {
  /** Ledger lines kept per wallet (the newest) before older ones go to the archive, whatever their age; default 10,000. */
  ledgerEntries?: number;
  /** Settled and released holds are forgotten this long after they closed; 0 (the default): kept. */
  closedHoldTtlMs?: number;
  clock?: Clock;
}

export const DEFAULT_LEDGER_ENTRIES = 10_000;

interface WalletState {
  wallet: WalletRecord;
  /** The newest ledger lines, oldest first (seqs opening.seq + 1 to wallet.seq). */
  lines: LedgerLines;
  /** The wallet before the first entry kept (all zero until an entry is archived). */
  opening: LedgerOpening;
  /** The archive lease (claimArchive): who may trim, until when. */
  lease?: { owner: string; until: number };
  /**
   * Holds by ref: the open ones, and the settled and released ones (charges included) that may be
   * held again, until they are forgotten. One Map, so that a hold's duplicate check is one lookup
   * and a close changes the record in place. A hold of a new ref (HoldOptions.newRef: a chat's)
   * leaves it when it closes and is kept in the ring alone: its ref is never held again, so the
   * Map stays the size of the holds in flight and in cache (10,000 closed chat holds in it were a
   * lookup and a set per hold, a delete per close, on a table out of cache: 2.2 µs a chat).
   */
  holds: Map<string, KeptHold>;
  /** Every closed hold in closing order (at most `ledgerEntries`), with when each is forgotten. */
  closed: ClosedHolds;
  /** `${kind}:${ref}` -> the credit entry, for idempotent top-ups and adjustments. */
  credits: Map<string, LedgerEntry>;
  /** Whether `pastBound` was called for the lines kept now (reset when lines are trimmed). */
  pastBoundSaid: boolean;
}

export class MemoryWalletStore implements WalletStore {
  private readonly wallets = new Map<string, WalletState>();
  private readonly ledgerEntries: number;
  private readonly closedHoldTtlMs: number;
  private readonly clock: Clock;
  /** onLinesPastBound's: the lines past `ledgerEntries` at which it is called, and whom it calls. */
  private pastBound?: { lines: number; due: (tenantId: string) => void };

  constructor(opts: MemoryWalletStoreOptions = {}) {
    this.ledgerEntries = opts.ledgerEntries ?? DEFAULT_LEDGER_ENTRIES;
    if (!Number.isSafeInteger(this.ledgerEntries) || this.ledgerEntries < 1) throw new Error('ledgerEntries must be a positive integer');
    this.closedHoldTtlMs = opts.closedHoldTtlMs ?? 0;
    if (!Number.isSafeInteger(this.closedHoldTtlMs) || this.closedHoldTtlMs < 0) throw new Error('closedHoldTtlMs must be a non-negative integer');
    this.clock = opts.clock ?? systemClock;
  }

  async get(tenantId: string): Promise<WalletRecord> {
    return { ...this.state(tenantId).wallet };
  }

  async credit(tenantId: string, kind: 'topup' | 'adjustment', ref: string, amount: Milli, note: string, at: string): Promise<CreditResult> {
    const s = this.state(tenantId);
    const first = s.credits.get(`${kind}:${ref}`);
    if (first) return { status: 'duplicate', entry: { ...first }, wallet: { ...s.wallet } };
    const entry = this.append(s, kind, amount, ref, note, at);
    s.credits.set(`${kind}:${ref}`, entry); // the kept entry itself: entries are never changed
    s.wallet.balance += amount;
    return { status: 'credited', entry: { ...entry }, wallet: { ...s.wallet } };
  }

  async hold(tenantId: string, ref: string, amount: Milli, note: string, at: string, opts: HoldOptions = {}): Promise<HoldResult> {
    const s = this.state(tenantId);
    const existing = s.holds.get(ref) ?? (opts.newRef ? s.closed.recentlyClosed(ref) : undefined);
    if (existing) return { status: 'duplicate', hold: copyHold(existing), wallet: { ...s.wallet } };
    if (opts.upTo && amount > 0) {
      const available = s.wallet.balance - s.wallet.held;
      if (available <= 0) return { status: 'insufficient', wallet: { ...s.wallet } };
      amount = Math.min(amount, available);
    }
    if (amount > 0 && amount > s.wallet.balance - s.wallet.held) return { status: 'insufficient', wallet: { ...s.wallet } };
    this.append(s, 'hold', amount, ref, note, at);
    const hold: KeptHold = opts.newRef
      ? { ref, amount, state: 'open', settled: 0, released: 0, at, charge: false, newRef: true }
      : { ref, amount, state: 'open', settled: 0, released: 0, at, charge: false };
    s.holds.set(ref, hold);
    s.wallet.held += amount;
    return { status: 'held', hold: copyHold(hold), wallet: { ...s.wallet } };
  }

  async settle(tenantId: string, ref: string, actual: Milli, note: string, at: string): Promise<CloseResult> {
    return this.close(tenantId, ref, actual, note, at);
  }

  async release(tenantId: string, ref: string, note: string, at: string): Promise<CloseResult> {
    return this.close(tenantId, ref, null, note, at);
  }

  async charge(tenantId: string, ref: string, amount: Milli, note: string, at: string): Promise<CloseResult> {
    const s = this.state(tenantId);
    const existing = s.holds.get(ref);
    if (existing) return { status: 'duplicate', hold: copyHold(existing), wallet: { ...s.wallet } };
    this.append(s, 'hold', amount, ref, note, at);
    this.append(s, 'settle', amount, ref, note, at);
    const hold: HoldRecord = { ref, amount, state: 'settled', settled: amount, released: 0, at, charge: true };
    const kept = copyHold(hold); // a copy: the caller may change this object
    s.holds.set(ref, kept);
    this.remember(s, kept);
    s.wallet.balance -= amount;
    return { status: 'closed', hold, wallet: { ...s.wallet } };
  }

  async list(tenantId: string, limit: number, beforeSeq?: number): Promise<LedgerPage> {
    const s = this.state(tenantId);
    // Seqs are consecutive, so a page is the seqs from `start` up to `end`.
    const kept = s.lines.firstSeq;
    const end = beforeSeq === undefined ? s.lines.lastSeq + 1 : Math.min(s.lines.lastSeq + 1, Math.max(kept, beforeSeq));
    const start = Math.max(kept, end - limit);
    const page = s.lines.slice(start, end).reverse();
    return { entries: page, nextBeforeSeq: start > kept ? start : null, archivedThrough: s.opening.seq };
  }

  async setThreshold(tenantId: string, threshold: Milli | null): Promise<WalletRecord> {
    const s = this.state(tenantId);
    s.wallet.threshold = threshold;
    return { ...s.wallet };
  }

  async lowBalance(tenantId: string, input: LowBalanceInput): Promise<LowBalanceDecision> {
    const w = this.state(tenantId).wallet;
    const { decision, alertState, lastAlertAt } = applyLowBalance(w, input);
    w.alertState = alertState;
    w.lastAlertAt = lastAlertAt;
    return decision;
  }

  async openHolds(tenantId: string): Promise<HoldRecord[]> {
    const s = this.wallets.get(tenantId);
    return s ? [...s.holds.values()].filter((h) => h.state === 'open' && h.amount > 0).map(copyHold) : [];
  }

  async snapshot(tenantId: string): Promise<WalletSnapshot> {
    const s = this.state(tenantId);
    const entries = s.lines.slice(s.lines.firstSeq, s.lines.lastSeq + 1);
    // Holds in the order they were taken: open holds taken before the first entry kept, then the
    // order of the 'hold' entries kept (a closed hold may have been forgotten).
    const kept = new Set(entries.filter((e) => e.kind === 'hold').map((e) => e.ref));
    const older = [...s.holds.values()].filter((h) => h.state === 'open' && !kept.has(h.ref)).map(copyHold);
    const ring = new Map(s.closed.all().map((h) => [h.ref, h] as const));
    const holds = [...kept].flatMap((ref) => {
      const hold = s.holds.get(ref) ?? ring.get(ref);
      return hold ? [copyHold(hold)] : [];
    });
    const opening = s.opening.seq > 0 ? { opening: { ...s.opening } } : {};
    return { wallet: { ...s.wallet }, entries, holds: [...older, ...holds], ...opening };
  }

  async claimArchive(tenantId: string, c: ArchiveClaim): Promise<ArchiveBatch> {
    const s = this.state(tenantId);
    const archivedThrough = s.opening.seq;
    if (s.lease && s.lease.owner !== c.owner && s.lease.until > c.now) return { status: 'busy', archivedThrough, entries: [] };
    const keep = c.keep ?? this.ledgerEntries;
    const lines = s.lines;
    const kept = lines.length;
    const from = lines.firstSeq;
    const nextDay = lines.nextDay(from); // one UTC day a segment
    let n = 0;
    for (let seq = from; seq <= lines.lastSeq && n < c.max && seq < nextDay; seq++, n++) {
      const forced = keep > 0 && kept - n > keep;
      if (!forced && (c.before === '' || lines.get(seq).at >= c.before)) break; // '': no line is old enough
    }
    if (n === 0) return { status: 'none', archivedThrough, entries: [] };
    s.lease = { owner: c.owner, until: c.now + c.leaseMs };
    // The lines as the bytes they are kept in (a copy): no 5,000 objects made for a segment.
    const last = lines.get(from + n - 1);
    return { status: 'ok', archivedThrough, entries: [], segment: { body: lines.ndjson(from, from + n - 1), count: n, first: lines.get(from), last } };
  }

  async trimArchived(tenantId: string, t: TrimRequest): Promise<boolean> {
    const s = this.state(tenantId);
    if (s.lease?.owner !== t.owner || s.opening.seq + 1 !== t.first.seq) return false;
    const n = t.last.seq - t.first.seq + 1;
    if (n < 1 || s.lines.length < n || s.lines.get(t.first.seq).id !== t.first.id || s.lines.get(t.last.seq).id !== t.last.id) return false;
    // Folds the archived lines into the opening (their effect on balance and held, as in store.ts).
    const o = s.opening;
    for (let seq = t.first.seq; seq <= t.last.seq; seq++) {
      const kind = s.lines.kindOf(seq);
      const amount = s.lines.amountOf(seq);
      if (kind === 'topup' || kind === 'adjustment') o.balance += amount;
      else if (kind === 'hold') o.held += amount;
      else if (kind === 'release') o.held -= amount;
      else {
        o.held -= amount;
        o.balance -= amount;
      }
    }
    o.seq = t.last.seq;
    s.lines.dropOldest(n);
    s.pastBoundSaid = false;
    return true;
  }

  onLinesPastBound(lines: number, due: (tenantId: string) => void): void {
    this.pastBound = { lines, due };
  }

  /** Tenants with a wallet (for tests and audits). */
  tenants(): string[] {
    return [...this.wallets.keys()];
  }

  private close(tenantId: string, ref: string, actual: Milli | null, note: string, at: string): CloseResult {
    const s = this.state(tenantId);
    const hold = s.holds.get(ref) ?? s.closed.find(ref); // the ring: a repeat only
    if (!hold) return { status: 'unknown', wallet: { ...s.wallet } };
    if (hold.state !== 'open') return { status: 'duplicate', hold: copyHold(hold), wallet: { ...s.wallet } };
    const settled = actual === null ? 0 : Math.min(Math.max(actual, 0), hold.amount);
    const released = hold.amount - settled;
    if (actual !== null) this.append(s, 'settle', settled, ref, note, at);
    if (actual === null || released > 0) this.append(s, 'release', released, ref, note, at);
    hold.state = actual === null ? 'released' : 'settled';
    hold.settled = settled;
    hold.released = released;
    if (hold.newRef) s.holds.delete(ref);
    this.remember(s, hold);
    s.wallet.held -= hold.amount;
    s.wallet.balance -= settled;
    return { status: 'closed', hold: copyHold(hold), wallet: { ...s.wallet } };
  }

  /**
   * Remembers that `hold` closed, until the retention passes or the wallet has `ledgerEntries`
   * newer closed holds; forgets, oldest first, those past either bound.
   */
  private remember(s: WalletState, hold: KeptHold): void {
    const now = this.clock.now();
    const ttl = this.closedHoldTtlMs;
    while (s.closed.oldestDue(now, ttl)) {
      const old = s.closed.forgetOldest();
      if (old) s.holds.delete(old.ref); // a hold that may be held again (not a new ref's) leaves the Map too
    }
    s.closed.add(hold, now + ttl);
  }

  /** Appends a ledger line; returns it (a new object: the store keeps the line's bytes). */
  private append(s: WalletState, kind: LedgerKind, amount: Milli, ref: string, note: string, at: string): LedgerEntry {
    const entry: LedgerEntry = { id: prefixedId('led_'), seq: ++s.wallet.seq, at, kind, amount, ref, note };
    s.lines.push(entry);
    // Lines past the bound wait in memory for the archive: a chat burst at thousands a second
    // held 150 MB of them within the archive's minute (docs/performance.md, peak heap).
    if (this.pastBound && !s.pastBoundSaid && s.lines.length >= this.ledgerEntries + this.pastBound.lines) {
      s.pastBoundSaid = true;
      this.pastBound.due(s.wallet.tenantId);
    }
    return entry;
  }

  private state(tenantId: string): WalletState {
    let s = this.wallets.get(tenantId);
    if (!s) {
      s = {
        wallet: { tenantId, balance: 0, held: 0, threshold: null, alertState: 'NORMAL', lastAlertAt: null, seq: 0 },
        lines: new LedgerLines(),
        opening: { seq: 0, balance: 0, held: 0 },
        holds: new Map(),
        closed: new ClosedHolds(this.ledgerEntries),
        credits: new Map(),
        pastBoundSaid: false,
      };
      this.wallets.set(tenantId, s);
    }
    return s;
  }
}
