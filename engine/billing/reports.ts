// What the console reads of a wallet beyond its balance: the ledger filtered by kind and time
// (JSON pages and the CSV export), and usage per day × vendor × route computed from the ledger.
//
// The usage rule: spend is the `settle` entries (a task's settlement and the settle half of a
// chat charge; top-ups, adjustments, holds and releases are not spend). Each is counted on the
// UTC day of its `at`, under the vendor and route read from the entry itself:
//   - a chat charge's ref is `<vendor>/<route id>:<trace>`; its route is the chat model (the
//     note's first word), or the route id when the model is unknown;
//   - a task's settlement has the task id as ref and the note `<vendor>/<route id>: completed`.
// Anything else is counted under vendor and route `unknown`. So total_credits is exactly the sum
// of the settle entries of the range, and every entry is counted once.
import { GatewayError } from '../errors/gateway-error.ts';
import { exactCredits, type Milli } from '../util/money.ts';
import type { LedgerEntry, LedgerKind, LedgerLines } from './store.ts';

export const LEDGER_KINDS: readonly LedgerKind[] = ['topup', 'hold', 'settle', 'release', 'adjustment'];
/** Ledger entries one filtered JSON page reads at most (then it answers a cursor to go on). */
export const MAX_LEDGER_SCAN = 5000;
/** Rows of one CSV export at most. */
export const MAX_CSV_ROWS = 100_000;
export const MAX_USAGE_DAYS = 92;
const DAY_MS = 86_400_000;
const PAGE = 500;

export interface LedgerFilter {
  kind?: LedgerKind;
  /** Epoch ms, inclusive. */
  from?: number;
  /** Epoch ms, exclusive. */
  to?: number;
}

export interface UsageRow {
  day: string;
  vendor: string;
  route: string;
  credits: string;
  count: number;
}

export interface UsageReport {
  from: string;
  to: string;
  data: UsageRow[];
  total_credits: string;
  total_milli: Milli;
}

export class LedgerReports {
  private readonly store: LedgerLines;

  constructor(store: LedgerLines) {
    this.store = store;
  }

  /**
   * Up to `limit` entries matching `f`, newest first, from before the seq `beforeSeq`. Reads at
   * most MAX_LEDGER_SCAN entries: `next_cursor` continues after the last one read.
   */
  async page(tenantId: string, f: LedgerFilter, limit: number, beforeSeq?: number): Promise<{ entries: LedgerEntry[]; next_cursor: string | null }> {
    const out: LedgerEntry[] = [];
    let read = 0;
    let cursor: number | null = null;
    const done = await this.scan(tenantId, f, beforeSeq, (e) => {
      read++;
      cursor = e.seq;
      if (matches(e, f)) out.push(e);
      return out.length < limit && read < MAX_LEDGER_SCAN;
    });
    return { entries: out, next_cursor: done || cursor === null ? null : String(cursor) };
  }

  /** Every entry matching `f`, newest first (at most MAX_CSV_ROWS). */
  async all(tenantId: string, f: LedgerFilter): Promise<LedgerEntry[]> {
    const out: LedgerEntry[] = [];
    await this.scan(tenantId, f, undefined, (e) => {
      if (matches(e, f)) out.push(e);
      return out.length < MAX_CSV_ROWS;
    });
    return out;
  }

  /** Spend per day × vendor × route over the UTC days [fromDay, toDay] (YYYY-MM-DD). */
  async usage(tenantId: string, fromDay: string, toDay: string): Promise<UsageReport> {
    const from = Date.parse(`${fromDay}T00:00:00Z`);
    const to = Date.parse(`${toDay}T00:00:00Z`) + DAY_MS;
    const rows = new Map<string, { day: string; vendor: string; route: string; milli: number; count: number }>();
    let total = 0;
    await this.scan(tenantId, { kind: 'settle', from, to }, undefined, (e) => {
      if (!matches(e, { kind: 'settle', from, to })) return true;
      const { vendor, route } = attribute(e);
      const day = e.at.slice(0, 10);
      const k = `${day}\n${vendor}\n${route}`;
      let row = rows.get(k);
      if (!row) rows.set(k, (row = { day, vendor, route, milli: 0, count: 0 }));
      row.milli += e.amount;
      row.count++;
      total += e.amount;
      return true;
    });
    const data = [...rows.values()]
      .sort((a, b) => a.day.localeCompare(b.day) || a.vendor.localeCompare(b.vendor) || a.route.localeCompare(b.route))
      .map((r) => ({ day: r.day, vendor: r.vendor, route: r.route, credits: exactCredits(r.milli), count: r.count }));
    return { from: fromDay, to: toDay, data, total_credits: exactCredits(total), total_milli: total };
  }

  /**
   * Walks the ledger newest first from before `beforeSeq`, handing each entry newer than `f.from`
   * to `visit` until it answers false. True when the walk reached the end (nothing left to read).
   */
  private async scan(tenantId: string, f: LedgerFilter, beforeSeq: number | undefined, visit: (e: LedgerEntry) => boolean): Promise<boolean> {
    let before = beforeSeq;
    for (;;) {
      const page = await this.store.list(tenantId, PAGE, before);
      for (let i = 0; i < page.entries.length; i++) {
        const e = page.entries[i]!;
        if (f.from !== undefined && Date.parse(e.at) < f.from) return true; // the ledger is in time order
        if (!visit(e)) return i === page.entries.length - 1 && page.nextBeforeSeq === null;
      }
      if (page.nextBeforeSeq === null) return true;
      before = page.nextBeforeSeq;
    }
  }
}

function matches(e: LedgerEntry, f: LedgerFilter): boolean {
  if (f.kind !== undefined && e.kind !== f.kind) return false;
  const at = Date.parse(e.at);
  if (f.from !== undefined && at < f.from) return false;
  if (f.to !== undefined && at >= f.to) return false;
  return true;
}

/** The vendor and route a spend entry is counted under (the rule at the top of this file). */
export function attribute(e: Pick<LedgerEntry, 'ref' | 'note'>): { vendor: string; route: string } {
  const charge = /^([^/:\s]+)\/([^:\s]+):/.exec(e.ref);
  if (charge) {
    const model = e.note.split(' ')[0];
    return { vendor: charge[1]!, route: model && model !== 'undefined' ? model : charge[2]! };
  }
  const task = /^([^/:\s]+)\/([^:\s]+): /.exec(e.note);
  if (task) return { vendor: task[1]!, route: task[2]! };
  return { vendor: 'unknown', route: 'unknown' };
}

/** `YYYY-MM-DD` or an RFC 3339 date-time → epoch ms; a date is its day's start (or, `end`, the next day's). */
export function instant(text: string, pointer: string, end = false): number {
  const day = /^\d{4}-\d{2}-\d{2}$/.test(text);
  const ms = Date.parse(day ? `${text}T00:00:00Z` : text);
  if (Number.isNaN(ms) || (!day && !/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/i.test(text))) {
    throw new GatewayError('parameterValidationFailed', `${pointer.split('/').pop()} must be a date (YYYY-MM-DD) or an RFC 3339 date-time.`, { errors: [{ pointer, detail: 'not a date or date-time' }] });
  }
  return day && end ? ms + DAY_MS : ms;
}

/** The usage range: UTC dates, inclusive, at most MAX_USAGE_DAYS; by default the last 30 days to today. */
export function usageRange(from: string | undefined, to: string | undefined, now: number): { from: string; to: string } {
  const date = (s: string, pointer: string) => {
    if (!/^\d{4}-\d{2}-\d{2}$/.test(s) || Number.isNaN(Date.parse(`${s}T00:00:00Z`)) || new Date(`${s}T00:00:00Z`).toISOString().slice(0, 10) !== s) {
      throw new GatewayError('parameterValidationFailed', `${pointer.split('/').pop()} must be a UTC date (YYYY-MM-DD).`, { errors: [{ pointer, detail: 'not a date' }] });
    }
    return Date.parse(`${s}T00:00:00Z`);
  };
  const toMs = to === undefined ? Date.parse(`${new Date(now).toISOString().slice(0, 10)}T00:00:00Z`) : date(to, '/query/to');
  const fromMs = from === undefined ? toMs - 29 * DAY_MS : date(from, '/query/from');
  if (fromMs > toMs) throw new GatewayError('invalidParameterValue', 'from must not be after to.', { errors: [{ pointer: '/query/from', detail: 'after to' }] });
  if ((toMs - fromMs) / DAY_MS + 1 > MAX_USAGE_DAYS) {
    throw new GatewayError('invalidParameterValue', `The range is at most ${MAX_USAGE_DAYS} days.`, { errors: [{ pointer: '/query/from', detail: `more than ${MAX_USAGE_DAYS} days before to` }] });
  }
  const iso = (ms: number) => new Date(ms).toISOString().slice(0, 10);
  return { from: iso(fromMs), to: iso(toMs) };
}
