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
import { LedgerLog } from './ledger-log.ts';
import { ShardedMap } from './sharded-map.ts';

interface WalletState {
  wallet: WalletRecord;
  entries: LedgerLog;
  holds: ShardedMap<HoldRecord>;
  /** Refs of the holds still open (amount > 0). */
  open: Set<string>;
  /** `${kind}:${ref}` -> the credit entry, for idempotent top-ups and adjustments. */
  credits: Map<string, LedgerEntry>;
}

export class MemoryWalletStore implements WalletStore {
  private readonly wallets = new Map<string, WalletState>();

  async get(tenantId: string): Promise<WalletRecord> {
    return { ...this.state(tenantId).wallet };
  }

  async credit(tenantId: string, kind: 'topup' | 'adjustment', ref: string, amount: Milli, note: string, at: string): Promise<CreditResult> {
    const s = this.state(tenantId);
    const first = s.credits.get(`${kind}:${ref}`);
    if (first) return { status: 'duplicate', entry: { ...first }, wallet: { ...s.wallet } };
    const entry = this.append(s, kind, amount, ref, note, at);
    s.credits.set(`${kind}:${ref}`, entry);
    s.wallet.balance += amount;
    return { status: 'credited', entry: { ...entry }, wallet: { ...s.wallet } };
  }

  async hold(tenantId: string, ref: string, amount: Milli, note: string, at: string): Promise<HoldResult> {
    const s = this.state(tenantId);
    const existing = s.holds.get(ref);
    if (existing) return { status: 'duplicate', hold: { ...existing }, wallet: { ...s.wallet } };
    if (amount > 0 && amount > s.wallet.balance - s.wallet.held) return { status: 'insufficient', wallet: { ...s.wallet } };
    this.append(s, 'hold', amount, ref, note, at);
    const hold: HoldRecord = { ref, amount, state: 'open', settled: 0, released: 0, at, charge: false };
    s.holds.set(ref, hold);
    if (amount > 0) s.open.add(ref);
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
    const existing = s.holds.get(ref);
    if (existing) return { status: 'duplicate', hold: { ...existing }, wallet: { ...s.wallet } };
    this.append(s, 'hold', amount, ref, note, at);
    this.append(s, 'settle', amount, ref, note, at);
    const hold: HoldRecord = { ref, amount, state: 'settled', settled: amount, released: 0, at, charge: true };
    s.holds.set(ref, hold);
    s.wallet.balance -= amount;
    return { status: 'closed', hold: { ...hold }, wallet: { ...s.wallet } };
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
    return s ? [...s.open].map((ref) => ({ ...s.holds.get(ref)! })) : [];
  }

  async snapshot(tenantId: string): Promise<WalletSnapshot> {
    const s = this.state(tenantId);
    const entries = s.entries.slice(0);
    // Holds in the order they were taken: the order of their 'hold' entries in the ledger.
    const holds = entries.filter((e) => e.kind === 'hold').map((e) => ({ ...s.holds.get(e.ref)! }));
    return { wallet: { ...s.wallet }, entries, holds };
  }

  /** Tenants with a wallet (for tests and audits). */
  tenants(): string[] {
    return [...this.wallets.keys()];
  }

  private close(tenantId: string, ref: string, actual: Milli | null, note: string, at: string): CloseResult {
    const s = this.state(tenantId);
    const hold = s.holds.get(ref);
    if (!hold) return { status: 'unknown', wallet: { ...s.wallet } };
    if (hold.state !== 'open') return { status: 'duplicate', hold: { ...hold }, wallet: { ...s.wallet } };
    const settled = actual === null ? 0 : Math.min(Math.max(actual, 0), hold.amount);
    const released = hold.amount - settled;
    if (actual !== null) this.append(s, 'settle', settled, ref, note, at);
    if (actual === null || released > 0) this.append(s, 'release', released, ref, note, at);
    hold.state = actual === null ? 'released' : 'settled';
    s.open.delete(ref);
    hold.settled = settled;
    hold.released = released;
    s.wallet.held -= hold.amount;
    s.wallet.balance -= settled;
    return { status: 'closed', hold: { ...hold }, wallet: { ...s.wallet } };
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
        entries: new LedgerLog(),
        holds: new ShardedMap(),
        open: new Set(),
        credits: new Map(),
      };
      this.wallets.set(tenantId, s);
    }
    return s;
  }
}
