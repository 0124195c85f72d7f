// GET /v1/ledger's filters (`type`, `from`, `to`) and its CSV export (`format=csv`), over
// engine/billing/reports.ts. Without any of them the ledger answers as it always has.
import type { Request, Response } from 'express';
import { GatewayError } from '../errors/gateway-error.ts';
import { instant, LEDGER_KINDS, type LedgerFilter, type LedgerReports } from '../billing/reports.ts';
import type { LedgerEntry, LedgerKind } from '../billing/store.ts';
import { exactCredits } from '../util/money.ts';
import { pageLimit, query } from './query.ts';

const CSV_COLUMNS = ['id', 'seq', 'at', 'kind', 'amount', 'amount_milli', 'ref', 'note'] as const;

/** True when the request used a filter or the CSV format and was answered here. */
export async function filteredLedger(req: Request, res: Response, tenantId: string, reports: LedgerReports, view: (e: LedgerEntry) => Record<string, unknown>): Promise<boolean> {
  const format = query(req, 'format');
  const type = query(req, 'type');
  const from = query(req, 'from');
  const to = query(req, 'to');
  if (format === undefined && type === undefined && from === undefined && to === undefined) return false;
  if (format !== undefined && format !== 'json' && format !== 'csv') {
    throw new GatewayError('invalidParameterValue', 'format must be json or csv.', { errors: [{ pointer: '/query/format', detail: 'unknown format' }] });
  }
  const f: LedgerFilter = {};
  if (type !== undefined) {
    if (!LEDGER_KINDS.includes(type as LedgerKind)) throw new GatewayError('invalidParameterValue', `type must be one of ${LEDGER_KINDS.join(', ')}.`, { errors: [{ pointer: '/query/type', detail: 'unknown entry type' }] });
    f.kind = type as LedgerKind;
  }
  // Dates are whole UTC days, both ends included; date-times are instants, `to` included.
  if (from !== undefined) f.from = instant(from, '/query/from');
  if (to !== undefined) f.to = /^\d{4}-\d{2}-\d{2}$/.test(to) ? instant(to, '/query/to', true) : instant(to, '/query/to') + 1;
  if (format === 'csv') {
    const rows = (await reports.all(tenantId, f)).map((e) => [e.id, String(e.seq), e.at, e.kind, exactCredits(e.amount), String(e.amount), e.ref, e.note].map(csvField).join(','));
    res.set('Content-Type', 'text/csv; charset=utf-8');
    res.set('Content-Disposition', 'attachment; filename="ledger.csv"');
    res.send([CSV_COLUMNS.join(','), ...rows].join('\r\n') + '\r\n');
    return true;
  }
  const n = pageLimit(req, 50, 200);
  const cursor = query(req, 'cursor');
  if (cursor !== undefined && cursor !== '' && !/^[1-9]\d{0,15}$/.test(cursor)) {
    throw new GatewayError('invalidParameterValue', 'The cursor is not valid.', { errors: [{ pointer: '/query/cursor', detail: 'not a cursor from a previous page' }] });
  }
  const page = await reports.page(tenantId, f, n, cursor ? Number(cursor) : undefined);
  res.json({ data: page.entries.map(view), next_cursor: page.next_cursor });
  return true;
}

/**
 * RFC 4180 quoting; a text cell a spreadsheet would run as a formula (=, +, -, @, tab, CR)
 * gets a leading apostrophe: notes and refs are typed by people.
 */
function csvField(v: string): string {
  const safe = /^[=+\-@\t\r]/.test(v) && !/^-?\d+(\.\d+)?$/.test(v) ? `'${v}` : v;
  return /[",\r\n]/.test(safe) ? `"${safe.replaceAll('"', '""')}"` : safe;
}
