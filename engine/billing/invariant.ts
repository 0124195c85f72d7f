// Replays one wallet's ledger and checks it against the cached wallet record and hold records.
// Used by tests after every operation and by audits. Returns the list of violations (empty = ok).
// A store that keeps bounded history (the memory adapter) drops the oldest entries into the
// snapshot's `opening`, and may forget closed hold records: the replay starts from the opening,
// and only what is kept is checked.
import type { Milli } from '../util/money.ts';
import type { LedgerEntry, WalletSnapshot } from './store.ts';

export interface LedgerTotals {
  topups: Milli;
  adjustments: Milli;
  settled: Milli;
  released: Milli;
  held: Milli;
  balance: Milli;
  available: Milli;
}

export interface InvariantReport {
  ok: boolean;
  violations: string[];
  totals: LedgerTotals;
}

export function checkLedger(snap: WalletSnapshot): InvariantReport {
  const v: string[] = [];
  const opening = snap.opening ?? { seq: 0, balance: 0, held: 0 };
  const t = { topups: 0, adjustments: 0, settled: 0, released: 0, held: opening.held };
  const perRef = new Map<string, LedgerEntry[]>();
  const ids = new Set<string>();
  const holds = new Map(snap.holds.map((h) => [h.ref, h]));
  let available = opening.balance - opening.held;

  snap.entries.forEach((e, i) => {
    if (e.seq !== opening.seq + i + 1) v.push(`entry ${e.id} has seq ${e.seq}, expected ${opening.seq + i + 1}`);
    if (ids.has(e.id)) v.push(`duplicate entry id ${e.id}`);
    ids.add(e.id);
    if (!Number.isSafeInteger(e.amount)) v.push(`entry ${e.seq} amount ${e.amount} is not a safe integer`);
    if (e.kind !== 'adjustment' && e.amount < 0) v.push(`entry ${e.seq} (${e.kind}) has a negative amount`);
    switch (e.kind) {
      case 'topup':
        t.topups += e.amount;
        available += e.amount;
        return;
      case 'adjustment':
        t.adjustments += e.amount;
        available += e.amount;
        return;
      case 'hold':
      case 'settle':
      case 'release': {
        const list = perRef.get(e.ref) ?? [];
        list.push(e);
        perRef.set(e.ref, list);
        if (e.kind === 'hold') {
          t.held += e.amount;
          available -= e.amount;
          // A hold (unlike a synchronous charge) never takes the available balance below zero.
          if (e.amount > 0 && available < 0 && !holds.get(e.ref)?.charge) v.push(`hold ${e.ref} (entry ${e.seq}) took available below zero`);
        } else if (e.kind === 'settle') {
          t.held -= e.amount;
          t.settled += e.amount;
        } else {
          t.held -= e.amount;
          t.released += e.amount;
          available += e.amount;
        }
        return;
      }
    }
  });

  v.push(...holdViolations(snap, perRef, holds));
  // With an opening, a hold taken before it has its entries among the dropped ones.
  if (!snap.opening) for (const ref of holds.keys()) if (!perRef.has(ref)) v.push(`hold record ${ref} has no ledger entry`);

  const balance = opening.balance + t.topups + t.adjustments - t.settled;
  const w = snap.wallet;
  if (w.balance !== balance) v.push(`cached balance ${w.balance} != ledger balance ${balance}`);
  if (w.held !== t.held) v.push(`cached held ${w.held} != open holds ${t.held}`);
  if (t.held < 0) v.push(`open holds are negative (${t.held})`);
  if (available !== balance - t.held) v.push(`available ${available} != balance ${balance} - held ${t.held}`);
  const credited = opening.balance + t.topups + t.adjustments;
  if (credited !== available + t.held + t.settled) {
    v.push(`top-ups + adjustments (${credited}) != available + held + settled (${available + t.held + t.settled})`);
  }
  if (w.seq !== opening.seq + snap.entries.length) v.push(`wallet seq ${w.seq} != ${opening.seq + snap.entries.length} entries`);
  return { ok: v.length === 0, violations: v, totals: { ...t, balance, available } };
}

/** Each ref's entries against the ledger's rules (held once, closed at most once, in full) and its hold record. */
function holdViolations(snap: WalletSnapshot, perRef: ReadonlyMap<string, LedgerEntry[]>, holds: ReadonlyMap<string, WalletSnapshot['holds'][number]>): string[] {
  const v: string[] = [];
  for (const [ref, list] of perRef) {
    const kinds = list.map((e) => e.kind).join(',');
    const amt = (k: string) => list.filter((e) => e.kind === k).reduce((s, e) => s + e.amount, 0);
    const hold = holds.get(ref);
    if (snap.opening && ['release', 'settle', 'settle,release'].includes(kinds)) {
      // Held before the opening: only the closing can be checked.
      if (hold && (hold.settled !== amt('settle') || hold.released !== amt('release'))) v.push(`ref ${ref}: hold record ${JSON.stringify(hold)} disagrees with the ledger [${kinds}]`);
      continue;
    }
    if (!['hold', 'hold,release', 'hold,settle', 'hold,settle,release'].includes(kinds)) {
      v.push(`ref ${ref} has entries [${kinds}]: each ref is held once and closed at most once`);
      continue;
    }
    if (list.length > 1 && amt('settle') + amt('release') !== amt('hold')) {
      v.push(`ref ${ref}: settled ${amt('settle')} + released ${amt('release')} != held ${amt('hold')}`);
    }
    if (!hold) {
      // A closed hold's record may have been forgotten (after the task retention); an open one never.
      if (list.length === 1) v.push(`ref ${ref} has ledger entries but no hold record`);
      continue;
    }
    const state = list.length === 1 ? 'open' : kinds === 'hold,release' ? 'released' : 'settled';
    if (hold.state !== state || hold.amount !== amt('hold') || hold.settled !== amt('settle') || hold.released !== amt('release')) {
      v.push(`ref ${ref}: hold record ${JSON.stringify(hold)} disagrees with the ledger [${kinds}]`);
    }
  }
  return v;
}
