// `gateway diff`: what changed between two sets of descriptors, for the people it affects.
//   breaking    API clients: a request that worked may now be refused, or a response differs
//               (routes removed, request-schema narrowing, result fields removed, status codes)
//   compatible  API clients: only accepts or returns more (routes added, new optional fields)
//   billing     the pricing block, and the price of each route example before and after
//   upstream    how the gateway talks to the provider (mappings, auth, polling, cancel, error maps)
//   docs        summaries, descriptions, examples
// Routes are matched by what clients call (method + path), not by route id.
import { isDeepStrictEqual } from 'node:util';
import type { Ajv2020 } from 'ajv/dist/2020.js';
import type { RouteSpec, VendorDescriptor } from '../descriptors/types.ts';
import { GatewayError } from '../errors/gateway-error.ts';
import { createAjv } from '../validation/ajv.ts';
import { inlineRefs, isObject, requestSchemaBase, type SchemaRegistry } from '../validation/json-schema.ts';
import { compileRoutePricing, priceOf } from './price.ts';
import { diffSchemas } from './schema-diff.ts';
import { routeValidator } from './validate.ts';
import { ruleCode } from '../validation/error-policy.ts';
import type { DescriptorSet } from './sources.ts';

export type ChangeClass = 'breaking' | 'compatible' | 'billing' | 'upstream' | 'docs';
export const CHANGE_CLASSES: readonly ChangeClass[] = ['breaking', 'compatible', 'billing', 'upstream', 'docs'];

export interface Change {
  class: ChangeClass;
  /** `POST /vendors/x/v1/...`, or `vendor x` for vendor-wide changes. */
  subject: string;
  /** The request field or descriptor key concerned, when there is one. */
  field?: string;
  message: string;
}

export interface RouteRow {
  change: 'added' | 'removed';
  method: string;
  path: string;
  kind: string;
  vendor: string;
  id: string;
}

export interface PriceRow {
  example: string;
  before?: string;
  after?: string;
  beforeMilli?: number;
  afterMilli?: number;
  /** "+100%", "-50%", "=" or "" when one side has no price. */
  delta: string;
}

export interface PriceTable {
  subject: string;
  before?: string;
  after?: string;
  rows: PriceRow[];
}

export interface DiffReport {
  before: string;
  after: string;
  routes: RouteRow[];
  changes: Change[];
  prices: PriceTable[];
  counts: Record<ChangeClass, number>;
  problems: string[];
}

export interface DiffOptions {
  creditsPerUsd?: number;
}

interface Located {
  vendor: string;
  route: RouteSpec;
  descriptor: VendorDescriptor;
  registry: SchemaRegistry;
}

export function routeKey(vendor: string, r: RouteSpec): string {
  const path = `/vendors/${vendor}${r.path}`;
  return r.kind === 'status' ? `GET ${path}/{task_id}` : `${r.method} ${path}`;
}

function index(set: DescriptorSet): Map<string, Located> {
  const out = new Map<string, Located>();
  for (const [vendor, v] of set.vendors) {
    for (const r of v.descriptor.routes ?? []) {
      if (isObject(r) && typeof r.path === 'string') out.set(routeKey(vendor, r), { vendor, route: r, descriptor: v.descriptor, registry: set.registry });
    }
  }
  return out;
}

export async function diffSets(before: DescriptorSet, after: DescriptorSet, opts: DiffOptions = {}): Promise<DiffReport> {
  const changes: Change[] = [];
  const routes: RouteRow[] = [];
  const prices: PriceTable[] = [];
  const a = index(before);
  const b = index(after);
  const pricer = new Pricer(opts.creditsPerUsd ?? 100);

  for (const [key, o] of a) {
    if (b.has(key)) continue;
    routes.push(row('removed', o));
    changes.push({ class: 'breaking', subject: key, message: `route removed${o.route.kind === 'async' ? ` (and GET ${key.split(' ')[1]}/{task_id})` : ''}: clients calling it get 404` });
  }
  for (const [key, n] of b) {
    if (a.has(key)) continue;
    routes.push(row('added', n));
    changes.push({ class: 'compatible', subject: key, message: `route added (${n.route.kind})` });
    if (n.route.pricing) {
      const t = await pricer.table(key, undefined, n);
      if (t) {
        prices.push(t);
        changes.push({ class: 'billing', subject: key, message: `new billed route: ${t.after ?? 'pricing does not compile'}` });
      }
    }
  }
  for (const [key, o] of a) {
    const n = b.get(key);
    if (!n) continue;
    await diffRoute(key, o, n, changes);
    if (o.route.pricing || n.route.pricing) {
      const t = await pricer.table(key, o, n);
      if (t && (t.rows.some((r) => r.delta !== '=') || !isDeepStrictEqual(o.route.pricing, n.route.pricing))) {
        prices.push(t);
        for (const r of t.rows) {
          if (r.delta === '=' ) continue;
          changes.push({ class: 'billing', subject: key, message: `example ${r.example}: ${r.before ?? 'not priced'} → ${r.after ?? 'not priced'}${r.delta ? ` (${r.delta})` : ''}` });
        }
      }
    }
  }
  for (const [vendor, v] of after.vendors) {
    const old = before.vendors.get(vendor);
    if (old) diffVendor(vendor, old.descriptor, v.descriptor, changes);
  }

  routes.sort((x, y) => x.change.localeCompare(y.change) || x.path.localeCompare(y.path) || x.method.localeCompare(y.method));
  // Breaking first; within a class, by subject; within a subject, in the order found (stable sort).
  changes.sort((x, y) => CHANGE_CLASSES.indexOf(x.class) - CHANGE_CLASSES.indexOf(y.class) || x.subject.localeCompare(y.subject));
  const counts = Object.fromEntries(CHANGE_CLASSES.map((c) => [c, changes.filter((x) => x.class === c).length])) as Record<ChangeClass, number>;
  return { before: before.label, after: after.label, routes, changes, prices, counts, problems: [...before.problems, ...after.problems] };
}

function row(change: 'added' | 'removed', l: Located): RouteRow {
  const r = l.route;
  return { change, method: r.kind === 'status' ? 'GET' : r.method, path: `/vendors/${l.vendor}${r.path}${r.kind === 'status' ? '/{task_id}' : ''}`, kind: r.kind, vendor: l.vendor, id: r.id };
}

function diffVendor(vendor: string, o: VendorDescriptor, n: VendorDescriptor, changes: Change[]): void {
  const subject = `vendor ${vendor}`;
  for (const l of leafDiff(o.upstream, n.upstream, 'upstream')) changes.push({ class: 'upstream', subject, field: l.path, message: l.text });
  for (const l of leafDiff(o.sandbox, n.sandbox, 'sandbox')) changes.push({ class: 'upstream', subject, field: l.path, message: `${l.text} (sandbox only)` });
  for (const k of ['title', 'description'] as const) {
    if (o[k] !== n[k]) changes.push({ class: 'docs', subject, field: k, message: 'changed' });
  }
  if (o.format !== n.format) changes.push({ class: 'upstream', subject, field: 'format', message: `descriptor format ${o.format} → ${n.format}` });
}

type Add = (cls: ChangeClass, message: string, field?: string) => void;

async function diffRoute(key: string, o: Located, n: Located, changes: Change[]): Promise<void> {
  const add = (cls: ChangeClass, message: string, field?: string) => changes.push({ class: cls, subject: key, ...(field ? { field } : {}), message });
  const ro = o.route;
  const rn = n.route;
  if (ro.kind !== rn.kind) add('breaking', `kind changed from ${ro.kind} to ${rn.kind}: the call style clients use changes`);
  const so = ro.status ?? (ro.kind === 'async' ? 202 : 200);
  const sn = rn.status ?? (rn.kind === 'async' ? 202 : 200);
  if (so !== sn) add('breaking', `success status changed from ${so} to ${sn}`);
  const ao = new Set(ro.aliases ?? []);
  const an = new Set(rn.aliases ?? []);
  for (const x of ao) if (!an.has(x)) add('breaking', `alias ${x} removed: clients calling it get 404`);
  for (const x of an) if (!ao.has(x)) add('compatible', `alias ${x} added`);
  if ((ro.model_name ?? ro.id) !== (rn.model_name ?? rn.id) && ro.kind === 'async') {
    add('breaking', `model_name in task webhooks changed from "${ro.model_name ?? ro.id}" to "${rn.model_name ?? rn.id}"`);
  }
  if ((ro.summary ?? '') !== (rn.summary ?? '')) add('docs', 'summary changed');
  if (ro.id !== rn.id) add('docs', `route id renamed from ${ro.id} to ${rn.id} (fixtures follow the id)`);

  // tasks_of (status routes): which tasks the GET can read.
  const to = new Set(ro.tasks_of ?? []);
  const tn = new Set(rn.tasks_of ?? []);
  for (const x of to) if (!tn.has(x)) add('breaking', `no longer reads tasks of ${x}: clients get 404 for them`);
  for (const x of tn) if (!to.has(x)) add('compatible', `now also reads tasks of ${x}`);
  diffRequest(o, n, add);
  diffResult(ro, rn, add);
  diffUpstream(ro, rn, add);
}

/** The request: its schema, rules, validation answers, body limit, examples. */
function diffRequest(o: Located, n: Located, add: Add): void {
  const ro = o.route;
  const rn = n.route;
  const qo = ro.request;
  const qn = rn.request;
  if (qo?.schema !== undefined || qn?.schema !== undefined) {
    const sa = qo ? inlineRefs(qo.schema, requestSchemaBase(o.vendor, ro.id), o.registry) : undefined;
    const sb = qn ? inlineRefs(qn.schema, requestSchemaBase(n.vendor, rn.id), n.registry) : undefined;
    for (const c of diffSchemas(sa, sb)) add(c.class, c.message, c.field);
  }
  // Old revisions are read without validation: tolerate entries of another shape.
  const rulesOf = (q: typeof qo) => new Map((Array.isArray(q?.rules) ? q.rules : []).filter(isObject).map((r) => [String(r.when ?? '').trim(), r]));
  const rulesO = rulesOf(qo);
  const rulesN = rulesOf(qn);
  for (const [when, r] of rulesN) {
    const prev = rulesO.get(when);
    if (!prev) add('breaking', `new rule refuses requests with ${ruleCode(r) ?? 'an error'}: "${r.message}"`, r.pointer);
    else {
      if (ruleCode(prev) !== ruleCode(r)) add('breaking', `rule "${r.message}" answers ${ruleCode(r)} instead of ${ruleCode(prev)}`, r.pointer);
      if (prev.each !== r.each) add('breaking', `rule "${r.message}" now applies to each of \`${r.each ?? '(the body)'}\``, r.pointer);
      if (prev.message !== r.message || prev.pointer !== r.pointer) add('docs', `rule message changed: "${prev.message}" → "${r.message}"`, r.pointer);
    }
  }
  for (const [when, r] of rulesO) if (!rulesN.has(when)) add('compatible', `rule removed: "${r.message}" no longer refuses requests`, r.pointer);
  const vo = qo?.validation_errors ?? 'problem';
  const vn = qn?.validation_errors ?? 'problem';
  if (vo !== vn) add('breaking', `400 answers change shape from ${vo === 'problem' ? 'an RFC 9457 problem' : 'task_info'} to ${vn === 'problem' ? 'an RFC 9457 problem' : 'task_info'}`);
  const mo = qo?.max_body_bytes;
  const mn = qn?.max_body_bytes;
  if (mo !== mn) {
    const lowered = (mn ?? Infinity) < (mo ?? Infinity);
    add(lowered ? 'breaking' : 'compatible', `request body limit ${lowered ? 'lowered' : 'raised'} from ${mo ?? 'the default'} to ${mn ?? 'the default'} bytes`);
  }
  if (!isDeepStrictEqual(qo?.examples, qn?.examples)) add('docs', 'request examples changed');

}

/** The response: result fields beside task_info. */
function diffResult(ro: RouteSpec, rn: RouteSpec, add: Add): void {
  const res0 = isObject(ro.result) ? (ro.result as Record<string, unknown>) : {};
  const res1 = isObject(rn.result) ? (rn.result as Record<string, unknown>) : {};
  for (const f of Object.keys(res0)) {
    if (!(f in res1)) add('breaking', 'result field removed from completed tasks', `result.${f}`);
    else if (!isDeepStrictEqual(res0[f], res1[f])) {
      const was = resultSource(res0[f]);
      const now = resultSource(res1[f]);
      if (was.from !== now.from) add('upstream', `mapping changed: \`${oneLine(was.from)}\` → \`${oneLine(now.from)}\``, `result.${f}`);
      if (!was.optional && now.optional) add('breaking', 'now optional: a completed task may leave it out', `result.${f}`);
      if (was.optional && !now.optional) add('upstream', 'now required: a completed answer without it fails the task with 3003', `result.${f}`);
    }
  }
  for (const f of Object.keys(res1)) if (!(f in res0)) add('compatible', 'result field added to completed tasks', `result.${f}`);

}

/** How the upstream is called, what a cancel does there, token prices, normalising, media checks, the safety net, pricing. */
function diffUpstream(ro: RouteSpec, rn: RouteSpec, add: Add): void {
  const qo = ro.request;
  const qn = rn.request;
  // An upstream cancel added or removed changes what a 4008 does at the provider: say so.
  const { cancel: co, ...upo } = ro.upstream ?? {};
  const { cancel: cn, ...upn } = rn.upstream ?? {};
  for (const l of leafDiff(upo, upn, 'upstream')) add('upstream', l.text, l.path);
  if (isObject(co) && isObject(cn)) for (const l of leafDiff(co, cn, 'upstream.cancel')) add('upstream', l.text, l.path);
  // No cancel declared (a revision older than the required policy) did what `local` does.
  else if (!isDeepStrictEqual(co ?? 'local', cn ?? 'local')) add(cn === 'none' ? 'breaking' : co === 'none' ? 'compatible' : 'upstream', `${cancelPolicy(co)} → ${cancelPolicy(cn)}`, 'upstream.cancel');
  // Proxy routes: token prices are billing; the rest is how the upstream is called.
  const { token_prices: tpo, ...pxo } = ro.proxy ?? ({} as NonNullable<RouteSpec['proxy']>);
  const { token_prices: tpn, ...pxn } = rn.proxy ?? ({} as NonNullable<RouteSpec['proxy']>);
  for (const l of leafDiff(pxo, pxn, 'proxy')) add('upstream', l.text, l.path);
  for (const l of leafDiff(tpo, tpn, 'proxy.token_prices')) add('billing', l.text, l.path);
  if (!isDeepStrictEqual(qo?.normalise, qn?.normalise)) {
    for (const l of leafDiff(qo?.normalise, qn?.normalise, 'request.normalise')) add(l.text.startsWith('removed') ? 'breaking' : 'compatible', `${l.text} (how values are normalised before validation)`, l.path);
  }
  if (!isDeepStrictEqual(qo?.media, qn?.media)) add('breaking', 'media checks changed (cannot prove compatible)', 'request.media');
  if (ro.max_execution_ms !== rn.max_execution_ms) add('upstream', `safety-net timeout changed from ${ro.max_execution_ms ?? 'the default'} to ${rn.max_execution_ms ?? 'the default'} ms`, 'max_execution_ms');
  for (const l of leafDiff(ro.pricing, rn.pricing, 'pricing')) add('billing', l.text, l.path);
}

// ---------------------------------------------------------------------------------------------

interface Leaf {
  path: string;
  text: string;
}

/** Changed leaves of two YAML values, as `path: before → after`. */
export function leafDiff(a: unknown, b: unknown, path: string): Leaf[] {
  if (isDeepStrictEqual(a, b)) return [];
  if (isObject(a) && isObject(b)) {
    const out: Leaf[] = [];
    for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) out.push(...leafDiff(a[k], b[k], `${path}.${k}`));
    return out;
  }
  // The report names the field beside the text (Change.field): the text does not repeat it.
  if (a === undefined) return [{ path, text: `added: ${fmt(b)}` }];
  if (b === undefined) return [{ path, text: `removed (was ${fmt(a)})` }];
  return [{ path, text: `${fmt(a)} → ${fmt(b)}` }];
}

/** A result field's expression and whether it is optional, whichever form it is written in. */
function resultSource(f: unknown): { from: string; optional: boolean } {
  if (isObject(f)) return { from: String(f.from ?? ''), optional: f.optional === true };
  return { from: String(f ?? ''), optional: false };
}

/** What a client's cancel (4009) and the safety net (4008) do upstream under a cancel policy. */
function cancelPolicy(c: unknown): string {
  if (isObject(c)) return `\`${String(c.method ?? 'POST')} ${String(c.path)}\` is sent to the provider`;
  if (c === 'none') return 'a client cancel is refused (409 / 2006)';
  if (c === 'local') return 'cancelled on the gateway only (the provider may still bill)';
  return 'nothing declared (cancelled on the gateway only)';
}

function fmt(v: unknown): string {
  const s = typeof v === 'string' ? oneLine(v) : JSON.stringify(v);
  return `\`${s.length > 120 ? `${s.slice(0, 117)}...` : s}\``;
}

function oneLine(s: string): string {
  return s.replace(/\s+/g, ' ').trim();
}

// ---------------------------------------------------------------------------------------------

/** Prices a route's examples on each side through the gateway's own validation and pricing. */
class Pricer {
  private readonly creditsPerUsd: number;
  private readonly ajv: Ajv2020 = createAjv({ useDefaults: true });
  constructor(creditsPerUsd: number) {
    this.creditsPerUsd = creditsPerUsd;
  }

  async table(subject: string, o: Located | undefined, n: Located | undefined): Promise<PriceTable | undefined> {
    const examples: unknown[] = [];
    for (const side of [o, n]) {
      for (const ex of side?.route.request?.examples ?? []) if (!examples.some((e) => isDeepStrictEqual(e, ex))) examples.push(ex);
    }
    const before = o ? this.side(o) : undefined;
    const after = n ? this.side(n) : undefined;
    const rows: PriceRow[] = [];
    for (const ex of examples) {
      const pb = before ? await before.price(ex) : undefined;
      const pa = after ? await after.price(ex) : undefined;
      let delta = '';
      if (pb?.milli !== undefined && pa?.milli !== undefined) {
        delta = pb.milli === pa.milli ? '=' : pb.milli === 0 ? 'from 0' : `${pa.milli > pb.milli ? '+' : ''}${(Math.round(((pa.milli - pb.milli) / pb.milli) * 1000) / 10).toString()}%`;
      } else if (o && n && pb?.text === pa?.text) delta = '=';
      else if (!o) delta = 'new route';
      rows.push({ example: exampleLabel(ex), before: pb?.text, after: pa?.text, beforeMilli: pb?.milli, afterMilli: pa?.milli, delta });
    }
    return { subject, before: before?.summary, after: after?.summary, rows };
  }

  private side(l: Located): { summary?: string; price(ex: unknown): Promise<{ text: string; milli?: number } | undefined> } {
    const r = l.route;
    let plan: ReturnType<typeof compileRoutePricing> | undefined;
    let summary: string | undefined;
    if (r.pricing) {
      try {
        plan = compileRoutePricing(r.pricing, { creditsPerUsd: this.creditsPerUsd });
        summary = plan.summary;
      } catch (err) {
        summary = `pricing does not compile: ${(err as Error).message}`;
      }
    }
    let validate: ((body: unknown) => Promise<Record<string, unknown>>) | undefined;
    if (r.request?.schema) {
      try {
        const schema = inlineRefs(r.request.schema, requestSchemaBase(l.vendor, r.id), l.registry) as object;
        validate = routeValidator(this.ajv, l.vendor, r, schema);
      } catch {
        validate = undefined;
      }
    }
    return {
      summary,
      price: async (ex) => {
        if (!plan) return r.pricing ? { text: 'n/a (pricing does not compile)' } : { text: 'free (no pricing)', milli: 0 };
        let request: unknown = structuredClone(ex);
        if (validate) {
          try {
            request = await validate(request);
          } catch (err) {
            return { text: `refused (${err instanceof GatewayError ? err.code : 'invalid'})` };
          }
        }
        try {
          const p = await priceOf(plan, request);
          return { text: `${p.text} = ${p.breakdown}`, milli: p.milli };
        } catch (err) {
          return { text: `n/a (${err instanceof GatewayError ? err.detail : (err as Error).message})` };
        }
      },
    };
  }
}

function exampleLabel(ex: unknown): string {
  const s = JSON.stringify(ex) ?? '';
  return s.length > 70 ? `${s.slice(0, 67)}...` : s;
}

/** Exit status for CI: 1 when a change of a gated class is present. */
export function gate(report: DiffReport, failOn: readonly ChangeClass[]): number {
  return failOn.some((c) => report.counts[c] > 0) ? 1 : 0;
}
