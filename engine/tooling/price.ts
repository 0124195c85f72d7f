// The one place the tools evaluate a route's `pricing` block: through the billing pricing
// compiler (engine/descriptors/pricing.ts), so `check`, `routes` and `diff` show exactly what the
// gateway will hold and settle. Prices are shown in USD and in credits.
import { compilePricing, PricingConfigError, type PricePlan } from '../descriptors/pricing.ts';
import { formatCredits, MILLI_PER_CREDIT } from '../util/money.ts';

export { PricingConfigError };
export type { PricePlan };

export interface PriceOptions {
  creditsPerUsd?: number;
  label?: string;
}

/** Compile a pricing block; throws PricingConfigError (with a pointer inside the block). */
export function compileRoutePricing(block: unknown, opts: PriceOptions = {}): PricePlan {
  return compilePricing(block, { creditsPerUsd: opts.creditsPerUsd, label: opts.label });
}

export interface ExamplePrice {
  milli: number;
  /** e.g. "0.34 USD (34.00 credits)" */
  text: string;
  /** e.g. "4 image x 0.085" */
  breakdown: string;
}

/** The hold for one validated request (what a client is charged at most). */
export async function priceOf(plan: PricePlan, request: unknown): Promise<ExamplePrice> {
  const q = await plan.quoteHold(request);
  return {
    milli: q.milli,
    text: formatPrice(q.milli, plan.creditsPerUsd),
    breakdown: `${q.quantity} ${plan.unit.replace(/_/g, ' ')} x ${q.unitPriceUsd} USD${q.tableKey !== undefined ? ` (${q.tableKey})` : ''}`,
  };
}

export function formatPrice(milli: number, creditsPerUsd: number): string {
  return `${usdOf(milli, creditsPerUsd)} USD (${formatCredits(milli)} credits)`;
}

/** milli-credits → USD with up to 5 decimals, trailing zeros trimmed to 2. */
export function usdOf(milli: number, creditsPerUsd: number): string {
  const perUsd = BigInt(MILLI_PER_CREDIT * creditsPerUsd);
  const scaled = (BigInt(milli) * 100000n + perUsd / 2n) / perUsd; // 1e-5 USD
  const whole = scaled / 100000n;
  let frac = (scaled % 100000n).toString().padStart(5, '0').replace(/0+$/, '');
  if (frac.length < 2) frac = frac.padEnd(2, '0');
  return `${whole}.${frac}`;
}
