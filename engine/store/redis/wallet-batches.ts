// A tenant's chat wallet steps, admissions and settlements alike, run as groups (./batch.ts) of
// ONE script in the tenant's slot (./wallet-scripts.ts, STEPS): every step asked while the
// tenant's previous run is in flight goes in the next one, its closes first, then its admissions.
// An admission counts the rate windows (./rate.ts: fields of the wallet hash), reads the day's
// spend (./limits.ts: wallet fields too) or takes a hold; a close settles or releases a hold,
// adds the chat's spend to its day and appends the ledger lines. Each call is handled in order
// exactly as alone (duplicates, insufficient funds, the up-to rule, the rate counts): each part
// reads the wallet hash (balance, open holds, rate counters, day totals) once and writes it once,
// its ledger lines in one RPUSH. So a group of any size costs what one call of each kind does
// (docs/redis-layout.md, *A sync chat's commands*, counts them), and its gateway cost (a
// command, a promise, a socket write, a reply) is one run's. The rate adapter, the limits adapter
// and the wallet adapter of one client and prefix share one WalletBatches (WalletBatches.of), so
// a request's three admission steps, asked in the same turn, go in one run, with the closes of
// the chats that finished meanwhile. Asked in a gate (gate(): LimitsStore.gate), they are judged
// together: the script withholds the hold of a request its counts or its day's spend refuse.
import type { RateCount } from '../../limits/store.ts';
import { KeyedBatches } from './batch.ts';
import { Keys, type RedisClient } from './keys.ts';
import { cutoff } from './wallet-lib.ts';
import { STEPS } from './wallet-scripts.ts';

/** One call's outcome: its status, the hold record ('' when none), the wallet after it (b, h, th, as, la, seq). */
export interface WalletStep {
  status: string;
  item: string;
  wallet: string[];
}

/** A hold: ref, amount, note, at, entry id, flags (1: up to, 2: a new ref; HoldOptions). */
export type HoldArgs = [string, string, string, string, string, string];
/** A close: ref, actual ('' = release), note, at, id1, id2, spend day ('' = none). */
export type CloseArgs = [string, string, string, string, string, string, string];

/**
 * One admission step: a request's rate counts (delta 1) or their giving back (-1), a day's spend
 * read (`above`: the spend past which its request is refused, when gated), or a hold.
 */
type AdmitCall = { kind: 'r'; counts: readonly RateCount[]; delta: 1 | -1 } | { kind: 's'; day: string; above: number | undefined } | { kind: 'h'; args: HoldArgs };
/** A close with the closed-hold retention of the wallet adapter that asked (now ms, ttl ms). */
interface CloseCall {
  kind: 'c';
  args: CloseArgs;
  forget: [string, string];
}
/** `gate`: the gate (gate()) the step was asked in, 0 for none: one request's steps share it. */
type Step = (AdmitCall | CloseCall) & { gate: number };

/** One WalletBatches per client and prefix: the adapters that share them share their groups. */
const shared = new WeakMap<RedisClient, Map<string, WalletBatches>>();

export class WalletBatches {
  private readonly steps: KeyedBatches<Step, number[] | number | WalletStep>;
  /** The gate open now (gate()): its tenant and number (0: none). */
  private gateTenant = '';
  private gateId = 0;
  private gates = 0;

  /** The WalletBatches of `client` and `prefix` (the wallet, limits and rate adapters of one store share it). */
  static of(client: RedisClient, prefix: string): WalletBatches {
    let byPrefix = shared.get(client);
    if (!byPrefix) shared.set(client, (byPrefix = new Map()));
    let b = byPrefix.get(prefix);
    if (!b) byPrefix.set(prefix, (b = new WalletBatches(client, new Keys(prefix))));
    return b;
  }

  private constructor(client: RedisClient, keys: Keys) {
    const k = (tenantId: string, ...names: string[]) => names.map((n) => keys.tenant(tenantId) + n);
    // A request's steps are up to four calls (its rate counts, its day's spend, its hold; its
    // close): a group of 256 calls holds those of 64 requests. A gate's steps go in one group.
    this.steps = new KeyedBatches(async (tenantId, calls) => {
      // The close section (now, ttl, cutoff, then seven per close), then ADMIT's three sections:
      // the rate counts, the spend reads, the holds; the answer likewise.
      const closes: string[] = [];
      const rates: string[] = [];
      const days: string[] = [];
      const holds: string[] = [];
      let admits = 0;
      // The group's gates, numbered 1, 2, … in order (a gate's steps are consecutive): `g` is
      // the current step's number as text, '' outside a gate.
      let gates = 0;
      let open = 0;
      let g = '';
      for (const c of calls) {
        if (c.gate !== open) {
          open = c.gate;
          g = open ? String(++gates) : '';
        }
        if (c.kind === 'c') {
          if (!closes.length) {
            const [now, ttl] = c.forget;
            closes.push(now, ttl, keptFrom(Number(now)));
          }
          for (const a of c.args) closes.push(a);
          continue;
        }
        admits++;
        if (c.kind === 'r') pushRates(rates, c.counts, c.delta, g);
        else if (c.kind === 's') days.push(c.day, g && c.above !== undefined ? `${g}|${c.above}` : '');
        else {
          for (const a of c.args) holds.push(a);
          holds.push(g);
        }
      }
      const args = [String(closes.length)].concat(closes);
      if (admits) args.push(String(rates.length / 5), ...rates, String(days.length / 2), ...days, ...holds);
      const out = ((await STEPS.run(client, k(tenantId, 'wallet', 'ledger', 'holds', 'open', 'closed', 'spend'), args)) as string).split('\n');
      // The closes' lines first (th, as, la, then five per close), then the admissions'.
      const a0 = closes.length ? 3 + 5 * ((closes.length - 3) / 7) : 0;
      let c0 = 3;
      let r = a0 + 3;
      let s = r;
      for (const c of calls) if (c.kind === 'r') s += c.counts.length;
      let h = s + days.length / 2;
      const all: (number[] | number | WalletStep)[] = [];
      for (const c of calls) {
        if (c.kind === 'c') {
          all.push(step(out, 0, c0));
          c0 += 5;
        } else if (c.kind === 'r') {
          const counts = new Array<number>(c.counts.length);
          for (let j = 0; j < counts.length; j++) counts[j] = Number(out[r++]);
          all.push(counts);
        } else if (c.kind === 's') all.push(Number(out[s++]));
        else {
          all.push(step(out, a0, h));
          h += 5;
        }
      }
      return all;
    }, 4 * 64, (a, b) => a.gate !== 0 && a.gate === b.gate);
  }

  /**
   * Runs `run`, whose steps of `tenantId` (asked synchronously in it: one request's rate counts,
   * day's spend and hold) share a gate (LimitsStore.gate): they go in one run, whose ADMIT part
   * judges the counts (by RateCount.limit) and the spend (by `above`) before the hold, and
   * withholds the hold ('withheld') of a request they refuse. A step asked later (after an await)
   * is outside the gate: judged alone, as any.
   */
  gate(tenantId: string, run: () => void): void {
    const tenant = this.gateTenant;
    const id = this.gateId;
    this.gateTenant = tenantId;
    this.gateId = ++this.gates;
    try {
      run();
    } finally {
      this.gateTenant = tenant;
      this.gateId = id;
    }
  }

  private gateOf(tenantId: string): number {
    return this.gateId !== 0 && tenantId === this.gateTenant ? this.gateId : 0;
  }

  /** Count (1) or give back (-1) one request in each of the tenant's counters (a scope's windows in one field `w:<name>:<id>`): the counts after it. */
  rate(tenantId: string, counts: readonly RateCount[], delta: 1 | -1): Promise<number[]> {
    return this.steps.call(tenantId, { kind: 'r', counts, delta, gate: delta === 1 ? this.gateOf(tenantId) : 0 }) as Promise<number[]>;
  }

  /** The tenant's spend of `day` (milli); `above`: in a gate, the spend past which its request is refused. */
  spent(tenantId: string, day: string, above?: number): Promise<number> {
    return this.steps.call(tenantId, { kind: 's', day, above, gate: this.gateOf(tenantId) }) as Promise<number>;
  }

  /** A hold; in a gate, 'withheld' when its request's counts or spend refuse it. */
  hold(tenantId: string, args: HoldArgs): Promise<WalletStep> {
    return this.steps.call(tenantId, { kind: 'h', args, gate: this.gateOf(tenantId) }) as Promise<WalletStep>;
  }

  /** `forget`: now ms and the closed-hold ttl ms of the asking wallet adapter. */
  close(tenantId: string, args: CloseArgs, forget: [string, string]): Promise<WalletStep> {
    return this.steps.call(tenantId, { kind: 'c', args, forget, gate: 0 }) as Promise<WalletStep>;
  }
}

/**
 * A request's counts into the rate section (five arguments a field: name, three windows, gate).
 * Its counts, consecutive per scope in window order, share their scope's field (its name made once
 * per field, not per count); in a gate (`g`) a field's gate is g and its windows' limits, gathered
 * as the field's counts are read and written as the next field starts and after the last.
 */
function pushRates(rates: string[], counts: readonly RateCount[], delta: 1 | -1, g: string): void {
  let head = '';
  let id = '';
  let at = -1;
  let last = 3;
  // The current field's window limits, slot by slot ('' for a window not counted).
  let l0 = '';
  let l1 = '';
  let l2 = '';
  for (const r of counts) {
    const w = windowOf(r.name);
    if (w.head !== head || r.id !== id || w.slot <= last) {
      if (g && at >= 0) rates[at + 4] = gateText(g, l0, l1, l2);
      l0 = l1 = l2 = '';
      head = w.head;
      id = r.id;
      at = rates.length;
      rates.push(head + id, '', '', '', '');
    }
    rates[at + 1 + w.slot] = windowText(w.slot, delta * r.n);
    if (g) {
      const l = r.limit === undefined ? '' : String(r.limit);
      if (w.slot === 0) l0 = l;
      else if (w.slot === 1) l1 = l;
      else l2 = l;
    }
    last = w.slot;
  }
  if (g && at >= 0) rates[at + 4] = gateText(g, l0, l1, l2);
}

/** A gated rate field's gate argument: its gate number and its three windows' limits (ADMIT_RUN). */
function gateText(g: string, l0: string, l1: string, l2: string): string {
  return `${g}|${l0}|${l1}|${l2}`;
}

/** A rate counter's wallet field name up to its id (`w:<name>:`) and slot (WINDOWS_LIB): rl_key_per_minute → w:rl_key: and 1; another name has a field of its own (slot 0). */
const windows = new Map<string, { head: string; slot: number }>();
const SLOT: Record<string, number> = { per_second: 0, per_minute: 1, per_day: 2 };
function windowOf(name: string): { head: string; slot: number } {
  let w = windows.get(name);
  if (!w) {
    const m = /^(.*)_(per_second|per_minute|per_day)$/.exec(name);
    windows.set(name, (w = m ? { head: `w:${m[1]!}:`, slot: SLOT[m[2]!]! } : { head: `w:${name}:`, slot: 0 }));
  }
  return w;
}

// A window number as text, kept per slot: every request of the same second, minute or day sends
// the same number, so it is formatted once per window, not nine times a request.
const texts: { n: number; text: string }[] = [{ n: NaN, text: '' }, { n: NaN, text: '' }, { n: NaN, text: '' }];
function windowText(slot: number, n: number): string {
  const t = texts[slot]!;
  if (t.n !== n) {
    t.n = n;
    t.text = String(n);
  }
  return t.text;
}

/** The oldest spend day kept when writing the UTC day of `ms` (wallet-lib's cutoff), made once a day, not once a group. */
let kept = { day: NaN, from: '' };
function keptFrom(ms: number): string {
  const day = Math.floor(ms / 86_400_000);
  if (day !== kept.day) kept = { day, from: cutoff(new Date(day * 86_400_000).toISOString().slice(0, 10)) };
  return kept.from;
}

/** The call whose values start at line i of a group's answer (lines p to p + 2: the wallet's th, as, la after its part). */
function step(out: string[], p: number, i: number): WalletStep {
  return { status: out[i]!, item: out[i + 1]!, wallet: [out[i + 2]!, out[i + 3]!, out[p]!, out[p + 1]!, out[p + 2]!, out[i + 4]!] };
}
