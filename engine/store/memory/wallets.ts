// In-memory WalletStore. Each method does all its reads and writes synchronously, before its
// first (and only) await point — the returned promise — so every method is atomic in one process.
// Callers get copies, never the live records.
import { prefixedId } from '../../util/ids.ts';
import {
  applyLowBalance,
  type CloseResult,
  type CreditResult,
  type HoldRecord,
  type HoldResult,
  type LedgerEntry,
  type LedgerKind,
  type LedgerPage,
  type LowBalanceDecision,
  type LowBalanceInput,
  type WalletRecord,
  type WalletSnapshot,
  type WalletStore,
} from '../../billing/store.ts';
import type { Milli } from '../../billing/money.ts';
import { JsonLog } from './json-log.ts';
import { OffHeapMap } from './off-heap-map.ts';

// Everything kept per request or per ref (ledger entries, closed holds, credit refs) lives off
// the JS heap (see json-log.ts); only open holds, a few per running task, are heap objects.
interface WalletState {
  wallet: WalletRecord;
  entries: JsonLog<LedgerEntry>;
  /** Holds still open (amount >= 0), by ref. */
  open: Map<string, HoldRecord>;
  /** Settled and released holds (charges included), by ref. */
  closed: OffHeapMap<HoldRecord>;
  /** `${kind}:${ref}` -> the credit entry, for idempotent top-ups and adjustments. */
  credits: OffHeapMap<LedgerEntry>;
}

export class MemoryWalletStore implements WalletStore {
  private readonly wallets = new Map<string, WalletState>();

  async get(tenantId: string): Promise<WalletRecord> {
    return { ...this.state(tenantId).wallet };
  }

  async credit(tenantId: string, kind: 'topup' | 'adjustment', ref: string, amount: Milli, note: string, at: string): Promise<CreditResult> {
    const s = this.state(tenantId);
    const first = s.credits.get(`${kind}:${ref}`);
    if (first) return { status: 'duplicate', entry: first, wallet: { ...s.wallet } };
    const entry = this.append(s, kind, amount, ref, note, at);
    s.credits.set(`${kind}:${ref}`, entry);
    s.wallet.balance += amount;
    return { status: 'credited', entry: { ...entry }, wallet: { ...s.wallet } };
  }

  async hold(tenantId: string, ref: string, amount: Milli, note: string, at: string): Promise<HoldResult> {
    const s = this.state(tenantId);
    const existing = this.holdOf(s, ref);
    if (existing) return { status: 'duplicate', hold: existing, wallet: { ...s.wallet } };
    if (amount > 0 && amount > s.wallet.balance - s.wallet.held) return { status: 'insufficient', wallet: { ...s.wallet } };
    this.append(s, 'hold', amount, ref, note, at);
    const hold: HoldRecord = { ref, amount, state: 'open', settled: 0, released: 0, at, charge: false };
    s.open.set(ref, hold);
    s.wallet.held += amount;
    return { status: 'held', hold: { ...hold }, wallet: { ...s.wallet } };
  }

  async settle(tenantId: string, ref: string, actual: Milli, note: string, at: string): Promise<CloseResult> {
    return this.close(tenantId, ref, actual, note, at);
  }

  async release(tenantId: string, ref: string, note: string, at: string): Promise<CloseResult> {
    return this.close(tenantId, ref, null, note, at);
  }

  async charge(tenantId: string, ref: string, amount: Milli, note: string, at: string): Promise<CloseResult> {
    const s = this.state(tenantId);
    const existing = this.holdOf(s, ref);
    if (existing) return { status: 'duplicate', hold: existing, wallet: { ...s.wallet } };
    this.append(s, 'hold', amount, ref, note, at);
    this.append(s, 'settle', amount, ref, note, at);
    const hold: HoldRecord = { ref, amount, state: 'settled', settled: amount, released: 0, at, charge: true };
    s.closed.set(ref, hold); // stores a copy: the caller may have this object
    s.wallet.balance -= amount;
    return { status: 'closed', hold, wallet: { ...s.wallet } };
  }

  async list(tenantId: string, limit: number, beforeSeq?: number): Promise<LedgerPage> {
    const entries = this.state(tenantId).entries;
    // entries[i].seq === i + 1, so the page is a slice.
    const end = beforeSeq === undefined ? entries.length : Math.min(entries.length, Math.max(0, beforeSeq - 1));
    const start = Math.max(0, end - limit);
    const page = entries.slice(start, end).reverse();
    return { entries: page, nextBeforeSeq: start > 0 ? start + 1 : null };
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
    return s ? [...s.open.values()].filter((h) => h.amount > 0).map((h) => ({ ...h })) : [];
  }

  async snapshot(tenantId: string): Promise<WalletSnapshot> {
    const s = this.state(tenantId);
    const entries = s.entries.slice(0);
    // Holds in the order they were taken: the order of their 'hold' entries in the ledger.
    const holds = entries.filter((e) => e.kind === 'hold').map((e) => this.holdOf(s, e.ref)!);
    return { wallet: { ...s.wallet }, entries, holds };
  }

  /** Tenants with a wallet (for tests and audits). */
  tenants(): string[] {
    return [...this.wallets.keys()];
  }

  private close(tenantId: string, ref: string, actual: Milli | null, note: string, at: string): CloseResult {
    const s = this.state(tenantId);
    const hold = s.open.get(ref);
    if (!hold) {
      const closed = s.closed.get(ref);
      return closed ? { status: 'duplicate', hold: closed, wallet: { ...s.wallet } } : { status: 'unknown', wallet: { ...s.wallet } };
    }
    const settled = actual === null ? 0 : Math.min(Math.max(actual, 0), hold.amount);
    const released = hold.amount - settled;
    if (actual !== null) this.append(s, 'settle', settled, ref, note, at);
    if (actual === null || released > 0) this.append(s, 'release', released, ref, note, at);
    hold.state = actual === null ? 'released' : 'settled';
    hold.settled = settled;
    hold.released = released;
    s.open.delete(ref);
    s.closed.set(ref, hold); // stores a copy: the heap object is no longer held, the caller may have it
    s.wallet.held -= hold.amount;
    s.wallet.balance -= settled;
    return { status: 'closed', hold, wallet: { ...s.wallet } };
  }

  /** A copy of the hold `ref`, open or closed. */
  private holdOf(s: WalletState, ref: string): HoldRecord | undefined {
    const open = s.open.get(ref);
    return open ? { ...open } : s.closed.get(ref);
  }

  private append(s: WalletState, kind: LedgerKind, amount: Milli, ref: string, note: string, at: string): LedgerEntry {
    const seq = ++s.wallet.seq;
    const entry: LedgerEntry = { id: prefixedId('led_'), seq, at, kind, amount, ref, note };
    s.entries.push(entry);
    return entry;
  }

  private state(tenantId: string): WalletState {
    let s = this.wallets.get(tenantId);
    if (!s) {
      s = {
        wallet: { tenantId, balance: 0, held: 0, threshold: null, alertState: 'NORMAL', lastAlertAt: null, seq: 0 },
        entries: new JsonLog(),
        open: new Map(),
        closed: new OffHeapMap(),
        credits: new OffHeapMap(),
      };
      this.wallets.set(tenantId, s);
    }
    return s;
  }
}
