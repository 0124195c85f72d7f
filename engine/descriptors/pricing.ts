// A route's `pricing` block (format: schemas/pricing.schema.json) compiled, once, into a PricePlan.
//
//   hold   = unit_price(request)            x quantity(request)          -> milli-credits
//   settle = unit_price(request, $result)   x settle_quantity(request, $result, $upstream)
//            clamped to the hold: a task is never billed more than was held for it (the hold is
//            the maximum the client agreed to; an upstream reporting more is our loss, and the
//            descriptor's quantity expression is what must be fixed).
//
// Each product is converted exactly (BigInt) with one half-up rounding to the milli-credit
// (see engine/util/money.ts). Expressions are JSONata, compiled here once; a quantity must
// evaluate to a non-negative safe integer — anything else (2.5, -1, "3", missing) is a
// configuration error, reported at request time as GatewayError 4005, never silently rounded.
// This is descriptor compilation; charging the quoted price is billing's (engine/billing/).
import { compileExpr, ExprError, type CompiledExpr } from '../util/expr.ts';
import { GatewayError } from '../errors/gateway-error.ts';
import { decimalToString, parseDecimal, usdToMilli, MoneyError, type Decimal, type Milli } from '../util/money.ts';

export interface PricingTable {
  by: string;
  table: Record<string, string>;
}

/** The YAML block, as parsed. */
export interface PricingBlock {
  unit: string;
  unit_price: string | PricingTable;
  quantity?: string | number;
  settle_quantity?: string | number;
  estimated?: boolean;
  note?: string;
}

export interface PricingOptions {
  /** billing.credits_per_usd (positive integer, default 100). */
  creditsPerUsd?: number;
  /** Names the route in error messages, e.g. "POST /vendors/provider_a/v1/model_a/generation". */
  label?: string;
}

/** One evaluated price, for logs and the ledger note. */
export interface PriceQuote {
  milli: Milli;
  quantity: number;
  unitPriceUsd: string;
  /** The table key selected by `unit_price.by`, when the price is a table. */
  tableKey?: string;
}

export interface PricePlan {
  readonly unit: string;
  readonly estimated: boolean;
  readonly note: string | undefined;
  /** Human summary, e.g. "0.085 USD per image" or "480p 0.050, 720p 0.100, 1080p 0.200 USD per second". */
  readonly summary: string;
  readonly creditsPerUsd: number;
  /** The amount to hold when the task is created: the most it can cost. */
  hold(request: unknown): Promise<Milli>;
  /** The amount to settle on success; never more than hold(request). */
  settle(request: unknown, result?: unknown, upstream?: unknown): Promise<Milli>;
  quoteHold(request: unknown): Promise<PriceQuote>;
  quoteSettle(request: unknown, result?: unknown, upstream?: unknown): Promise<PriceQuote>;
}

/** A pricing block that cannot be compiled; `pointer` is relative to the pricing block. */
export class PricingConfigError extends Error {
  readonly pointer: string;
  constructor(pointer: string, message: string) {
    super(message);
    this.name = 'PricingConfigError';
    this.pointer = pointer;
  }
}

/** A unit price with its USD text (written once, when the descriptor is compiled) and, from a table, its key. */
interface UnitPrice {
  price: Decimal;
  usd: string;
  key?: string;
}

/** A compiled unit price: one price, or a table and the expression that picks its key. */
type Price = { fixed: UnitPrice } | { by: CompiledExpr; table: Map<string, UnitPrice> };

/** A compiled quantity: a constant, or an expression whose answer must be a non-negative safe integer. */
type Quantity = { constant: number } | { expr: CompiledExpr; name: string };

/** What a hold's expressions see: the request alone. */
const NO_BINDINGS: Record<string, unknown> = Object.freeze({});

export const DEFAULT_CREDITS_PER_USD = 100;

export function compilePricing(block: unknown, opts: PricingOptions = {}): PricePlan {
  const creditsPerUsd = opts.creditsPerUsd ?? DEFAULT_CREDITS_PER_USD;
  if (!Number.isSafeInteger(creditsPerUsd) || creditsPerUsd <= 0) {
    throw new PricingConfigError('', `credits_per_usd must be a positive integer, got ${creditsPerUsd}`);
  }
  const label = opts.label ?? 'this route';
  if (!isObject(block)) throw new PricingConfigError('', 'pricing must be an object');
  const known = new Set(['unit', 'unit_price', 'quantity', 'settle_quantity', 'estimated', 'note']);
  for (const k of Object.keys(block)) if (!known.has(k)) throw new PricingConfigError(`/${k}`, `unknown pricing property "${k}"`);

  const unit = block.unit;
  if (typeof unit !== 'string' || !/^[a-z][a-z0-9_]{0,31}$/.test(unit)) {
    throw new PricingConfigError('/unit', 'unit must be a lower-case label such as "image" or "second"');
  }
  const estimated = block.estimated ?? false;
  if (typeof estimated !== 'boolean') throw new PricingConfigError('/estimated', 'estimated must be a boolean');
  const note = block.note;
  if (note !== undefined && typeof note !== 'string') throw new PricingConfigError('/note', 'note must be a string');

  const { price: unitPrice, summary: priceSummary } = compilePrice(block.unit_price);
  const holdQty = compileQuantity(block.quantity ?? 1, '/quantity');
  const settleQty = block.settle_quantity === undefined ? holdQty : compileQuantity(block.settle_quantity, '/settle_quantity');

  const rates: Rates = { unitPrice, creditsPerUsd, label };
  const quote = (request: unknown, qty: Quantity, bindings: Record<string, unknown>) => quoteOf(rates, request, qty, bindings);

  const quoteHold = (request: unknown) => quote(request, holdQty, NO_BINDINGS);
  const quoteSettle = async (request: unknown, result?: unknown, upstream?: unknown): Promise<PriceQuote> => {
    const held = await quoteHold(request);
    const settled = await quote(request, settleQty, { result: result ?? {}, upstream: upstream ?? {} });
    return settled.milli > held.milli ? { ...settled, milli: held.milli } : settled;
  };

  return Object.freeze({
    unit,
    estimated,
    note,
    summary: `${priceSummary} USD per ${unit.replace(/_/g, ' ')}${estimated ? ' (estimated)' : ''}`,
    creditsPerUsd,
    quoteHold,
    quoteSettle,
    hold: async (request: unknown) => (await quoteHold(request)).milli,
    settle: async (request: unknown, result?: unknown, upstream?: unknown) => (await quoteSettle(request, result, upstream)).milli,
  });
}

/** What a quote reads of its plan. */
interface Rates {
  unitPrice: Price;
  creditsPerUsd: number;
  label: string;
}

// One async function per quote, its expressions awaited in it: the price and the quantity were
// an async function each, around an async evaluate, under a Promise.all. That was 2.1 KB of
// promises and suspended frames per quote, three quotes per task life (the hold, and the
// settlement's two), for expressions answered at once (docs/performance.md, "Large objects and
// what a task life promotes").
async function quoteOf({ unitPrice, creditsPerUsd, label }: Rates, request: unknown, qty: Quantity, bindings: Record<string, unknown>): Promise<PriceQuote> {
  let picked: UnitPrice;
  if ('fixed' in unitPrice) picked = unitPrice.fixed;
  else {
    let key: unknown;
    try {
      key = await unitPrice.by.evaluate(request, bindings);
    } catch (err) {
      throw expressionFailed(label, unitPrice.by, err);
    }
    if (typeof key !== 'string' && typeof key !== 'number') {
      throw configError(label, `unit_price.by \`${unitPrice.by.source}\` returned ${describe(key)}, not a table key`);
    }
    const found = unitPrice.table.get(String(key));
    if (!found) throw configError(label, `unit_price.by returned "${key}", which is not in the price table (${[...unitPrice.table.keys()].join(', ')})`);
    picked = found;
  }
  let quantity: unknown;
  if ('constant' in qty) quantity = qty.constant;
  else {
    try {
      quantity = await qty.expr.evaluate(request, bindings);
    } catch (err) {
      throw expressionFailed(label, qty.expr, err);
    }
    if (typeof quantity !== 'number' || !Number.isSafeInteger(quantity) || quantity < 0) {
      throw configError(label, `${qty.name} \`${qty.expr.source}\` returned ${describe(quantity)}, not a non-negative integer`);
    }
  }
  const q = quantity as number;
  let milli: Milli;
  try {
    milli = usdToMilli(picked.price, creditsPerUsd, q);
  } catch (err) {
    throw configError(label, `the price ${picked.usd} x ${q} is out of range`, err);
  }
  return picked.key === undefined ? { milli, quantity: q, unitPriceUsd: picked.usd } : { milli, quantity: q, unitPriceUsd: picked.usd, tableKey: picked.key };
}

function compilePrice(spec: unknown): { price: Price; summary: string } {
  if (typeof spec === 'string') {
    const price = parseUsd(spec, '/unit_price');
    return { price: { fixed: Object.freeze({ price, usd: decimalToString(price) }) }, summary: spec };
  }
  if (!isObject(spec)) {
    throw new PricingConfigError('/unit_price', 'unit_price must be a quoted USD decimal string ("0.085") or {by, table}');
  }
  for (const k of Object.keys(spec)) {
    if (k !== 'by' && k !== 'table') throw new PricingConfigError(`/unit_price/${k}`, `unknown property "${k}"`);
  }
  if (typeof spec.by !== 'string' || spec.by.trim() === '') throw new PricingConfigError('/unit_price/by', 'by must be an expression');
  const by = compile(spec.by, '/unit_price/by');
  if (!isObject(spec.table) || Object.keys(spec.table).length === 0) {
    throw new PricingConfigError('/unit_price/table', 'table must map keys to USD decimal strings');
  }
  const table = new Map<string, UnitPrice>();
  for (const [k, v] of Object.entries(spec.table)) {
    const price = parseUsd(v, `/unit_price/table/${escapePointer(k)}`);
    table.set(k, Object.freeze({ price, usd: decimalToString(price), key: k }));
  }
  return { price: { by, table }, summary: [...table].map(([k, v]) => `${k} ${v.usd}`).join(', ') };
}

function compileQuantity(spec: unknown, pointer: string): Quantity {
  if (typeof spec === 'number') {
    if (!Number.isSafeInteger(spec) || spec < 0) throw new PricingConfigError(pointer, `a constant quantity must be a non-negative integer, got ${spec}`);
    return { constant: spec };
  }
  if (typeof spec !== 'string' || spec.trim() === '') {
    throw new PricingConfigError(pointer, 'quantity must be a non-negative integer or an expression');
  }
  return { expr: compile(spec, pointer), name: pointer.slice(1) };
}

function compile(source: string, pointer: string): CompiledExpr {
  try {
    return compileExpr(source);
  } catch (err) {
    const pos = err instanceof ExprError && err.position !== undefined ? ` at character ${err.position}` : '';
    throw new PricingConfigError(pointer, `expression does not parse${pos}: ${(err as Error).message}`);
  }
}

function expressionFailed(label: string, expr: CompiledExpr, cause: unknown): GatewayError {
  return configError(label, `expression \`${expr.source}\` failed`, cause);
}

function parseUsd(v: unknown, pointer: string): Decimal {
  if (typeof v !== 'string') {
    throw new PricingConfigError(pointer, `a USD price must be a quoted decimal string (e.g. "0.085"), got ${describe(v)}`);
  }
  try {
    const d = parseDecimal(v);
    if (d.units < 0n) throw new MoneyError('negative');
    return d;
  } catch {
    throw new PricingConfigError(pointer, `"${v}" is not a non-negative USD decimal`);
  }
}

function configError(label: string, why: string, cause?: unknown): GatewayError {
  return new GatewayError('configurationError', `The pricing of ${label} is misconfigured: ${why}.`, cause === undefined ? {} : { cause });
}

function describe(v: unknown): string {
  if (v === undefined) return 'nothing';
  if (typeof v === 'string') return `the string "${v}"`;
  return JSON.stringify(v) ?? String(v);
}

const escapePointer = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1');

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
