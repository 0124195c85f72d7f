// In-memory WalletStore. Each method does all its reads and writes synchronously, before its
// first (and only) await point — the returned promise — so every method is atomic in one process.
// Callers get copies, never the live records (but claimArchive's read-only lines).
// History is bounded, in plain Maps: ledger lines leave only through the archive
// (engine/billing/ledger-archive.ts writes them to NDJSON segments, then trimArchived folds them
// into the wallet's opening state, so balance and held stay exact: they are running sums); the
// archive takes lines past the retention, and any beyond the newest `ledgerEntries`. Closed holds are forgotten `closedHoldTtlMs` after they closed, like the
// finished tasks they belong to, or sooner once the wallet has `ledgerEntries` of them (a chat
// charge closes a hold per request: at hundreds of requests a second, a 30-day retention alone
// would be no bound). A closed hold is needed only while its settle, release or charge may be
// repeated (seconds to the sweep's grace), so forgetting the oldest is safe. The Redis adapter archives
// the same way and forgets closed holds after the same retention (see redis/wallets.ts).
import { prefixedId } from '../../util/ids.ts';
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
  /** The newest ledger entries, oldest first, from `entries[head]`. */
  entries: LedgerEntry[];
  head: number;
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
  /**
   * Every closed hold in closing order, and when each is forgotten (ms; same index): a ring of at
   * most `ledgerEntries` slots, the oldest at `closedStart`, `closedCount` of them. Filled by push
   * until it is full, then reused in place; two flat arrays (the times stored unboxed).
   */
  closedHolds: (KeptHold | undefined)[];
  closedUntil: number[];
  closedStart: number;
  closedCount: number;
  /** `${kind}:${ref}` -> the credit entry, for idempotent top-ups and adjustments. */
  credits: Map<string, LedgerEntry>;
  /** Whether `pastBound` was called for the lines kept now (reset when lines are trimmed). */
  pastBoundSaid: boolean;
}

/** A hold as kept: `newRef` when it was taken as one (HoldOptions.newRef); callers get a HoldRecord copy (copyHold). */
type KeptHold = HoldRecord & { newRef?: true };

/** Closed holds of new refs looked at by a repeated hold of a new ref ("closed a moment ago"). */
const RECENT_CLOSED = 16;

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
    const existing = s.holds.get(ref) ?? (opts.newRef ? recentlyClosed(s, ref) : undefined);
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
    // Seqs are consecutive: seq n is at entries[first + n], so a page is a slice.
    const first = s.head - s.opening.seq - 1; // the index seq 0 would have
    const end = beforeSeq === undefined ? s.entries.length : Math.min(s.entries.length, Math.max(s.head, first + beforeSeq));
    const start = Math.max(s.head, end - limit);
    const page = s.entries.slice(start, end).map((e) => ({ ...e })).reverse();
    return { entries: page, nextBeforeSeq: start > s.head ? start - first : null, archivedThrough: s.opening.seq };
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
    const entries = s.entries.slice(s.head).map((e) => ({ ...e }));
    // Holds in the order they were taken: open holds taken before the first entry kept, then the
    // order of the 'hold' entries kept (a closed hold may have been forgotten).
    const kept = new Set(entries.filter((e) => e.kind === 'hold').map((e) => e.ref));
    const older = [...s.holds.values()].filter((h) => h.state === 'open' && !kept.has(h.ref)).map(copyHold);
    const ring = new Map(s.closedHolds.flatMap((h) => (h ? [[h.ref, h] as const] : [])));
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
    const kept = s.entries.length - s.head;
    // The kept lines themselves, not copies (the one exception to "callers get copies"): the
    // archive only reads them, and entries are never changed once written; a segment is 5,000 of
    // them, a chat's three lines on the memory store.
    const out: LedgerEntry[] = [];
    let day = '';
    for (let i = s.head; i < s.entries.length && out.length < c.max; i++) {
      const e = s.entries[i]!;
      const forced = keep > 0 && kept - out.length > keep;
      if (!forced && e.at >= c.before) break;
      if (!out.length) day = e.at.slice(0, 10);
      else if (!e.at.startsWith(day)) break;
      out.push(e);
    }
    if (!out.length) return { status: 'none', archivedThrough, entries: [] };
    s.lease = { owner: c.owner, until: c.now + c.leaseMs };
    return { status: 'ok', archivedThrough, entries: out };
  }

  async trimArchived(tenantId: string, t: TrimRequest): Promise<boolean> {
    const s = this.state(tenantId);
    if (s.lease?.owner !== t.owner || s.opening.seq + 1 !== t.first.seq) return false;
    const n = t.last.seq - t.first.seq + 1;
    if (s.entries.length - s.head < n || s.entries[s.head]!.id !== t.first.id || s.entries[s.head + n - 1]!.id !== t.last.id) return false;
    for (let i = 0; i < n; i++) foldOldest(s);
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
    const hold = s.holds.get(ref) ?? s.closedHolds.find((h) => h?.ref === ref); // the ring: a repeat only
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
    const cap = this.ledgerEntries;
    const ttl = this.closedHoldTtlMs;
    while (s.closedCount > 0 && (s.closedCount === cap || (ttl > 0 && s.closedUntil[s.closedStart]! <= now))) {
      const old = s.closedHolds[s.closedStart]!;
      if (!old.newRef) s.holds.delete(old.ref);
      s.closedHolds[s.closedStart] = undefined;
      s.closedStart = s.closedStart + 1 === cap ? 0 : s.closedStart + 1;
      s.closedCount--;
    }
    let at = s.closedStart + s.closedCount;
    if (at >= cap) at -= cap;
    // Until the ring is full its next slot is its end (the slots used run from start to the end).
    if (at === s.closedHolds.length) {
      s.closedHolds.push(hold);
      s.closedUntil.push(now + ttl);
    } else {
      s.closedHolds[at] = hold;
      s.closedUntil[at] = now + ttl;
    }
    s.closedCount++;
  }

  /** Appends a ledger entry; returns the kept one (never changed after it is written: callers get copies). */
  private append(s: WalletState, kind: LedgerKind, amount: Milli, ref: string, note: string, at: string): LedgerEntry {
    const seq = ++s.wallet.seq;
    const entry: LedgerEntry = { id: prefixedId('led_'), seq, at, kind, amount, ref, note };
    s.entries.push(entry);
    // Lines past the bound wait in the heap for the archive: a chat burst at thousands a second
    // held 150 MB of them within the archive's minute (docs/performance.md, peak heap).
    if (this.pastBound && !s.pastBoundSaid && s.entries.length - s.head >= this.ledgerEntries + this.pastBound.lines) {
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
        entries: [],
        head: 0,
        opening: { seq: 0, balance: 0, held: 0 },
        holds: new Map(),
        closedHolds: [],
        closedUntil: [],
        closedStart: 0,
        closedCount: 0,
        credits: new Map(),
        pastBoundSaid: false,
      };
      this.wallets.set(tenantId, s);
    }
    return s;
  }
}

/** A caller's copy of a kept hold (never the `newRef` mark). */
function copyHold(h: KeptHold): HoldRecord {
  return { ref: h.ref, amount: h.amount, state: h.state, settled: h.settled, released: h.released, at: h.at, charge: h.charge };
}

/** A hold of a new ref among the newest closed ones (a repeat of a chat's hold a moment after it closed). */
function recentlyClosed(s: WalletState, ref: string): KeptHold | undefined {
  const cap = s.closedHolds.length;
  for (let i = 1; i <= s.closedCount && i <= RECENT_CLOSED; i++) {
    let at = s.closedStart + s.closedCount - i;
    if (at >= cap) at -= cap;
    const h = s.closedHolds[at];
    if (h?.ref === ref) return h;
  }
  return undefined;
}

/** Folds the oldest entry kept (archived) into the opening (its effect on balance and held, as in store.ts). */
function foldOldest(s: WalletState): void {
  const e = s.entries[s.head++]!;
  const o = s.opening;
  o.seq = e.seq;
  if (e.kind === 'topup' || e.kind === 'adjustment') o.balance += e.amount;
  else if (e.kind === 'hold') o.held += e.amount;
  else if (e.kind === 'release') o.held -= e.amount;
  else {
    o.held -= e.amount;
    o.balance -= e.amount;
  }
  // Drop the folded prefix once it is most of the array (amortised O(1) per entry).
  if (s.head > 1024 && s.head * 2 > s.entries.length) {
    s.entries = s.entries.slice(s.head);
    s.head = 0;
  }
}
