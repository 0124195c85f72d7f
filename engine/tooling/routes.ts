// `gateway routes`: the route table the descriptors generate — every method and path a client
// can call, its kind, vendor, success status and price — as the gateway will serve it.
import type { RouteSpec, VendorDescriptor } from '../descriptors/types.ts';
import { createAjv } from '../validation/ajv.ts';
import { compileRoutePricing, formatPrice, priceOf } from './price.ts';
import { routeValidator } from './validate.ts';
import { servedAliases } from './checks.ts';

export interface RouteTableRow {
  method: string;
  path: string;
  kind: string;
  vendor: string;
  route: string;
  status: number;
  price: string;
  /** The route this row is the task-status read or alias of. */
  of?: string;
}

export async function routeTable(descriptors: readonly VendorDescriptor[], creditsPerUsd = 100): Promise<RouteTableRow[]> {
  const ajv = createAjv({ useDefaults: true });
  const rows: RouteTableRow[] = [];
  for (const d of descriptors) {
    for (const r of d.routes) {
      const path = `/vendors/${d.vendor}${r.path}`;
      const base = { vendor: d.vendor, route: r.id };
      if (r.kind === 'status') {
        const of = `tasks of ${(r.tasks_of ?? []).join(', ')}`;
        rows.push({ ...base, method: 'GET', path: `${path}/{task_id}`, kind: 'status', status: 200, price: '—', of });
        rows.push({ ...base, method: 'POST', path: `${path}/{task_id}/cancel`, kind: 'cancel', status: 200, price: '—', of });
        continue;
      }
      const price = await priceSummary(d.vendor, r, creditsPerUsd, ajv);
      const status = r.status ?? (r.kind === 'async' ? 202 : 200);
      for (const p of [path, ...servedAliases(r)]) {
        rows.push({ ...base, method: r.method, path: p, kind: r.kind, status, price, ...(p === path ? {} : { of: `alias of ${path}` }) });
        if (r.kind === 'async') {
          rows.push({ ...base, method: 'GET', path: `${p}/{task_id}`, kind: 'task', status: 200, price: '—', of: `tasks of ${r.id}` });
          rows.push({ ...base, method: 'POST', path: `${p}/{task_id}/cancel`, kind: 'cancel', status: r.upstream?.cancel === 'none' ? 409 : 200, price: '—', of: `tasks of ${r.id}; ${cancelShown(r)}` });
        }
      }
    }
  }
  return rows;
}

/** What the route's cancel policy (upstream.cancel) does, in a table cell. */
function cancelShown(r: RouteSpec): string {
  const c = r.upstream?.cancel;
  if (typeof c === 'object') return `cancel sent upstream: ${c.method ?? 'POST'} ${c.path}`;
  if (c === 'none') return 'not cancellable (2006): the task runs on';
  return 'cancelled locally: the provider may still bill';
}

/** The pricing summary, and the range of the route's example prices when it has examples. */
async function priceSummary(vendor: string, r: RouteSpec, creditsPerUsd: number, ajv: ReturnType<typeof createAjv>): Promise<string> {
  const tp = r.proxy?.token_prices;
  if (tp) {
    const models = Object.entries(tp.models).map(([m, p]) => `${m} ${p.input}/${p.output}`);
    const shown = models.length > 3 ? `${models.slice(0, 3).join(', ')} and ${models.length - 3} more` : models.join(', ');
    return `by tokens, USD per 1M input/output: ${shown}${tp.default ? `; other models ${tp.default.input}/${tp.default.output}` : ''}`;
  }
  if (!r.pricing) return r.proxy?.list ? 'free' : 'not billed';
  let plan;
  try {
    plan = compileRoutePricing(r.pricing, { creditsPerUsd });
  } catch (err) {
    return `pricing does not compile: ${(err as Error).message}`;
  }
  const prices: number[] = [];
  try {
    const validate = routeValidator(ajv, vendor, r);
    for (const ex of r.request?.examples ?? []) {
      const req = validate ? await validate(structuredClone(ex)) : ex;
      prices.push((await priceOf(plan, req)).milli);
    }
  } catch {
    /* `gateway check` says why; the table still shows the summary */
  }
  if (!prices.length) return plan.summary;
  const lo = Math.min(...prices);
  const hi = Math.max(...prices);
  const range = lo === hi ? formatPrice(lo, creditsPerUsd) : `${formatPrice(lo, creditsPerUsd)} to ${formatPrice(hi, creditsPerUsd)}`;
  return `${plan.summary}; examples: ${range}`;
}

export function renderRouteTable(rows: readonly RouteTableRow[], format: 'text' | 'markdown'): string {
  const head = ['METHOD', 'PATH', 'KIND', 'VENDOR', 'ROUTE', 'STATUS', 'PRICE'];
  const cells = rows.map((r) => [r.method, r.path, r.kind, r.vendor, r.route, String(r.status), r.of ? `${r.price === '—' ? '' : `${r.price}; `}${r.of}` : r.price]);
  if (format === 'markdown') {
    const esc = (s: string) => s.replace(/\|/g, '\\|');
    return [`| ${head.map((h) => h[0] + h.slice(1).toLowerCase()).join(' | ')} |`, `|${head.map(() => '---').join('|')}|`, ...cells.map((c) => `| ${c.map((x, i) => (i === 1 ? `\`${x}\`` : esc(x))).join(' | ')} |`)].join('\n') + '\n';
  }
  const widths = head.map((h, i) => Math.max(h.length, ...cells.map((c) => (i === head.length - 1 ? 0 : c[i]!.length))));
  const line = (c: string[]) => c.map((x, i) => (i === c.length - 1 ? x : x.padEnd(widths[i]!))).join('  ');
  return [line(head), ...cells.map(line)].join('\n') + '\n';
}
